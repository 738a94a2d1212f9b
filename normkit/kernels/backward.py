"""Normalization backward kernel family: RMSNorm and LayerNorm, with bias, residual, weight offset.

h is the normalised input (x, or residual_out = x + residual when there was a residual), with
mean μ (0 for RMSNorm), rstd, ĥ = (h − μ)·rstd and g = dy·(w + weight_offset) (g = dy without
HAS_WEIGHT). Per row::

    c₁ = Σ(g·ĥ) / N        c₂ = Σg / N  (LayerNorm only; 0 for RMSNorm)
    dh = rstd · (g − ĥ·c₁ − c₂)  (+ dresidual_out, HAS_DRESIDUAL: the gradient on residual_out)

which for RMSNorm is dx = rstd·(g − x̂·mean(g·x̂)) = rstd·g − x·rstd³·Σ(g·x)/N. Over all rows::

    dweight = Σ_rows dy·ĥ          dbias = Σ_rows dy

(with ĥ rounded to X_HAT_DTYPE in dweight, as the forward scaled it; the rounding passes the
gradient through unchanged, so dh is as above).

dh is both dx and dresidual (h = x + residual). With RECOMPUTE_STATS the statistics are
recomputed from h in the same pass that reduces Σ(g·h) and Σg (the LeetGPU #142 contract:
nothing saved from the forward); otherwise the saved mean/rstd are loaded.

Persistent grid (G, HEADS). Program (p, k) owns the rows of head k (every row when HEADS = 1)
in row blocks p, p + G, p + 2G, … It keeps its share of dweight and dbias in COMPUTE_DTYPE and
writes it as row p of DW_PARTIAL / DB_PARTIAL, shaped (G, HEADS·N) — even when it owned no rows.
`sum_partials_kernel` then sums the G rows in a fixed order: no atomics, so every gradient is
bitwise reproducible.

Tiling. ONE_TILE keeps h, dy, w and the partials of a whole row in registers. Otherwise each
row block is walked twice in BLOCK_N-wide tiles (reductions, then dh: the second read mostly hits
L2) and the partial rows live in DW_PARTIAL / DB_PARTIAL themselves, read-modified-written tile
by tile by their one owner program (a barrier orders the re-read; still no atomics).

Split rows (SPLIT > 1, with ONE_TILE). A row too wide for one program's registers is cut into P =
cdiv(N, BLOCK_N) column parts, each held in registers by its own program: program p is part p % P of
group p // P, and a group's P programs walk the same row blocks in lockstep. Each part publishes its
per-row partial sums (Σ(g·h), Σg and, recomputing, Σh² or its local mean and M2) to XCHG as 64-bit
words tagged with the round (relaxed atomic exchanges, no fence); each lane of a part spins until
its partners' words carry the round's tag (stats.await_row_sums), then the P partial sums are
reduced in a fixed order (LayerNorm statistics with Chan's merge): x and dy are read once, as with
ONE_TILE, and the result is bitwise reproducible.
The exchange is pipelined one block deep: iteration t publishes block t, then waits for block
t − 1 (published a whole iteration earlier, so the wait rarely spins) and finishes it — the parts
hold two row blocks (three with PREFETCH) and one extra iteration finishes the last block. XCHG
is a ring of 4 slots (`stats.publish_row_sums` says why 4 is safe). All programs must be
resident at once (the launcher keeps the grid within one program per SM); Triton's interpreter
runs programs one after another, so it cannot run this path.

Prefetch (PREFETCH, with ONE_TILE, split or not). A persistent program's loop otherwise leaves
nothing in flight while it reduces and computes a row block. With PREFETCH it holds the next row
block's h and dy (as stored, e.g. bf16) in registers and issues their loads before this block's
math, so HBM is always being read: a software pipeline of depth two, by hand (BENCHMARKS.md
design change 5: 10-20 % faster than the loop as written). The last iteration's "next" rows are
past the end and their loads are masked off. With whole rows the weight is loaded once per
program (KEEP_W), except for the widest rows without prefetch, where keeping it live spilled.

Staged loads (ASYNC_STAGES = K ≥ 2, with ONE_TILE, instead of PREFETCH; whole rows or split
parts). The row loop carries num_stages = K, so Triton's software pipeliner issues the loads of the
row blocks K − 1 iterations ahead as cp.async copies into shared memory (K − 1 row blocks in flight a program,
without holding them in registers), and each iteration reads its tile from there. Triton
pipelines a loop's plain loads only when the loop itself carries num_stages: the launch option
alone leaves them as written (ptxas: no cp.async), which is why change 5's comparison never ran
a pipelined loop. config._BWD_ASYNC_2_BYTE says where it wins (2-byte rows of 1024 … 8192). The
pipeliner declines a loop with a loop nested in it, which a poll loop is; split parts wait in
inline PTX instead (stats._await_word: each lane spins on its own tagged words), so their row
loop pipelines too (config._staged_split: design change 30; since session 35 every part, staged
or prefetching, saved statistics or recomputed, forward too). Each wait is an L2 round trip in a
row block's critical path: everything a part awaits is awaited together, all loads in flight —
LayerNorm's Σ(g·h) and Σg (design change 32), and recomputing, with the statistics (session 35).

Joined sums (JOIN_SUMS, with ONE_TILE). Σ(g·h) and Σg are two row reductions, each a tree of
shuffles and, across warps, shared-memory round trips behind barriers. tl.join stacks the two
tiles on a trailing axis of 2, so one tl.sum reduces both and each barrier carries two values
(ptxas, sm_90, LayerNorm 1 × 8192 on 16 warps: 14 → 11 bar.sync a row block). LayerNorm only:
RMSNorm needs no Σg at all (_dh), so its whole-row tiles reduce Σ(g·h) alone (10 → 7 at 1 × 8192).
config/backward.py's _JOIN_SUMS_ROWS says where joining is faster; not on several-row bf16 tiles.
"""

