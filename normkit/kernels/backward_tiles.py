"""The row-block pieces both backward paths share (backward.py's whole rows and column tiles,
backward_split.py's split parts): loading h, dy and the weight, dh, and dweight's term; and the
gate's pieces (whole rows and column tiles only). The math is in backward.py's docstring."""

import triton
import triton.language as tl

from .convert import upcast


@triton.jit
def load_row_block(PTR, row_block, head, HEADS, head_rows, cols, col_mask, stride_row, stride_col,
                   BLOCK_M: tl.constexpr):
    """One row block of one head of an (M, N) tensor, as stored (not upcast); rows past the end load 0."""
    local = row_block * BLOCK_M + tl.arange(0, BLOCK_M)
    rows64 = local.to(tl.int64) * HEADS + head
    mask = (local < head_rows)[:, None] & col_mask[None, :]
    return tl.load(PTR + rows64[:, None] * stride_row + cols[None, :] * stride_col, mask=mask, other=0.0)


@triton.jit
def load_rows(X, DY, row_block, head, HEADS, head_rows, cols, col_mask,
              stride_x_row, stride_x_col, stride_dy_row, stride_dy_col, BLOCK_M: tl.constexpr):
    """(h, dy) of one row block of one head, as stored (not upcast); rows past the end load 0."""
    h = load_row_block(X, row_block, head, HEADS, head_rows, cols, col_mask, stride_x_row, stride_x_col, BLOCK_M)
    dy = load_row_block(DY, row_block, head, HEADS, head_rows, cols, col_mask, stride_dy_row, stride_dy_col, BLOCK_M)
    return h, dy


@triton.jit
def take_rows(X, DY, next_h, next_dy, row_block, num_programs, head, HEADS, head_rows, cols, col_mask,
              stride_x_row, stride_x_col, stride_dy_row, stride_dy_col, BLOCK_M: tl.constexpr,
              PREFETCH: tl.constexpr):
    """(h, dy, next_h, next_dy) for `row_block`: with PREFETCH the tile loaded one iteration ago,
    and the loads of the block `num_programs` further go out now; without, loaded here (next_h and
    next_dy pass through untouched)."""
    if PREFETCH:
        h, dy = next_h, next_dy
        next_h, next_dy = load_rows(X, DY, row_block + num_programs, head, HEADS, head_rows, cols, col_mask,
                                    stride_x_row, stride_x_col, stride_dy_row, stride_dy_col, BLOCK_M)
    else:
        h, dy = load_rows(X, DY, row_block, head, HEADS, head_rows, cols, col_mask,
                          stride_x_row, stride_x_col, stride_dy_row, stride_dy_col, BLOCK_M)
    return h, dy, next_h, next_dy


@triton.jit
def load_weight(W, w_row, cols, col_mask, weight_offset, COMPUTE_DTYPE: tl.constexpr, BF16_PAIRS: tl.constexpr = False):
    """w + weight_offset for the columns `cols` of this head's weight row, upcast."""
    return upcast(tl.load(W + w_row + cols, mask=col_mask, other=0.0), COMPUTE_DTYPE, BF16_PAIRS) + weight_offset


@triton.jit
def row_loop_start(X, DY, W, pid, head, HEADS, head_rows, cols, w_row, N, weight_offset,
                   stride_x_row, stride_x_col, stride_dy_row, stride_dy_col, BLOCK_M: tl.constexpr,
                   BLOCK_N: tl.constexpr, HAS_WEIGHT: tl.constexpr, KEEP_W: tl.constexpr, PREFETCH: tl.constexpr,
                   EVEN_COLS: tl.constexpr, COMPUTE_DTYPE: tl.constexpr, BF16_PAIRS: tl.constexpr):
    """(col_mask, dw_acc, db_acc, w, next_h, next_dy) before the row loop of a whole-row tile or split
    part: its columns' mask, the zeroed parameter partials, the weight held across row blocks
    (KEEP_W; else 0, `block_weight` loads it) and, with PREFETCH, the first row block's h and dy."""
    col_mask = cols < N
    if EVEN_COLS:  # N a multiple of BLOCK_N: the mask folds away (fewer instructions a row block)
        col_mask = tl.full([BLOCK_N], 1, tl.int1)
    dw_acc = tl.zeros([BLOCK_N], dtype=COMPUTE_DTYPE)
    db_acc = tl.zeros([BLOCK_N], dtype=COMPUTE_DTYPE)
    w = 0.0
    if HAS_WEIGHT and KEEP_W:  # the same columns every row block: loaded once
        w = load_weight(W, w_row, cols, col_mask, weight_offset, COMPUTE_DTYPE, BF16_PAIRS)
    next_h, next_dy = 0, 0  # (placeholders without PREFETCH: take_rows passes them through)
    if PREFETCH:
        next_h, next_dy = load_rows(X, DY, pid, head, HEADS, head_rows, cols, col_mask,
                                    stride_x_row, stride_x_col, stride_dy_row, stride_dy_col, BLOCK_M)
    return col_mask, dw_acc, db_acc, w, next_h, next_dy


