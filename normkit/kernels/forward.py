"""Normalization forward kernel family: RMSNorm and LayerNorm, with residual, bias, weight offset.

Per row (length N), all in COMPUTE_DTYPE (float32, or float64 for float64 inputs)::

    h    = x + residual                       (HAS_RESIDUAL; stored as residual_out when asked)
    mean = Σh / N                             (LayerNorm only; RMSNorm uses mean = 0)
    rstd = 1 / sqrt(Σ(h − mean)² / N + eps)
    ĥ    = (h − mean) · rstd
    y    = ĥ · (w + weight_offset) + b        (w = 1 without HAS_WEIGHT, b = 0 without HAS_BIAS)

with ĥ rounded to X_HAT_DTYPE before the scale (x's dtype in Llama-style casting; otherwise
COMPUTE_DTYPE, i.e. no rounding). Gated (HAS_GATE, Qwen3-Next's RMSNormGated; no bias)::

    u    = ĥ · (w + weight_offset), rounded to U_DTYPE     (promote(w, x) in Llama-style casting)
    y    = u · silu(gate),  silu(g) = g / (1 + exp(−g))   (torch's formula; gate upcast first)

one more load (the gate's row) and the multiply in the epilogue. Split rows take no gate (the
launcher never picks them with one: variant.py).

Inputs are upcast before anything is squared, so fp16 inputs with |x| in the hundreds cannot
overflow. Per-head weights (QK-norm): the weight and bias are (HEADS, N) and row r uses row
r % HEADS of them (HEADS = 1 is the ordinary (N,) weight; Triton specialises it away).

Tiling. A program owns BLOCK_M consecutive rows. With ONE_TILE the whole row (N ≤ BLOCK_N) is
loaded once and kept in registers (two-pass mean/variance in registers) — or, with RELOAD, loaded
again for y (from L2: the first load asks evict_last, the second evict_first), so that the row need
not stay live across the reductions: fewer registers, more rows in flight an SM. EVEN_ROWS (ONE_TILE,
N = BLOCK_N and M a multiple of BLOCK_M) makes the masks constant-true, which Triton folds away:
no predicated loads and stores, no select in LayerNorm's centring. Otherwise the row is
walked in BLOCK_N-wide column tiles twice: once for the statistics (per-tile mean and M2 merged
with Chan's formula, stable for large means), once to write y (re-reading x and residual: the
second pass mostly hits L2; RMSNorm asks L2 to keep the first pass's reads, evict_last, and to drop
the second's, evict_first; COLUMN_STAGES stages the first pass's loads in shared memory, cp.async);
the output pass walks the tiles backwards (a snake): it starts on the tiles read last, the likeliest
still in L2 when the rows in flight outgrow it (H200: RMSNorm bf16 2048×131072 373 → 349 µs);
the three-read tiles keep tile order.
LayerNorm's column tiles with CENTERED_PASS read the row three times, as torch.compile's looped
reduction does: per-lane Σh, then per-lane Σ(h − mean)² (the two-pass variance, exact as the whole
row's), then y — one sum live a pass and one block reduction a pass, instead of Chan's merge of
every tile — with RMSNorm's L2 hints (the two statistics passes keep the row, the output pass drops it).
With SPLIT > 1 a row's columns are cut into parts, one program each, that exchange their partial
sums (`_split_rows`: the backward's exchange, kernels/stats.py).

Scalars. eps and weight_offset arrive as doubles (a Python float would reach the GPU as float32)
and are cast to COMPUTE_DTYPE: float32 kernels see exactly the float32 values they always did,
float64 kernels the caller's value. (eps = 1e-5 rounded to float32 moved float64 LayerNorm
outputs by 4e-12 relative at var = 1e-4: found on the H200 by tests/test_properties.py.)
"""

import triton
import triton.language as tl

from .convert import upcast, upcast_held
from .stats import await_row_sums, inverse_std, merge_tile_stats, publish_row_sums


@triton.jit
def _load_h(X, RESIDUAL, x_offs, res_offs, mask, HAS_RESIDUAL: tl.constexpr, COMPUTE_DTYPE: tl.constexpr,
            EVICTION: tl.constexpr, BF16_PAIRS: tl.constexpr = False):
    """h = x (+ residual), upcast to COMPUTE_DTYPE; masked elements are 0. EVICTION: the loads'
    L2 eviction policy ("evict_first" for data read once)."""
    h = upcast(tl.load(X + x_offs, mask=mask, other=0.0, eviction_policy=EVICTION), COMPUTE_DTYPE, BF16_PAIRS)
    if HAS_RESIDUAL:
        h += upcast(tl.load(RESIDUAL + res_offs, mask=mask, other=0.0, eviction_policy=EVICTION), COMPUTE_DTYPE,
                    BF16_PAIRS)
    return h