import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents

from .convert import upcast
from .stats import await_row_sums, load_row_stat, merge_tile_stats, publish_row_sums


@triton.jit
def _load_column_tile(X, DY, W, start, cols, row_mask, x_rows, dy_rows, w_row, N, stride_x_col, stride_dy_col,
                      weight_offset, HAS_WEIGHT: tl.constexpr, COMPUTE_DTYPE: tl.constexpr,
                      BF16_PAIRS: tl.constexpr = False):
    """(c, mask, h, dy, g = dy·(w + weight_offset)) for the column tile c = start + cols of a row
    block (column tiles: both passes over the row), upcast; masked elements are 0."""
    c = start + cols
    col_mask = c < N
    mask = row_mask[:, None] & col_mask[None, :]
    h = upcast(tl.load(X + (x_rows + c[None, :] * stride_x_col), mask=mask, other=0.0), COMPUTE_DTYPE, BF16_PAIRS)
    dy = upcast(tl.load(DY + (dy_rows + c[None, :] * stride_dy_col), mask=mask, other=0.0), COMPUTE_DTYPE,
                BF16_PAIRS)
    g = dy
    if HAS_WEIGHT:
        w = upcast(tl.load(W + (w_row + c), mask=col_mask, other=0.0), COMPUTE_DTYPE, BF16_PAIRS) + weight_offset
        g = dy * w[None, :]
    return c, mask, h, dy, g


@triton.jit
def _load_rows(X, DY, row_block, head, HEADS, head_rows, cols, col_mask,
               stride_x_row, stride_x_col, stride_dy_row, stride_dy_col, BLOCK_M: tl.constexpr):
    """(h, dy) of one row block of one head, as stored (not upcast); rows past the end load 0."""
    local = row_block * BLOCK_M + tl.arange(0, BLOCK_M)
    rows64 = local.to(tl.int64) * HEADS + head
    mask = (local < head_rows)[:, None] & col_mask[None, :]
    h = tl.load(X + rows64[:, None] * stride_x_row + cols[None, :] * stride_x_col, mask=mask, other=0.0)
    dy = tl.load(DY + rows64[:, None] * stride_dy_row + cols[None, :] * stride_dy_col, mask=mask, other=0.0)
    return h, dy