@triton.jit
def block_weight(w, W, w_row, cols, col_mask, weight_offset, HAS_WEIGHT: tl.constexpr, KEEP_W: tl.constexpr,
                 COMPUTE_DTYPE: tl.constexpr, BF16_PAIRS: tl.constexpr):
    """This row block's w + weight_offset: `w` as held (KEEP_W), or loaded again — the widest rows
    without prefetch, where holding it spilled (4096×16384: config/backward.py)."""
    if HAS_WEIGHT and not KEEP_W:
        w = load_weight(W, w_row, cols, col_mask, weight_offset, COMPUTE_DTYPE, BF16_PAIRS)
    return w


@triton.jit
def compute_dh(h, g, mean, rstd, sum_gh, sum_g, N, IS_RMS_NORM: tl.constexpr, RMS_SKIPS_SUM_G: tl.constexpr = True):
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
def compute_dh_scaled(h, dy, w, mean, rstd, sum_gh, sum_g, N, CENTER_FMA: tl.constexpr = False):
    """LayerNorm's `compute_dh` (ĥ, dh·rstd) with rstd folded in before the element-wise terms:
    dh·rstd = dy·(w·rstd) − (ĥ·c₁·rstd + c₂·rstd) — per element the weight's product, ĥ, one FFMA for
    the bracket and one for dh·rstd, against `compute_dh`'s g, ĥ, dh, − c₂ and · rstd (w None: no weight).
    It takes dy and w apart, not `compute_dh`'s g = dy·w: folded as g·rstd − (…) inside `compute_dh` the loop counted
    552 instructions, not 541, and LayerNorm's fp32 parts took 198 registers, not 159 — two programs
    an SM, not three (tools/ptx_stats.py --sass, sm_90; docs/design.md#tried-and-rejected).
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
def store_dh(DX, DRESIDUAL_OUT, dx_offs, dres_offs, dh, mask, HAS_DRESIDUAL: tl.constexpr,
             COMPUTE_DTYPE: tl.constexpr, BF16_PAIRS: tl.constexpr = False):
    """dx = dh (+ dresidual_out, the gradient arriving on residual_out)."""
    if HAS_DRESIDUAL:
        dh += upcast(tl.load(DRESIDUAL_OUT + dres_offs, mask=mask, other=0.0), COMPUTE_DTYPE, BF16_PAIRS)
    tl.store(DX + dx_offs, dh, mask=mask)


@triton.jit
def dweight_term(dy, x_hat, X_HAT_DTYPE: tl.constexpr, COMPUTE_DTYPE: tl.constexpr, BF16_PAIRS: tl.constexpr = False):
    """dy · ĥ, the dweight partial's term, with ĥ rounded to X_HAT_DTYPE as the forward scaled it.

    No mask, and the same bits as with one: a lane of a row past the end loaded x = dy = 0 and has
    rstd = 0 and mean = 0 (ĥ = 0), so it adds +0; a lane past N sums into a column of the partial
    that is never stored. (A `tl.where` on the mask had cost selects: 60 of the 811 instructions a
    thread spent a row block in RMSNorm's bf16 1 × 4096 split part, `tools/ptx_stats.py --sass`.)"""
    return dy * upcast(x_hat.to(X_HAT_DTYPE), COMPUTE_DTYPE, BF16_PAIRS)


@triton.jit
def gate_dy(dy, gate):
    """(dy·silu(gate), σ(gate)) for y = u·silu(gate): the gradient the norm receives in place of dy,
    and the sigmoid `dgate_term` reuses (silu(g) = g·σ(g))."""
    sigmoid = 1.0 / (1.0 + tl.exp(-gate))
    return dy * (gate * sigmoid), sigmoid


@triton.jit
def dgate_term(dy, gate, sigmoid, x_hat, w, HAS_WEIGHT: tl.constexpr, X_HAT_DTYPE: tl.constexpr,
               U_DTYPE: tl.constexpr, COMPUTE_DTYPE: tl.constexpr, BF16_PAIRS: tl.constexpr = False):
    """dgate = dy·u·silu'(gate), silu'(g) = σ(g)·(1 + g·(1 − σ(g))), with u = x̂·(w + weight_offset)
    rounded as the forward rounded it (x̂ to X_HAT_DTYPE, u to U_DTYPE); `w` is the row's weight (with
    the offset), unused without HAS_WEIGHT."""
    u = upcast(x_hat.to(X_HAT_DTYPE), COMPUTE_DTYPE, BF16_PAIRS)
    if HAS_WEIGHT:
        u = u * w[None, :]
    u = upcast(u.to(U_DTYPE), COMPUTE_DTYPE, BF16_PAIRS)
    return dy * u * (sigmoid * (1.0 + gate * (1.0 - sigmoid)))