@triton.jit
def _column_tile(X, RESIDUAL, x_rows, res_rows, row_mask, c, N, stride_x_col, stride_res_col,
                 HAS_RESIDUAL: tl.constexpr, COMPUTE_DTYPE: tl.constexpr, EVICTION: tl.constexpr,
                 BF16_PAIRS: tl.constexpr = False):
    """A column tile of the rows: columns c (masked past N and on rows past M) and its h = x
    (+ residual) in COMPUTE_DTYPE."""
    mask = row_mask[:, None] & (c < N)[None, :]
    h = _load_h(X, RESIDUAL, x_rows + c[None, :] * stride_x_col, res_rows + c[None, :] * stride_res_col, mask,
                HAS_RESIDUAL, COMPUTE_DTYPE, EVICTION, BF16_PAIRS)
    return mask, h


@triton.jit
def _affine(x_hat, W, B, w_offs, mask, weight_offset, HAS_WEIGHT: tl.constexpr, HAS_BIAS: tl.constexpr,
            HAS_WEIGHT_OFFSET: tl.constexpr, COMPUTE_DTYPE: tl.constexpr, X_HAT_DTYPE: tl.constexpr,
            BF16_PAIRS: tl.constexpr = False, w_held=0.0, b_held=0.0, HELD: tl.constexpr = False):
    """y = x̂ · (w + weight_offset) + b, with x̂ first rounded to X_HAT_DTYPE (a no-op when that is
    COMPUTE_DTYPE; x's dtype for Llama-style casting: normalise in fp32, cast, then scale). The
    offset's add only with HAS_WEIGHT_OFFSET (an add per element, per row: the weight is not kept).
    w and b loaded at w_offs, or (HELD) w_held and b_held, as loaded before (their own dtype)."""
    y = upcast(x_hat.to(X_HAT_DTYPE), COMPUTE_DTYPE, BF16_PAIRS)
    if HAS_WEIGHT:
        if HELD:
            w = upcast_held(w_held, COMPUTE_DTYPE, BF16_PAIRS)
        else:
            w = upcast(tl.load(W + w_offs, mask=mask, other=0.0), COMPUTE_DTYPE, BF16_PAIRS)
        if HAS_WEIGHT_OFFSET:
            w += weight_offset
        y = y * w
    if HAS_BIAS:
        if HELD:
            y += upcast_held(b_held, COMPUTE_DTYPE, BF16_PAIRS)
        else:
            y += upcast(tl.load(B + w_offs, mask=mask, other=0.0), COMPUTE_DTYPE, BF16_PAIRS)
    return y


@triton.jit
def _gated(u, GATE, gate_offs, mask, U_DTYPE: tl.constexpr, COMPUTE_DTYPE: tl.constexpr, EVICTION: tl.constexpr,
           BF16_PAIRS: tl.constexpr = False):
    """u·silu(gate), u first rounded to U_DTYPE (a no-op when that is COMPUTE_DTYPE); silu as torch
    writes it, g / (1 + exp(−g)), on the gate upcast to COMPUTE_DTYPE."""
    gate = upcast(tl.load(GATE + gate_offs, mask=mask, other=0.0, eviction_policy=EVICTION), COMPUTE_DTYPE, BF16_PAIRS)
    return upcast(u.to(U_DTYPE), COMPUTE_DTYPE, BF16_PAIRS) * (gate / (1.0 + tl.exp(-gate)))