@triton.jit
def _take_rows(X, DY, next_h, next_dy, row_block, num_programs, head, HEADS, head_rows, cols, col_mask,
               stride_x_row, stride_x_col, stride_dy_row, stride_dy_col, BLOCK_M: tl.constexpr,
               PREFETCH: tl.constexpr):
    """(h, dy, next_h, next_dy) for `row_block`: with PREFETCH the tile loaded one iteration ago,
    and the loads of the block `num_programs` further go out now; without, loaded here (next_h and
    next_dy pass through untouched)."""
    if PREFETCH:
        h, dy = next_h, next_dy
        next_h, next_dy = _load_rows(X, DY, row_block + num_programs, head, HEADS, head_rows, cols, col_mask,
                                     stride_x_row, stride_x_col, stride_dy_row, stride_dy_col, BLOCK_M)
    else:
        h, dy = _load_rows(X, DY, row_block, head, HEADS, head_rows, cols, col_mask,
                           stride_x_row, stride_x_col, stride_dy_row, stride_dy_col, BLOCK_M)
    return h, dy, next_h, next_dy


@triton.jit
def _weight(W, w_row, cols, col_mask, weight_offset, COMPUTE_DTYPE: tl.constexpr, BF16_PAIRS: tl.constexpr = False):
    """w + weight_offset for the columns `cols` of this head's weight row, upcast."""
    return upcast(tl.load(W + w_row + cols, mask=col_mask, other=0.0), COMPUTE_DTYPE, BF16_PAIRS) + weight_offset


@triton.jit
def _dh(h, g, mean, rstd, sum_gh, sum_g, N, IS_RMS_NORM: tl.constexpr, RMS_SKIPS_SUM_G: tl.constexpr = True):
    """(ĥ, dh) of a tile from its rows' sums: c₁ = rstd·(Σ(g·h) − μ·Σg)/N = Σ(g·ĥ)/N, c₂ = Σg/N,
    dh = rstd·(g − ĥ·c₁ − c₂) (c₂ only for LayerNorm). RMSNorm (μ = 0) does not read Σg, so a
    whole-row tile does not compute it (0·Σg would not fold away: Σg might be inf) — unless
    RMS_SKIPS_SUM_G is off (the same value either way while Σg is finite)."""
    if IS_RMS_NORM and RMS_SKIPS_SUM_G:
        c1 = rstd * sum_gh / N
    else:
        c1 = rstd * (sum_gh - mean * sum_g) / N
    x_hat = (h - mean[:, None]) * rstd[:, None]
    dh = g - x_hat * c1[:, None]
    if not IS_RMS_NORM:
        dh -= (sum_g / N)[:, None]
    return x_hat, dh * rstd[:, None]


@triton.jit
def _dh_scaled(h, dy, w, mean, rstd, sum_gh, sum_g, N, CENTER_FMA: tl.constexpr = False):
    """LayerNorm's `_dh` (ĥ, dh·rstd) with rstd folded in before the element-wise terms:
    dh·rstd = dy·(w·rstd) − (ĥ·c₁·rstd + c₂·rstd) — per element the weight's product, ĥ, one FFMA for
    the bracket and one for dh·rstd, against `_dh`'s g, ĥ, dh, − c₂ and · rstd (w None: no weight).
    It takes dy and w apart, not `_dh`'s g = dy·w: folded as g·rstd − (…) inside `_dh` (a flag tried in
    session 29) the loop counted 552 instructions, not 541, and LayerNorm's fp32 parts took 198
    registers, not 159 — two programs an SM, not three (tools/ptx_stats.py --sass, sm_90).
    CENTER_FMA (2-byte h only): ĥ = h·rstd + (−μ·rstd), one FFMA for (h − μ)·rstd's two; the rounded
    −μ·rstd costs at most ½ulp(|μ|·rstd) of ĥ, under 2⁻¹⁵ while |μ|·rstd < 2⁸ (2⁻¹³ below 2¹⁰, fp16) —
    and past that the 2-byte h itself carries less precision of h − μ than that."""
    c1 = rstd * (sum_gh - mean * sum_g) / N
    if CENTER_FMA:
        x_hat = h * rstd[:, None] + (-mean * rstd)[:, None]
    else:
        x_hat = (h - mean[:, None]) * rstd[:, None]
    shift = x_hat * (c1 * rstd)[:, None] + (sum_g / N * rstd)[:, None]
    if w is None:
        return x_hat, dy * rstd[:, None] - shift
    return x_hat, dy * (w[None, :] * rstd[:, None]) - shift


