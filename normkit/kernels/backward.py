"""Normalization backward kernel family: RMSNorm and LayerNorm, with bias, residual, weight offset.

Math (docs/design.md#kernel-family). h is the normalised input: x, or residual_out = x + residual
when the forward added a residual. μ is its row mean (0 for RMSNorm), rstd = 1/√(Σ(h − μ)²/N + eps),
ĥ = (h − μ)·rstd, and g = dy·(w + weight_offset) (g = dy without HAS_WEIGHT). Per row, in
COMPUTE_DTYPE::

    c₁ = Σ(g·ĥ) / N            c₂ = Σg / N   (LayerNorm; 0 for RMSNorm)
    dh = rstd · (g − ĥ·c₁ − c₂)
    dx = dh (+ dresidual_out)  (HAS_DRESIDUAL: the gradient arriving on the forward's residual_out)

For RMSNorm that is dx = rstd·g − h·rstd³·Σ(g·h)/N. Residual path: h = x + residual, so
dresidual = dx = dh (the autograd layer casts it to each input's dtype). Over all rows::

    dweight = Σ_rows dy·ĥ          dbias = Σ_rows dy

with ĥ rounded to X_HAT_DTYPE in dweight, as the forward rounded it before the scale (the
rounding passes the gradient through unchanged, so dh is as above).

Gated (HAS_GATE; the forward's y = u·silu(gate), u = ĥ·(w + weight_offset) rounded to U_DTYPE, no
bias): the norm receives dy·silu(gate) in place of dy — in g, dweight and everything above — and::

    dgate = dy·u·silu'(gate)     silu'(g) = σ(g)·(1 + g·(1 − σ(g)))

stored in DGATE's dtype, with u recomputed from ĥ as the forward rounded it. Split rows take no
gate (the launcher never picks them with one). With RECOMPUTE_STATS, μ and
rstd are recomputed from h in the pass that reduces Σ(g·h) and Σg (the LeetGPU #142 contract:
nothing saved from the forward); otherwise the saved mean and rstd are loaded.

Grid (docs/design.md#finisher). Persistent grid (G, HEADS): program (p, k) owns the rows of head k
(every row when HEADS = 1) in row blocks p, p + G, p + 2G, … It keeps its share of dweight and
dbias in COMPUTE_DTYPE and writes it as row p of DW_PARTIAL / DB_PARTIAL, shaped (G, HEADS·N),
even when it owned no rows. `sum_partials_kernel` then sums the G rows in a fixed order: no
atomics, so every gradient is bitwise reproducible.

Tiling. ONE_TILE keeps h, dy, w and the partials of a whole row in registers. Otherwise each
row block is walked twice in BLOCK_N-wide tiles (reductions, then dh: the second read mostly hits
L2) and the partial rows live in DW_PARTIAL / DB_PARTIAL themselves, read-modified-written tile
by tile by their one owner program (a barrier orders the re-read; still no atomics).

Split rows (SPLIT > 1, with ONE_TILE): a row too wide for one program's registers is cut into
column parts that exchange their row sums (backward_split.py, docs/design.md#split-rows).

Prefetch (PREFETCH, with ONE_TILE, split or not). A persistent program's loop otherwise leaves
nothing in flight while it reduces and computes a row block. With PREFETCH it holds the next row
block's h and dy (as stored, e.g. bf16) in registers and issues their loads before this block's
math, so HBM is always being read: a software pipeline of depth two, by hand (10-20 % faster than
the loop as written, H200). The last iteration's "next" rows are past the end and their loads are
masked off. With whole rows the weight is loaded once per program (KEEP_W), except for the widest
rows without prefetch, where keeping it live spilled.

Staged loads (ASYNC_STAGES = K ≥ 2, with ONE_TILE, instead of PREFETCH; whole rows or split
parts). The row loop carries num_stages = K, so Triton's software pipeliner issues the loads of
the row blocks K − 1 iterations ahead as cp.async copies into shared memory (K − 1 row blocks in
flight a program, not held in registers), and each iteration reads its tile from there. Triton
pipelines a loop's plain loads only when the loop itself carries num_stages: the launch option
alone leaves them as written (ptxas: no cp.async). config/backward.py says where it wins (2-byte
rows of 1024 … 8192). The pipeliner declines a loop with a loop nested in it, which a poll loop
is; split parts wait in inline PTX instead (ptx.await_word: each lane spins on its own tagged
words), so their row loop pipelines too. Each wait is an L2 round trip in a row block's critical
path, so everything a part awaits is awaited together, all loads in flight: LayerNorm's Σ(g·h)
and Σg, and, recomputing, the statistics with them.

Joined sums (JOIN_SUMS, with ONE_TILE). Σ(g·h) and Σg are two row reductions, each a tree of
shuffles and, across warps, shared-memory round trips behind barriers. tl.join stacks the two
tiles on a trailing axis of 2, so one tl.sum reduces both and each barrier carries two values
(ptxas, sm_90, LayerNorm 1 × 8192 on 16 warps: 14 → 11 bar.sync a row block). LayerNorm only:
RMSNorm needs no Σg at all (compute_dh), so its whole-row tiles reduce Σ(g·h) alone (10 → 7 at
1 × 8192). config/backward.py says where joining is faster; not on several-row bf16 tiles.
"""