@triton.jit
def _output_tile(X, RESIDUAL, W, B, GATE, Y, x_rows, res_rows, gate_rows, y_rows, w_rows, row_mask, c, N,
                 stride_x_col, stride_res_col, stride_gate_col, mean, rstd, weight_offset, HAS_RESIDUAL: tl.constexpr,
                 HAS_WEIGHT: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_WEIGHT_OFFSET: tl.constexpr,
                 COMPUTE_DTYPE: tl.constexpr, X_HAT_DTYPE: tl.constexpr, EVICTION: tl.constexpr,
                 BF16_PAIRS: tl.constexpr = False, HAS_GATE: tl.constexpr = False, U_DTYPE: tl.constexpr = None):
    """y on the rows' column tile c, from h read again (x (+ residual), unrounded, exactly as the
    ONE_TILE path uses it): y = (h − mean) · rstd · (w + weight_offset) + b (· silu(gate))."""
    mask, h = _column_tile(X, RESIDUAL, x_rows, res_rows, row_mask, c, N, stride_x_col, stride_res_col,
                           HAS_RESIDUAL, COMPUTE_DTYPE, EVICTION, BF16_PAIRS)
    y = _affine((h - mean[:, None]) * rstd[:, None], W, B, w_rows + c[None, :], mask, weight_offset, HAS_WEIGHT,
                HAS_BIAS, HAS_WEIGHT_OFFSET, COMPUTE_DTYPE, X_HAT_DTYPE, BF16_PAIRS)
    if HAS_GATE:
        y = _gated(y, GATE, gate_rows + c[None, :] * stride_gate_col, mask, U_DTYPE, COMPUTE_DTYPE, EVICTION,
                   BF16_PAIRS)
    tl.store(Y + y_rows + c[None, :], y, mask=mask, eviction_policy=EVICTION)