@triton.jit
def _store_dh(DX, DRESIDUAL_OUT, dx_offs, dres_offs, dh, mask, HAS_DRESIDUAL: tl.constexpr,
              COMPUTE_DTYPE: tl.constexpr, BF16_PAIRS: tl.constexpr = False):
    """dx = dh (+ dresidual_out, the gradient arriving on residual_out)."""
    if HAS_DRESIDUAL:
        dh += upcast(tl.load(DRESIDUAL_OUT + dres_offs, mask=mask, other=0.0), COMPUTE_DTYPE, BF16_PAIRS)
    tl.store(DX + dx_offs, dh, mask=mask)


@triton.jit
def _add_pair(a, b, c, d):
    """tl.reduce's combine of two sums at once: (a, b) + (c, d). Split parts only — Triton 3.6's
    interpreter runs a combine function element by element in fp32 (RELIABILITY, session 17)."""
    return a + c, b + d


@triton.jit
def _add_triple(a, b, c, d, e, f):
    """tl.reduce's combine of three sums at once (`_add_pair`'s, for the recomputing split parts)."""
    return a + d, b + e, c + f


@triton.jit
def _dweight_term(dy, x_hat, X_HAT_DTYPE: tl.constexpr, COMPUTE_DTYPE: tl.constexpr, BF16_PAIRS: tl.constexpr = False):
    """dy · ĥ, the dweight partial's term, with ĥ rounded to X_HAT_DTYPE as the forward scaled it.

    No mask, and the same bits as with one: a lane of a row past the end loaded x = dy = 0 and has
    rstd = 0 and mean = 0 (ĥ = 0), so it adds +0; a lane past N sums into a column of the partial
    that is never stored. (A `tl.where` on the mask had cost selects: 60 of the 811 instructions a
    thread spent a row block in RMSNorm's bf16 1 × 4096 split part, `tools/ptx_stats.py --sass`.)"""
    return dy * upcast(x_hat.to(X_HAT_DTYPE), COMPUTE_DTYPE, BF16_PAIRS)


@triton.jit
def _accumulate_partial(PARTIAL, offs, mask, contribution):
    """PARTIAL[offs] += contribution, by the row's one owner program."""
    tl.store(PARTIAL + offs, tl.load(PARTIAL + offs, mask=mask, other=0.0) + contribution, mask=mask)