import triton
import triton.language as tl

from .backward_split import split_rows
from .backward_tiles import (block_weight, compute_dh, dgate_term, dweight_term, gate_dy, load_row_block,
                             row_loop_start, store_dh, take_rows)
from .convert import upcast
from .ptx import launch_dependents
from .stats import inverse_std, merge_tile_stats


@triton.jit
def _load_column_tile(X, DY, W, GATE, start, cols, row_mask, x_rows, dy_rows, gate_rows, w_row, N, stride_x_col,
                      stride_dy_col, stride_gate_col, weight_offset, HAS_WEIGHT: tl.constexpr,
                      COMPUTE_DTYPE: tl.constexpr, BF16_PAIRS: tl.constexpr = False, HAS_GATE: tl.constexpr = False):
    """(c, mask, h, dy, g = dy·(w + weight_offset), w, dy_in, gate, σ(gate)) for the column tile
    c = start + cols of a row block (column tiles: both passes over the row), upcast; masked
    elements are 0. With HAS_GATE dy is the norm's gradient dy_in·silu(gate) (`gate_dy`); without,
    w (0 without a weight), dy_in, gate and σ are placeholders."""
    c = start + cols
    col_mask = c < N
    mask = row_mask[:, None] & col_mask[None, :]
    h = upcast(tl.load(X + (x_rows + c[None, :] * stride_x_col), mask=mask, other=0.0), COMPUTE_DTYPE, BF16_PAIRS)
    dy = upcast(tl.load(DY + (dy_rows + c[None, :] * stride_dy_col), mask=mask, other=0.0), COMPUTE_DTYPE,
                BF16_PAIRS)
    dy_in, gate, sigmoid = dy, 0.0, 0.0
    if HAS_GATE:
        gate = upcast(tl.load(GATE + (gate_rows + c[None, :] * stride_gate_col), mask=mask, other=0.0), COMPUTE_DTYPE,
                      BF16_PAIRS)
        dy, sigmoid = gate_dy(dy_in, gate)
    g = dy
    w = 0.0
    if HAS_WEIGHT:
        w = upcast(tl.load(W + (w_row + c), mask=col_mask, other=0.0), COMPUTE_DTYPE, BF16_PAIRS) + weight_offset
        g = dy * w[None, :]
    return c, mask, h, dy, g, w, dy_in, gate, sigmoid


@triton.jit
def _accumulate_partial(PARTIAL, offs, mask, contribution):
    """PARTIAL[offs] += contribution, by the row's one owner program."""
    tl.store(PARTIAL + offs, tl.load(PARTIAL + offs, mask=mask, other=0.0) + contribution, mask=mask)