@triton.jit
def _lanes(X, Y, RESIDUAL, RESIDUAL_OUT, HAS_RESIDUAL: tl.constexpr, STORE_RESIDUAL_OUT: tl.constexpr,
           BLOCK_N: tl.constexpr):
    """0 … BLOCK_N − 1, provably contiguous only in runs of one 16-byte vector of the widest row
    element the kernel loads or stores (x, y, residual, residual_out). Triton vectorises each load
    and store up to 16 bytes of its own element; where the widths differ (bf16 x, fp32 y: 8 and 4 a
    thread) it converts the values' layout through shared memory between them (ptxas, sm_90: 4-16 KB
    and 8 more bar.sync a tile). Capped at the widest element's run, every load and store takes the
    same layout. The whole-row and column tiles pass HAS_RESIDUAL = STORE_RESIDUAL_OUT = False (x and y
    only): an fp32 residual beside bf16 x and y in 4-element runs lost there (H200, fused add
    4096×16384: 216.3 µs against 199.6 converting) and won in the split parts (4096×65536: 978.9
    against 1071.8)."""
    X_BITS: tl.constexpr = X.dtype.element_ty.primitive_bitwidth
    Y_BITS: tl.constexpr = Y.dtype.element_ty.primitive_bitwidth
    R_BITS: tl.constexpr = RESIDUAL.dtype.element_ty.primitive_bitwidth if HAS_RESIDUAL else X_BITS
    H_BITS: tl.constexpr = RESIDUAL_OUT.dtype.element_ty.primitive_bitwidth if STORE_RESIDUAL_OUT else X_BITS
    XY: tl.constexpr = X_BITS if X_BITS > Y_BITS else Y_BITS
    RH: tl.constexpr = R_BITS if R_BITS > H_BITS else H_BITS
    WIDEST: tl.constexpr = XY if XY > RH else RH
    lanes = tl.arange(0, BLOCK_N)
    if (X_BITS != WIDEST or Y_BITS != WIDEST) or (R_BITS != WIDEST or H_BITS != WIDEST):
        VEC: tl.constexpr = 128 // WIDEST
        lanes = (lanes // VEC) * VEC + lanes % VEC
    return lanes


@triton.jit
def _split_rows(X, RESIDUAL, W, B, Y, RESIDUAL_OUT, MEAN, RSTD, XCHG, M, N, HEADS,
                stride_x_row, stride_x_col, stride_res_row, stride_res_col, stride_y_row, stride_res_out_row,
                eps, weight_offset, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, IS_RMS_NORM: tl.constexpr,
                HAS_WEIGHT: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr,
                STORE_RESIDUAL_OUT: tl.constexpr, STORE_STATS: tl.constexpr, COMPUTE_DTYPE: tl.constexpr,
                X_HAT_DTYPE: tl.constexpr, HAS_WEIGHT_OFFSET: tl.constexpr, SPLIT: tl.constexpr,
                SPLIT_STAGES: tl.constexpr, RELOAD: tl.constexpr, BF16_PAIRS: tl.constexpr = False,
                HOLD_WEIGHT: tl.constexpr = False, PTX: tl.constexpr = False):
    """Split rows (SPLIT > 1): the backward's exchange (kernels/backward_split.py, stats.publish_row_sums)
    on the forward. Program p is part p % P of group p // P (P = cdiv(N, BLOCK_N)); a group's parts
    walk the same row blocks in lockstep. Iteration t loads block t's columns of this part (h = x
    (+ residual), stored as residual_out), publishes its Σh² (RMSNorm) or local mean and M2
    (LayerNorm) — only those, not the backward's Σ(g·h) and Σg — then waits for block t − 1's sums from
    every part (LayerNorm's two at once when staged), merges them in one fixed order
    and writes y for block t − 1 from its columns read again (RELOAD: from L2, where iteration t − 1
    left them, nothing held in registers across iterations) or held in registers since iteration
    t − 1 (not RELOAD: each element read once, one row block more in registers). With HOLD_WEIGHT the
    part's columns of the weight and bias are loaded once, before the row loop, and held in registers as
    loaded (2-byte: converted at each use, convert.upcast_held, not held as float32):
    read again every row block they are L2 traffic as large as x's (the split forward is bound by its
    L2 traffic, docs/design.md#split-rows). Part 0 stores mean and rstd. Every program must be
    resident at once (the launcher's grid: one program an SM)."""
    parts = tl.cdiv(N, BLOCK_N)
    pid = tl.program_id(0)
    part = pid % parts
    group = pid // parts
    groups = tl.num_programs(0) // parts
    cols = part * BLOCK_N + _lanes(X, Y, RESIDUAL, RESIDUAL_OUT, HAS_RESIDUAL, STORE_RESIDUAL_OUT, BLOCK_N)
    col_mask = cols < N
    num_row_blocks = tl.cdiv(M, BLOCK_M)
    zeros = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE)
    held = tl.zeros([BLOCK_M, BLOCK_N], dtype=COMPUTE_DTYPE)  # not RELOAD: block t − 1's h
    w_held = 0.0  # HOLD_WEIGHT: one weight head (the split's rule), so every row block takes these columns
    b_held = 0.0
    # held in x's tile's layout (a [1, BLOCK_N] row broadcast at use took a layout conversion through shared
    # memory, 15 more bar.sync, once upcast_held kept the conversion in the loop)
    tile_cols = cols[None, :] + tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.int32)
    if HOLD_WEIGHT and HAS_WEIGHT:
        w_held = tl.load(W + tile_cols, mask=tile_cols < N, other=0.0)
    if HOLD_WEIGHT and HAS_BIAS:
        b_held = tl.load(B + tile_cols, mask=tile_cols < N, other=0.0)
    for t in tl.range(0, tl.cdiv(num_row_blocks - group, groups) + 1, num_stages=SPLIT_STAGES):
        # ---- block t: load, store residual_out, publish this part's sums
        rows = (group + t * groups) * BLOCK_M + tl.arange(0, BLOCK_M)
        rows64 = rows.to(tl.int64)
        mask = (rows < M)[:, None] & col_mask[None, :]
        h = _load_h(X, RESIDUAL, rows64[:, None] * stride_x_row + cols[None, :] * stride_x_col,
                    rows64[:, None] * stride_res_row + cols[None, :] * stride_res_col, mask, HAS_RESIDUAL,
                    COMPUTE_DTYPE, "evict_last" if RELOAD else "evict_first", BF16_PAIRS)
        if STORE_RESIDUAL_OUT:
            tl.store(RESIDUAL_OUT + rows64[:, None] * stride_res_out_row + cols[None, :], h, mask=mask)
        publish_row_sums(XCHG, group, t, part, h, mask, N, zeros, zeros, IS_RMS_NORM, True, BLOCK_M, SPLIT,
                         COMPUTE_DTYPE, SUM_G=False, SUM_GH=False, PTX=PTX)
        # ---- block t − 1: the row's statistics from every part, then y from its columns again
        rows = (group + (t - 1) * groups) * BLOCK_M + tl.arange(0, BLOCK_M)
        rows64 = rows.to(tl.int64)
        row_mask = (rows < M) & (t > 0)
        mask = row_mask[:, None] & col_mask[None, :]
        _, _, mean, var = await_row_sums(XCHG, group, t - 1, parts, N, IS_RMS_NORM, True, BLOCK_M, BLOCK_N,
                                         SPLIT, COMPUTE_DTYPE, SUM_G=False, SUM_GH=False, PTX=PTX)
        rstd = inverse_std(var, eps, COMPUTE_DTYPE)
        if RELOAD:
            h = _load_h(X, RESIDUAL, rows64[:, None] * stride_x_row + cols[None, :] * stride_x_col,
                        rows64[:, None] * stride_res_row + cols[None, :] * stride_res_col, mask, HAS_RESIDUAL,
                        COMPUTE_DTYPE, "evict_first", BF16_PAIRS)
        else:
            h, held = held, h
        y = _affine((h - mean[:, None]) * rstd[:, None], W, B, (rows % HEADS).to(tl.int64)[:, None] * N + cols[None, :],
                    mask, weight_offset, HAS_WEIGHT, HAS_BIAS, HAS_WEIGHT_OFFSET, COMPUTE_DTYPE, X_HAT_DTYPE,
                    BF16_PAIRS, w_held, b_held, HOLD_WEIGHT)
        tl.store(Y + rows64[:, None] * stride_y_row + cols[None, :], y, mask=mask, eviction_policy="evict_first")
        if STORE_STATS:
            first = row_mask & (part == 0)
            tl.store(RSTD + rows64, rstd, mask=first)
            if not IS_RMS_NORM:
                tl.store(MEAN + rows64, mean, mask=first)