@triton.jit
def _split_rows(X, W, DY, DRESIDUAL_OUT, MEAN, RSTD, DX, DW_PARTIAL, DB_PARTIAL, XCHG, M, N, HEADS,
                stride_x_row, stride_x_col, stride_dy_row, stride_dy_col, stride_dres_row, stride_dres_col,
                stride_dx_row, eps, weight_offset, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                IS_RMS_NORM: tl.constexpr, HAS_WEIGHT: tl.constexpr, HAS_BIAS: tl.constexpr,
                HAS_DRESIDUAL: tl.constexpr, RECOMPUTE_STATS: tl.constexpr, COMPUTE_DTYPE: tl.constexpr,
                X_HAT_DTYPE: tl.constexpr, SPLIT: tl.constexpr, PREFETCH: tl.constexpr, ASYNC_STAGES: tl.constexpr,
                RELOAD: tl.constexpr, JOIN_STATS: tl.constexpr, EVEN_COLS: tl.constexpr, BF16_PAIRS: tl.constexpr):
    """Split rows (SPLIT > 1): the whole backward of one column part, its row blocks in lockstep with
    its group's other parts (the module docstring's "Split rows"). Ends with the part's dweight and
    dbias partials stored, as the whole-row path does."""
    KEEP_W: tl.constexpr = PREFETCH or BLOCK_N <= 8192
    pid = tl.program_id(0)
    head = tl.program_id(1)
    num_programs = tl.num_programs(0)
    head_rows = M // HEADS  # rows of one head (all rows when HEADS = 1)
    num_row_blocks = tl.cdiv(head_rows, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    w_row = head.to(tl.int64) * N  # offset of this head's weight row
    parts = tl.cdiv(N, BLOCK_N)
    part = pid % parts
    pid = pid // parts  # the group: from here on, "program" means the group
    num_programs = num_programs // parts
    cols += part * BLOCK_N
    group = pid * HEADS + head
    partial_offset = (pid.to(tl.int64) * HEADS + head) * N  # this group's row of the partials

    col_mask = cols < N
    if EVEN_COLS:  # N a multiple of BLOCK_N: the mask folds away (fewer instructions a row block)
        col_mask = tl.full([BLOCK_N], 1, tl.int1)
    dw_acc = tl.zeros([BLOCK_N], dtype=COMPUTE_DTYPE)
    db_acc = tl.zeros([BLOCK_N], dtype=COMPUTE_DTYPE)
    # The same columns in every row block: the weight is loaded once, except for the widest
    # rows, where keeping it live spilled (4096×16384: see config._BWD_PREFETCH).
    if HAS_WEIGHT and KEEP_W:
        w = _weight(W, w_row, cols, col_mask, weight_offset, COMPUTE_DTYPE, BF16_PAIRS)
    next_h, next_dy = 0, 0  # (placeholders without PREFETCH: _take_rows passes them through)
    if PREFETCH:
        next_h, next_dy = _load_rows(X, DY, pid, head, HEADS, head_rows, cols, col_mask,
                                     stride_x_row, stride_x_col, stride_dy_row, stride_dy_col, BLOCK_M)

    # Iteration t publishes the row sums of block pid + t·G, then finishes block pid + (t−1)·G
    # with the sums its partners published one iteration ago. Iteration 0 finishes nothing
    # (its "previous" rows are masked off); the extra last iteration publishes nothing real.
    # RELOAD: block t − 1's h and dy are not held across the exchange but read again after it
    # (from L2, where iteration t − 1 left them): one row block fewer live in registers.
    prev_h = tl.zeros([BLOCK_M, BLOCK_N], dtype=X.dtype.element_ty)
    prev_dy = tl.zeros([BLOCK_M, BLOCK_N], dtype=DY.dtype.element_ty)
    for t in tl.range(0, tl.cdiv(num_row_blocks - pid, num_programs) + 1, num_stages=ASYNC_STAGES):
        row_block = pid + t * num_programs
        h, dy, next_h, next_dy = _take_rows(X, DY, next_h, next_dy, row_block, num_programs, head, HEADS,
                                            head_rows, cols, col_mask, stride_x_row, stride_x_col,
                                            stride_dy_row, stride_dy_col, BLOCK_M, PREFETCH)
        if HAS_WEIGHT and not KEEP_W:
            w = _weight(W, w_row, cols, col_mask, weight_offset, COMPUTE_DTYPE, BF16_PAIRS)
        mask = ((row_block * BLOCK_M + tl.arange(0, BLOCK_M)) < head_rows)[:, None] & col_mask[None, :]
        h_c = upcast(h, COMPUTE_DTYPE, BF16_PAIRS)
        g = upcast(dy, COMPUTE_DTYPE, BF16_PAIRS)
        if HAS_WEIGHT:
            g = g * w[None, :]
        # the sums in one reduction (one round of cross-warp exchanges), with JOIN_STATS the
        # statistics' own too: Σh² (RMSNorm) or Σh (LayerNorm; else publish_row_sums reduces it)
        sum_g = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE)  # RMSNorm's dh does not read Σg (_dh)
        sum_h = None
        if IS_RMS_NORM and RECOMPUTE_STATS and JOIN_STATS:
            sum_gh, sum_h = tl.reduce((g * h_c, h_c * h_c), 1, _add_pair)
        elif IS_RMS_NORM:
            sum_gh = tl.sum(g * h_c, axis=1)
        elif RECOMPUTE_STATS and JOIN_STATS:
            sum_gh, sum_g, sum_h = tl.reduce((g * h_c, g, h_c), 1, _add_triple)
        else:
            sum_gh, sum_g = tl.reduce((g * h_c, g), 1, _add_pair)
        publish_row_sums(XCHG, group, t, part, h_c, mask, N, sum_gh, sum_g, IS_RMS_NORM, RECOMPUTE_STATS,
                         BLOCK_M, SPLIT, COMPUTE_DTYPE, SUM_G=not IS_RMS_NORM, sum_h=sum_h)

        # ---- the previous block: its rows' sums, then dh and the parameter partials
        local = (row_block - num_programs) * BLOCK_M + tl.arange(0, BLOCK_M)
        row_mask = (local < head_rows) & (t > 0)
        rows64 = local.to(tl.int64) * HEADS + head
        if IS_RMS_NORM and not RECOMPUTE_STATS and ASYNC_STAGES is not None and COMPUTE_DTYPE == tl.float32:
            # rstd in flight with the exchange's words, not staged by the pipeliner behind a barrier of its
            # own (`load_row_stat`): RMSNorm −0.5 to −1.3 %; LayerNorm's mean and rstd so lost 5-16 % (run ZZZZZQ)
            rstd = load_row_stat(RSTD + rows64, row_mask).to(COMPUTE_DTYPE)
        elif not RECOMPUTE_STATS:
            rstd = tl.load(RSTD + rows64, mask=row_mask, other=0.0).to(COMPUTE_DTYPE)
            if not IS_RMS_NORM:
                mean = tl.load(MEAN + rows64, mask=row_mask, other=0.0).to(COMPUTE_DTYPE)
        sum_gh, sum_g, row_mean, var = await_row_sums(XCHG, group, t - 1, parts, N, IS_RMS_NORM,
                                                      RECOMPUTE_STATS, BLOCK_M, BLOCK_N, SPLIT, COMPUTE_DTYPE,
                                                      SUM_G=not IS_RMS_NORM)
        if RECOMPUTE_STATS:
            mean = row_mean
            rstd = 1.0 / tl.sqrt(var + eps)
        elif IS_RMS_NORM:
            mean = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE)
        rstd = tl.where(row_mask, rstd, 0.0)
        mask = row_mask[:, None] & col_mask[None, :]
        if RELOAD:
            prev_h = tl.load(X + rows64[:, None] * stride_x_row + cols[None, :] * stride_x_col, mask=mask,
                             other=0.0, eviction_policy="evict_first")
            prev_dy = tl.load(DY + rows64[:, None] * stride_dy_row + cols[None, :] * stride_dy_col, mask=mask,
                              other=0.0, eviction_policy="evict_first")
        h_c = upcast(prev_h, COMPUTE_DTYPE, BF16_PAIRS)
        dy_c = upcast(prev_dy, COMPUTE_DTYPE, BF16_PAIRS)
        if IS_RMS_NORM:
            g = dy_c
            if HAS_WEIGHT:
                g = dy_c * w[None, :]
            x_hat, dh = _dh(h_c, g, mean, rstd, sum_gh, sum_g, N, IS_RMS_NORM)
        else:  # LayerNorm: rstd folded in first, two element-wise ops fewer (_dh_scaled)
            # ĥ in one FFMA where h is 2-byte (its error bound: `_dh_scaled`): 0.5-1 % (run ZZZZZN)
            x_hat, dh = _dh_scaled(h_c, dy_c, w if HAS_WEIGHT else None, mean, rstd, sum_gh, sum_g, N,
                                   X.dtype.element_ty.primitive_bitwidth == 16)
        _store_dh(DX, DRESIDUAL_OUT, rows64[:, None] * stride_dx_row + cols[None, :],
                  rows64[:, None] * stride_dres_row + cols[None, :] * stride_dres_col, dh, mask,
                  HAS_DRESIDUAL, COMPUTE_DTYPE, BF16_PAIRS)
        if HAS_WEIGHT:  # unmasked: `_dweight_term`
            dw_acc += tl.sum(_dweight_term(dy_c, x_hat, X_HAT_DTYPE, COMPUTE_DTYPE, BF16_PAIRS), axis=0)
        if HAS_BIAS:
            db_acc += tl.sum(dy_c, axis=0)
        if not RELOAD:
            prev_h, prev_dy = h, dy

    if HAS_WEIGHT:
        tl.store(DW_PARTIAL + partial_offset + cols, dw_acc, mask=col_mask)
    if HAS_BIAS:
        tl.store(DB_PARTIAL + partial_offset + cols, db_acc, mask=col_mask)