@triton.jit
def norm_bwd_kernel(
    X, W, DY, DRESIDUAL_OUT, MEAN, RSTD, GATE,  # inputs: h, dy, dresidual_out, gate (M, N) strided; w (HEADS, N)
    DX, DW_PARTIAL, DB_PARTIAL, DGATE,  # outputs: dx, dgate (M, N) row-major; partials (G, HEADS·N)
    XCHG,  # SPLIT > 1: tagged row sums and counts, int64 (G·HEADS, RING, 8·SPLIT·BLOCK_M + 8), zeroed
    M, N, HEADS,
    stride_x_row, stride_x_col, stride_dy_row, stride_dy_col,
    stride_dres_row, stride_dres_col, stride_gate_row, stride_gate_col, stride_dx_row, stride_dgate_row,
    eps: tl.float64, weight_offset: tl.float64,  # doubles: see forward.py's docstring
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ONE_TILE: tl.constexpr,
    IS_RMS_NORM: tl.constexpr,
    HAS_WEIGHT: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    HAS_DRESIDUAL: tl.constexpr,
    RECOMPUTE_STATS: tl.constexpr,
    COMPUTE_DTYPE: tl.constexpr,
    X_HAT_DTYPE: tl.constexpr,
    SPLIT: tl.constexpr = 1,  # power of two ≥ the number of column parts of a row (1: no split)
    PREFETCH: tl.constexpr = False,  # ONE_TILE: load the next row block's h and dy before this one's math
    LAUNCH_DEPENDENTS: tl.constexpr = False,  # sm_90+: let the finisher's programs launch early (reduce.py)
    JOIN_SUMS: tl.constexpr = False,  # ONE_TILE: Σ(g·h) and Σg as one reduction of a trailing axis of 2
    ASYNC_STAGES: tl.constexpr = None,  # ONE_TILE without PREFETCH: the row loop's loads staged in shared memory
    RELOAD: tl.constexpr = False,  # SPLIT > 1: the previous block's h and dy read again after the exchange
    JOIN_STATS: tl.constexpr = False,  # SPLIT > 1, RECOMPUTE_STATS: Σh / Σh² in the tree of Σ(g·h), Σg
    EVEN_COLS: tl.constexpr = False,  # ONE_TILE: every column of the tile (or part) is < N: no column mask
    BF16_PAIRS: tl.constexpr = False,  # GPU: bf16 upcasts a register's pair at a time (convert.upcast)
    HAS_GATE: tl.constexpr = False,  # the forward's y = u·silu(gate): dy·silu(gate) into the norm, and dgate
    U_DTYPE: tl.constexpr = None,  # HAS_GATE: where the forward rounded u = ĥ·(w + weight_offset)
    PTX: tl.constexpr = False,  # NVIDIA GPUs: the split parts' spin wait and rstd load in inline PTX (ptx.py)
):
    """One program's rows of the backward (the module docstring's math, docs/design.md#kernel-family)::

        dx = rstd·(g − ĥ·c₁ − c₂) (+ dresidual_out)    g = dy·(w + weight_offset), c₁ = Σ(g·ĥ)/N, c₂ = Σg/N
        dresidual = dx                                  (residual path: h = x + residual)

    and its share of dweight = Σ dy·ĥ and dbias = Σ dy, stored as its row of DW_PARTIAL / DB_PARTIAL
    for `sum_partials_kernel` to finish. Gated: dy·silu(gate) in place of dy, and dgate = dy·u·silu'(gate)."""
    tl.static_assert(not (HAS_GATE and SPLIT > 1), "split rows take no gate")
    EARLY_TERMS: tl.constexpr = HAS_GATE and ONE_TILE and IS_RMS_NORM and not RECOMPUTE_STATS
    if LAUNCH_DEPENDENTS:
        launch_dependents()
    eps = tl.full([], eps, COMPUTE_DTYPE)  # float32 kernels round them as before, float64 ones keep them
    weight_offset = tl.full([], weight_offset, COMPUTE_DTYPE)
    if SPLIT > 1:  # a row's columns across a group of programs (docs/design.md#split-rows)
        split_rows(X, W, DY, DRESIDUAL_OUT, MEAN, RSTD, DX, DW_PARTIAL, DB_PARTIAL, XCHG, M, N, HEADS,
                   stride_x_row, stride_x_col, stride_dy_row, stride_dy_col, stride_dres_row, stride_dres_col,
                   stride_dx_row, eps, weight_offset, BLOCK_M, BLOCK_N, IS_RMS_NORM, HAS_WEIGHT, HAS_BIAS,
                   HAS_DRESIDUAL, RECOMPUTE_STATS, COMPUTE_DTYPE, X_HAT_DTYPE, SPLIT, PREFETCH, ASYNC_STAGES,
                   RELOAD, JOIN_STATS, EVEN_COLS, BF16_PAIRS, PTX)
        return
    KEEP_W: tl.constexpr = PREFETCH or BLOCK_N <= 8192
    pid = tl.program_id(0)
    head = tl.program_id(1)
    num_programs = tl.num_programs(0)
    head_rows = M // HEADS  # rows of one head (all rows when HEADS = 1)
    num_row_blocks = tl.cdiv(head_rows, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    w_row = head.to(tl.int64) * N  # offset of this head's weight row
    partial_offset = (pid.to(tl.int64) * HEADS + head) * N  # this program's row of the partials

    next_gate = 0  # PREFETCH: the next row block's gate, loaded ahead as h and dy are
    if ONE_TILE:
        col_mask, dw_acc, db_acc, w, next_h, next_dy = row_loop_start(
            X, DY, W, pid, head, HEADS, head_rows, cols, w_row, N, weight_offset, stride_x_row, stride_x_col,
            stride_dy_row, stride_dy_col, BLOCK_M, BLOCK_N, HAS_WEIGHT, KEEP_W, PREFETCH, EVEN_COLS, COMPUTE_DTYPE,
            BF16_PAIRS)
        if HAS_GATE and PREFETCH:
            next_gate = load_row_block(GATE, pid, head, HEADS, head_rows, cols, col_mask, stride_gate_row,
                                       stride_gate_col, BLOCK_M)
    elif HAS_WEIGHT or HAS_BIAS:
        zeros = tl.zeros([BLOCK_N], dtype=COMPUTE_DTYPE)
        for start in tl.range(0, N, BLOCK_N):
            c = start + cols
            if HAS_WEIGHT:
                tl.store(DW_PARTIAL + partial_offset + c, zeros, mask=c < N)
            if HAS_BIAS:
                tl.store(DB_PARTIAL + partial_offset + c, zeros, mask=c < N)
        tl.debug_barrier()

    for row_block in tl.range(pid, num_row_blocks, num_programs, num_stages=ASYNC_STAGES):
        local = row_block * BLOCK_M + tl.arange(0, BLOCK_M)
        row_mask = local < head_rows
        rows64 = local.to(tl.int64) * HEADS + head  # int64 offsets: tensors above 2**31 elements
        x_rows = rows64[:, None] * stride_x_row
        dy_rows = rows64[:, None] * stride_dy_row
        dres_rows = rows64[:, None] * stride_dres_row
        dx_rows = rows64[:, None] * stride_dx_row
        gate_rows = rows64[:, None] * stride_gate_row
        dgate_rows = rows64[:, None] * stride_dgate_row

        # ---- row reductions: Σ(g·h), Σg and, with RECOMPUTE_STATS, the statistics of h
        if not RECOMPUTE_STATS:  # issued first: independent of the tile, not held behind the reductions
            rstd = tl.load(RSTD + rows64, mask=row_mask, other=0.0).to(COMPUTE_DTYPE)
            if not IS_RMS_NORM:
                mean = tl.load(MEAN + rows64, mask=row_mask, other=0.0).to(COMPUTE_DTYPE)
        if ONE_TILE:
            mask = row_mask[:, None] & col_mask[None, :]
            # with PREFETCH this block's tile arrived during the previous block's math; start the next
            h, dy, next_h, next_dy = take_rows(X, DY, next_h, next_dy, row_block, num_programs, head, HEADS,
                                               head_rows, cols, col_mask, stride_x_row, stride_x_col,
                                               stride_dy_row, stride_dy_col, BLOCK_M, PREFETCH)
            h = upcast(h, COMPUTE_DTYPE, BF16_PAIRS)
            dy = upcast(dy, COMPUTE_DTYPE, BF16_PAIRS)
            if HAS_GATE:  # the norm's gradient is dy·silu(gate); dy_in stays for dgate
                if PREFETCH:
                    gate = next_gate
                    next_gate = load_row_block(GATE, row_block + num_programs, head, HEADS, head_rows, cols,
                                               col_mask, stride_gate_row, stride_gate_col, BLOCK_M)
                else:
                    gate = load_row_block(GATE, row_block, head, HEADS, head_rows, cols, col_mask, stride_gate_row,
                                          stride_gate_col, BLOCK_M)
                gate = upcast(gate, COMPUTE_DTYPE, BF16_PAIRS)
                dy_in = dy
                dy, sigmoid = gate_dy(dy_in, gate)
            g = dy
            if HAS_WEIGHT:
                w_block = block_weight(w, W, w_row, cols, col_mask, weight_offset, HAS_WEIGHT, KEEP_W,
                                       COMPUTE_DTYPE, BF16_PAIRS)
                g = dy * w_block[None, :]
            if EARLY_TERMS:  # ĥ from the saved rstd: dgate and dweight's term before the sums, so gate, dy_in
                # and dy die before the row reductions, the same bits (ptxas, sm_90, bf16 gated picks: 1 × 16384
                # spilled 4636 → 2684 B a thread, 1 × 8192 1012 → 652, 8 × 128 848 → 616; not yet timed)
                x_hat_early = h * tl.where(row_mask, rstd, 0.0)[:, None]
                if HAS_WEIGHT:
                    dw_acc += tl.sum(dweight_term(dy, x_hat_early, X_HAT_DTYPE, COMPUTE_DTYPE, BF16_PAIRS), axis=0)
                tl.store(DGATE + dgate_rows + cols[None, :],
                         dgate_term(dy_in, gate, sigmoid, x_hat_early, w_block if HAS_WEIGHT else 0.0, HAS_WEIGHT,
                                    X_HAT_DTYPE, U_DTYPE, COMPUTE_DTYPE, BF16_PAIRS), mask=mask)
            if JOIN_SUMS and not IS_RMS_NORM:  # one tree, one set of cross-warp barriers, for both sums
                sum_gh, sum_g = tl.split(tl.sum(tl.join(g * h, g), axis=1))
            else:
                sum_gh = tl.sum(g * h, axis=1)
                sum_g = tl.sum(g, axis=1)
            if RECOMPUTE_STATS:
                if IS_RMS_NORM:
                    mean = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE)
                    var = tl.sum(h * h, axis=1) / N
                else:
                    mean = tl.sum(h, axis=1) / N
                    centered = tl.where(mask, h - mean[:, None], 0.0)
                    var = tl.sum(centered * centered, axis=1) / N
        else:
            # g·h and g summed element-wise across the tiles, reduced once after the loop.
            # (A row sum added to a loop-carried total each tile is what Triton's
            # OptimizeThreadLocality pass rewrites into this; it asserts when the total has more
            # than one use, e.g. LayerNorm without weight and dy's dtype ≠ x's: PassManager::run failed.)
            acc_gh = tl.zeros([BLOCK_M, BLOCK_N], dtype=COMPUTE_DTYPE)
            acc_g = tl.zeros([BLOCK_M, BLOCK_N], dtype=COMPUTE_DTYPE)
            if RECOMPUTE_STATS:  # (saved statistics were loaded above)
                mean = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE)
            m2 = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE)
            for start in tl.range(0, N, BLOCK_N):
                c, mask, h, dy, g, _, _, _, _ = _load_column_tile(
                    X, DY, W, GATE, start, cols, row_mask, x_rows, dy_rows, gate_rows, w_row, N, stride_x_col,
                    stride_dy_col, stride_gate_col, weight_offset, HAS_WEIGHT, COMPUTE_DTYPE, BF16_PAIRS, HAS_GATE)
                acc_gh += g * h
                acc_g += g
                if RECOMPUTE_STATS:
                    mean, m2 = merge_tile_stats(h, mask, start, N, mean, m2, IS_RMS_NORM, BLOCK_M, BLOCK_N,
                                                COMPUTE_DTYPE)
            sum_gh = tl.sum(acc_gh, axis=1)
            sum_g = tl.sum(acc_g, axis=1)
            var = m2 / N

        if RECOMPUTE_STATS:
            rstd = inverse_std(var, eps, COMPUTE_DTYPE)
        elif IS_RMS_NORM:
            mean = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE)
        # Rows past the end contribute nothing, even when eps = 0 makes 1/sqrt(0) = inf.
        rstd = tl.where(row_mask, rstd, 0.0)

        # ---- dh = rstd·(g − ĥ·c₁ − c₂) (+ dresidual_out), and the parameter partials
        if ONE_TILE:
            # Σg is dropped for RMSNorm where the tile keeps the weight; the 1 × 16384 tile (which
            # spills either way) spilled 180 B without it against 152 B with it, and ran
            # 4096×16384 in 177 µs against 142 (H200): there RMSNorm computes Σg as before.
            x_hat, dh = compute_dh(h, g, mean, rstd, sum_gh, sum_g, N, IS_RMS_NORM, KEEP_W)
            store_dh(DX, DRESIDUAL_OUT, dx_rows + cols[None, :], dres_rows + cols[None, :] * stride_dres_col,
                     dh, mask, HAS_DRESIDUAL, COMPUTE_DTYPE, BF16_PAIRS)
            if HAS_WEIGHT and not EARLY_TERMS:
                dw_acc += tl.sum(dweight_term(dy, x_hat, X_HAT_DTYPE, COMPUTE_DTYPE, BF16_PAIRS), axis=0)
            if HAS_BIAS:
                db_acc += tl.sum(dy, axis=0)
            if HAS_GATE and not EARLY_TERMS:
                tl.store(DGATE + dgate_rows + cols[None, :],
                         dgate_term(dy_in, gate, sigmoid, x_hat, w_block if HAS_WEIGHT else 0.0, HAS_WEIGHT,
                                    X_HAT_DTYPE, U_DTYPE, COMPUTE_DTYPE, BF16_PAIRS), mask=mask)
        else:
            for start in tl.range(0, N, BLOCK_N):
                c, mask, h, dy, g, w_tile, dy_in, gate, sigmoid = _load_column_tile(
                    X, DY, W, GATE, start, cols, row_mask, x_rows, dy_rows, gate_rows, w_row, N, stride_x_col,
                    stride_dy_col, stride_gate_col, weight_offset, HAS_WEIGHT, COMPUTE_DTYPE, BF16_PAIRS, HAS_GATE)
                x_hat, dh = compute_dh(h, g, mean, rstd, sum_gh, sum_g, N, IS_RMS_NORM)
                store_dh(DX, DRESIDUAL_OUT, dx_rows + c[None, :], dres_rows + c[None, :] * stride_dres_col,
                         dh, mask, HAS_DRESIDUAL, COMPUTE_DTYPE, BF16_PAIRS)
                if HAS_WEIGHT:
                    term = dweight_term(dy, x_hat, X_HAT_DTYPE, COMPUTE_DTYPE, BF16_PAIRS)
                    _accumulate_partial(DW_PARTIAL, partial_offset + c, c < N, tl.sum(term, axis=0))
                if HAS_BIAS:
                    _accumulate_partial(DB_PARTIAL, partial_offset + c, c < N, tl.sum(dy, axis=0))
                if HAS_GATE:
                    tl.store(DGATE + dgate_rows + c[None, :],
                             dgate_term(dy_in, gate, sigmoid, x_hat, w_tile, HAS_WEIGHT, X_HAT_DTYPE, U_DTYPE,
                                        COMPUTE_DTYPE, BF16_PAIRS), mask=mask)
            tl.debug_barrier()

    if ONE_TILE:
        if HAS_WEIGHT:
            tl.store(DW_PARTIAL + partial_offset + cols, dw_acc, mask=col_mask)
        if HAS_BIAS:
            tl.store(DB_PARTIAL + partial_offset + cols, db_acc, mask=col_mask)