@triton.jit
def norm_fwd_kernel(
    X, RESIDUAL, W, B, GATE,  # inputs: x, residual, gate (M, N) strided; weight, bias (HEADS, N)
    Y, RESIDUAL_OUT, MEAN, RSTD,  # outputs: y, residual_out (M, N) row-major; mean, rstd (M,)
    XCHG,  # SPLIT > 1: tagged row sums and counts, int64 (groups, RING, 8·SPLIT·BLOCK_M + 8), zeroed
    M, N, HEADS,
    stride_x_row, stride_x_col, stride_res_row, stride_res_col, stride_gate_row, stride_gate_col,
    stride_y_row, stride_res_out_row,
    eps: tl.float64, weight_offset: tl.float64,  # doubles: see "Scalars" above
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ONE_TILE: tl.constexpr,
    IS_RMS_NORM: tl.constexpr,
    HAS_WEIGHT: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    HAS_RESIDUAL: tl.constexpr,
    STORE_RESIDUAL_OUT: tl.constexpr,
    STORE_STATS: tl.constexpr,
    COMPUTE_DTYPE: tl.constexpr,
    X_HAT_DTYPE: tl.constexpr,
    EVEN_ROWS: tl.constexpr = False,  # ONE_TILE, N == BLOCK_N, M % BLOCK_M == 0: no mask needed
    HAS_WEIGHT_OFFSET: tl.constexpr = True,  # False: weight_offset is 0, its add is left out
    STREAM: tl.constexpr = False,  # ONE_TILE: x, residual read once and y, residual_out written once: evict first
    RELOAD: tl.constexpr = False,  # ONE_TILE: y from x (+ residual) read again (from L2), not kept in registers
    # (split parts: the previous row block, across the exchange)
    SPLIT: tl.constexpr = 1,  # power of two ≥ the column parts of a row (1: no split; see _split_rows)
    COLUMN_STAGES: tl.constexpr = None,  # not ONE_TILE: the statistics pass's loads staged this deep (cp.async)
    CENTERED_PASS: tl.constexpr = False,  # not ONE_TILE, LayerNorm: per-lane Σh, then per-lane Σ(h − mean)²
    SPLIT_STAGES: tl.constexpr = None,  # SPLIT > 1: the row loop's loads staged this deep (cp.async); staged
    # or not, the exchange's wait spins in PTX (stats.await_row_sums: each lane on its own words)
    BF16_PAIRS: tl.constexpr = False,  # GPU: bf16 upcasts a register's pair at a time (convert.upcast)
    HOLD_WEIGHT: tl.constexpr = False,  # SPLIT > 1: the part's weight and bias loaded once, held across row blocks
    HAS_GATE: tl.constexpr = False,  # y = u·silu(gate) (Qwen3-Next's gated norm), SPLIT = 1 only
    U_DTYPE: tl.constexpr = None,  # HAS_GATE: where u = ĥ·(w + weight_offset) is rounded before the gate
    PTX: tl.constexpr = False,  # NVIDIA GPUs: the split parts' spin wait in inline PTX (ptx.py)
):
    """BLOCK_M rows of the forward (the module docstring's math, docs/design.md#kernel-family)::

        h = x (+ residual)    ĥ = (h − mean)·rstd    y = ĥ·(w + weight_offset) + b   (· silu(gate))

    storing y and, as asked, residual_out = h, mean and rstd (rstd = 1/√(Σ(h − mean)²/N + eps))."""
    tl.static_assert(not (HAS_GATE and SPLIT > 1), "split rows take no gate")
    EVICTION: tl.constexpr = "evict_first" if STREAM and (ONE_TILE and not RELOAD) else ""
    # Column tiles (RMSNorm's): L2 keeps the statistics pass's reads for the output pass, then drops
    # them. H200 A/B: RMSNorm 4096×65536 358.6 → 309.0 µs, 2048×131072 396.3 → 375.1; LayerNorm
    # mixed (4096×65536 +8.2, 2048×131072 −8.1), so it keeps the default policy.
    COLUMN_KEEP: tl.constexpr = "evict_last" if IS_RMS_NORM or CENTERED_PASS else ""
    COLUMN_DROP: tl.constexpr = "evict_first" if IS_RMS_NORM or CENTERED_PASS else ""
    CENTERED: tl.constexpr = CENTERED_PASS and not IS_RMS_NORM
    eps = tl.full([], eps, COMPUTE_DTYPE)  # float32 kernels round them as before, float64 ones keep them
    weight_offset = tl.full([], weight_offset, COMPUTE_DTYPE)
    if SPLIT > 1:
        _split_rows(X, RESIDUAL, W, B, Y, RESIDUAL_OUT, MEAN, RSTD, XCHG, M, N, HEADS, stride_x_row, stride_x_col,
                    stride_res_row, stride_res_col, stride_y_row, stride_res_out_row, eps, weight_offset, BLOCK_M,
                    BLOCK_N, IS_RMS_NORM, HAS_WEIGHT, HAS_BIAS, HAS_RESIDUAL, STORE_RESIDUAL_OUT, STORE_STATS,
                    COMPUTE_DTYPE, X_HAT_DTYPE, HAS_WEIGHT_OFFSET, SPLIT, SPLIT_STAGES, RELOAD, BF16_PAIRS,
                    HOLD_WEIGHT, PTX)
        return
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_mask = (rows < M) | EVEN_ROWS
    rows64 = rows.to(tl.int64)  # int64 offsets: tensors above 2**31 elements
    x_rows = rows64[:, None] * stride_x_row
    res_rows = rows64[:, None] * stride_res_row
    gate_rows = rows64[:, None] * stride_gate_row
    y_rows = rows64[:, None] * stride_y_row
    res_out_rows = rows64[:, None] * stride_res_out_row
    w_rows = (rows % HEADS).to(tl.int64)[:, None] * N
    cols = _lanes(X, Y, RESIDUAL, RESIDUAL_OUT, False, False, BLOCK_N)  # x and y only (_lanes)

    # ---- statistics
    if ONE_TILE:
        mask = row_mask[:, None] & ((cols < N) | EVEN_ROWS)[None, :]
        x_offs = x_rows + cols[None, :] * stride_x_col
        res_offs = res_rows + cols[None, :] * stride_res_col
        h = _load_h(X, RESIDUAL, x_offs, res_offs, mask, HAS_RESIDUAL, COMPUTE_DTYPE,
                    "evict_last" if RELOAD else EVICTION, BF16_PAIRS)
        if STORE_RESIDUAL_OUT:
            tl.store(RESIDUAL_OUT + res_out_rows + cols[None, :], h, mask=mask, eviction_policy=EVICTION)
        if IS_RMS_NORM:
            mean = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE)
            centered = h
        else:
            mean = tl.sum(h, axis=1) / N
            centered = tl.where(mask, h - mean[:, None], 0.0)
        var = tl.sum(centered * centered, axis=1) / N
    else:  # column tiles: Chan's merge of every tile, or (CENTERED_PASS) per-lane Σh
        mean = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE)
        m2 = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE)
        lane = tl.zeros([BLOCK_M, BLOCK_N], dtype=COMPUTE_DTYPE)
        for start in tl.range(0, N, BLOCK_N, num_stages=COLUMN_STAGES):
            c = start + cols
            mask, h = _column_tile(X, RESIDUAL, x_rows, res_rows, row_mask, c, N, stride_x_col, stride_res_col,
                                   HAS_RESIDUAL, COMPUTE_DTYPE, COLUMN_KEEP, BF16_PAIRS)
            if STORE_RESIDUAL_OUT:
                tl.store(RESIDUAL_OUT + res_out_rows + c[None, :], h, mask=mask)
            if CENTERED:
                lane += h
            else:
                mean, m2 = merge_tile_stats(h, mask, start, N, mean, m2, IS_RMS_NORM, BLOCK_M, BLOCK_N, COMPUTE_DTYPE)
        if CENTERED:  # as torch.compile's looped reduction: one live sum a pass, then Σ(h − mean)² per lane
            mean = tl.sum(lane, axis=1) / N
            lane = tl.zeros([BLOCK_M, BLOCK_N], dtype=COMPUTE_DTYPE)
            for start in tl.range(0, N, BLOCK_N, num_stages=COLUMN_STAGES):
                mask, h = _column_tile(X, RESIDUAL, x_rows, res_rows, row_mask, start + cols, N, stride_x_col,
                                       stride_res_col, HAS_RESIDUAL, COMPUTE_DTYPE, COLUMN_KEEP, BF16_PAIRS)
                d = tl.where(mask, h - mean[:, None], 0.0)
                lane += d * d
            m2 = tl.sum(lane, axis=1)
        var = m2 / N

    rstd = inverse_std(var, eps, COMPUTE_DTYPE)
    if STORE_STATS:
        tl.store(RSTD + rows64, rstd, mask=row_mask)
        if not IS_RMS_NORM:
            tl.store(MEAN + rows64, mean, mask=row_mask)

    # ---- output
    if ONE_TILE:
        if RELOAD:  # the row again (the same values: h rounds nowhere), so it need not stay live
            centered = _load_h(X, RESIDUAL, x_offs, res_offs, mask, HAS_RESIDUAL, COMPUTE_DTYPE,
                               "evict_first", BF16_PAIRS) - mean[:, None]
        y = _affine(centered * rstd[:, None], W, B, w_rows + cols[None, :], mask, weight_offset,
                    HAS_WEIGHT, HAS_BIAS, HAS_WEIGHT_OFFSET, COMPUTE_DTYPE, X_HAT_DTYPE, BF16_PAIRS)
        if HAS_GATE:
            y = _gated(y, GATE, gate_rows + cols[None, :] * stride_gate_col, mask, U_DTYPE, COMPUTE_DTYPE,
                       "evict_first" if RELOAD else EVICTION, BF16_PAIRS)
        tl.store(Y + y_rows + cols[None, :], y, mask=mask, eviction_policy="evict_first" if RELOAD else EVICTION)
    elif CENTERED:  # three reads: tile order, the loop counting columns (counting tiles, as below, the
        # kernel takes 50 registers, not 40: two programs an SM, not three; 8192×32768 317 → 356 µs, H200)
        for start in tl.range(0, N, BLOCK_N):
            _output_tile(X, RESIDUAL, W, B, GATE, Y, x_rows, res_rows, gate_rows, y_rows, w_rows, row_mask,
                         start + cols, N, stride_x_col, stride_res_col, stride_gate_col, mean, rstd, weight_offset,
                         HAS_RESIDUAL, HAS_WEIGHT, HAS_BIAS, HAS_WEIGHT_OFFSET, COMPUTE_DTYPE, X_HAT_DTYPE,
                         COLUMN_DROP, BF16_PAIRS, HAS_GATE, U_DTYPE)
    else:  # two reads: the tiles backwards (a snake), from those the statistics pass read last
        num_tiles = tl.cdiv(N, BLOCK_N)
        for i in tl.range(0, num_tiles):
            _output_tile(X, RESIDUAL, W, B, GATE, Y, x_rows, res_rows, gate_rows, y_rows, w_rows, row_mask,
                         (num_tiles - 1 - i) * BLOCK_N + cols, N, stride_x_col, stride_res_col, stride_gate_col,
                         mean, rstd, weight_offset, HAS_RESIDUAL, HAS_WEIGHT, HAS_BIAS, HAS_WEIGHT_OFFSET,
                         COMPUTE_DTYPE, X_HAT_DTYPE, COLUMN_DROP, BF16_PAIRS, HAS_GATE, U_DTYPE)