@triton.jit
def norm_bwd_kernel(
    X, W, DY, DRESIDUAL_OUT, MEAN, RSTD,  # inputs: h, dy, dresidual_out (M, N) strided; w (HEADS, N)
    DX, DW_PARTIAL, DB_PARTIAL,  # outputs: dx (M, N) row-major; partials (G, HEADS·N)
    XCHG,  # SPLIT > 1: tagged row sums, int64 (G·HEADS, RING, 4, 2, SPLIT, BLOCK_M), zeroed
    M, N, HEADS,
    stride_x_row, stride_x_col, stride_dy_row, stride_dy_col,
    stride_dres_row, stride_dres_col, stride_dx_row,
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
):
    if LAUNCH_DEPENDENTS:
        gdc_launch_dependents()
    eps = tl.full([], eps, COMPUTE_DTYPE)  # float32 kernels round them as before, float64 ones keep them
    weight_offset = tl.full([], weight_offset, COMPUTE_DTYPE)
    if SPLIT > 1:  # a row's columns across a group of programs (docs/design.md#split-rows)
        _split_rows(X, W, DY, DRESIDUAL_OUT, MEAN, RSTD, DX, DW_PARTIAL, DB_PARTIAL, XCHG, M, N, HEADS,
                    stride_x_row, stride_x_col, stride_dy_row, stride_dy_col, stride_dres_row, stride_dres_col,
                    stride_dx_row, eps, weight_offset, BLOCK_M, BLOCK_N, IS_RMS_NORM, HAS_WEIGHT, HAS_BIAS,
                    HAS_DRESIDUAL, RECOMPUTE_STATS, COMPUTE_DTYPE, X_HAT_DTYPE, SPLIT, PREFETCH, ASYNC_STAGES,
                    RELOAD, JOIN_STATS, EVEN_COLS, BF16_PAIRS)
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

    if ONE_TILE:
        col_mask = cols < N
        if EVEN_COLS:  # N a multiple of BLOCK_N: the mask folds away (fewer instructions a row block)
            col_mask = tl.full([BLOCK_N], 1, tl.int1)
        dw_acc = tl.zeros([BLOCK_N], dtype=COMPUTE_DTYPE)
        db_acc = tl.zeros([BLOCK_N], dtype=COMPUTE_DTYPE)
        # The same columns in every row block: the weight is loaded once, except for the widest
        # rows, where keeping it live spilled (4096×16384: see config._BWD_PREFETCH).
        if HAS_WEIGHT and KEEP_W:
            w = _weight(W, w_row, cols, col_mask, weight_offset, COMPUTE_DTYPE, BF16_PAIRS)
        next_h, next_dy = 0, 0  # (placeholders without PREFETCH: _take_rows passes them through)
        if PREFETCH:
            next_h, next_dy = _load_rows(X, DY, pid, head, HEADS, head_rows, cols, col_mask,
                                         stride_x_row, stride_x_col, stride_dy_row, stride_dy_col, BLOCK_M)
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

        # ---- row reductions: Σ(g·h), Σg and, with RECOMPUTE_STATS, the statistics of h
        if not RECOMPUTE_STATS:  # issued first: independent of the tile, not held behind the reductions
            rstd = tl.load(RSTD + rows64, mask=row_mask, other=0.0).to(COMPUTE_DTYPE)
            if not IS_RMS_NORM:
                mean = tl.load(MEAN + rows64, mask=row_mask, other=0.0).to(COMPUTE_DTYPE)
        if ONE_TILE:
            mask = row_mask[:, None] & col_mask[None, :]
            # with PREFETCH this block's tile arrived during the previous block's math; start the next
            h, dy, next_h, next_dy = _take_rows(X, DY, next_h, next_dy, row_block, num_programs, head, HEADS,
                                                head_rows, cols, col_mask, stride_x_row, stride_x_col,
                                                stride_dy_row, stride_dy_col, BLOCK_M, PREFETCH)
            h = upcast(h, COMPUTE_DTYPE, BF16_PAIRS)
            dy = upcast(dy, COMPUTE_DTYPE, BF16_PAIRS)
            g = dy
            if HAS_WEIGHT:
                if not KEEP_W:
                    w = _weight(W, w_row, cols, col_mask, weight_offset, COMPUTE_DTYPE, BF16_PAIRS)
                g = dy * w[None, :]
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
                c, mask, h, dy, g = _load_column_tile(X, DY, W, start, cols, row_mask, x_rows, dy_rows, w_row, N,
                                                      stride_x_col, stride_dy_col, weight_offset, HAS_WEIGHT,
                                                      COMPUTE_DTYPE, BF16_PAIRS)
                acc_gh += g * h
                acc_g += g
                if RECOMPUTE_STATS:
                    mean, m2 = merge_tile_stats(h, mask, start, N, mean, m2, IS_RMS_NORM, BLOCK_M, BLOCK_N,
                                                COMPUTE_DTYPE)
            sum_gh = tl.sum(acc_gh, axis=1)
            sum_g = tl.sum(acc_g, axis=1)
            var = m2 / N

        if RECOMPUTE_STATS:
            rstd = 1.0 / tl.sqrt(var + eps)
        elif IS_RMS_NORM:
            mean = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE)
        # Rows past the end contribute nothing, even when eps = 0 makes 1/sqrt(0) = inf.
        rstd = tl.where(row_mask, rstd, 0.0)

        # ---- dh = rstd·(g − ĥ·c₁ − c₂) (+ dresidual_out), and the parameter partials
        if ONE_TILE:
            # Σg is dropped for RMSNorm where the tile keeps the weight; the 1 × 16384 tile (which
            # spills either way) spilled 180 B without it against 152 B with it, and ran
            # 4096×16384 in 177 µs against 142 (device run ZI): there RMSNorm computes Σg as before.
            x_hat, dh = _dh(h, g, mean, rstd, sum_gh, sum_g, N, IS_RMS_NORM, KEEP_W)
            _store_dh(DX, DRESIDUAL_OUT, dx_rows + cols[None, :], dres_rows + cols[None, :] * stride_dres_col,
                      dh, mask, HAS_DRESIDUAL, COMPUTE_DTYPE, BF16_PAIRS)
            if HAS_WEIGHT:
                dw_acc += tl.sum(_dweight_term(dy, x_hat, X_HAT_DTYPE, COMPUTE_DTYPE, BF16_PAIRS), axis=0)
            if HAS_BIAS:
                db_acc += tl.sum(dy, axis=0)
        else:
            for start in tl.range(0, N, BLOCK_N):
                c, mask, h, dy, g = _load_column_tile(X, DY, W, start, cols, row_mask, x_rows, dy_rows, w_row, N,
                                                      stride_x_col, stride_dy_col, weight_offset, HAS_WEIGHT,
                                                      COMPUTE_DTYPE, BF16_PAIRS)
                x_hat, dh = _dh(h, g, mean, rstd, sum_gh, sum_g, N, IS_RMS_NORM)
                _store_dh(DX, DRESIDUAL_OUT, dx_rows + c[None, :], dres_rows + c[None, :] * stride_dres_col,
                          dh, mask, HAS_DRESIDUAL, COMPUTE_DTYPE, BF16_PAIRS)
                if HAS_WEIGHT:
                    term = _dweight_term(dy, x_hat, X_HAT_DTYPE, COMPUTE_DTYPE, BF16_PAIRS)
                    _accumulate_partial(DW_PARTIAL, partial_offset + c, c < N, tl.sum(term, axis=0))
                if HAS_BIAS:
                    _accumulate_partial(DB_PARTIAL, partial_offset + c, c < N, tl.sum(dy, axis=0))
            tl.debug_barrier()

    if ONE_TILE:
        if HAS_WEIGHT:
            tl.store(DW_PARTIAL + partial_offset + cols, dw_acc, mask=col_mask)
        if HAS_BIAS:
            tl.store(DB_PARTIAL + partial_offset + cols, db_acc, mask=col_mask)
