"""RMSNorm backward kernel family.

With x̂ = x·rstd and g = dy·w (g = dy when HAS_WEIGHT is False), per row::

    dx = rstd · (g − x̂ · mean(g·x̂))
       = rstd · g − x · rstd³ · Σ(g·x) / N

and over all rows::

    dweight = Σ_rows dy · x̂

rstd is either loaded (saved by the forward) or, with RECOMPUTE_RSTD, recomputed from x in the
same pass that accumulates Σ(g·x): the LeetGPU #142 contract where nothing is saved.

Persistent grid. Program p owns row blocks p, p + G, p + 2G, … (G = number of programs). It keeps
its share of dweight, Σ over its rows of dy·x̂, in COMPUTE_DTYPE and writes it as row p of
DW_PARTIAL (G, N) — even when it owned no rows (then the row is zero). `sum_partials_kernel` then
sums the G rows in a fixed order: no atomics, so dweight and dx are bitwise reproducible.

Tiling. ONE_TILE keeps x, dy, w and the dweight partial of a whole row in registers. Otherwise
each row block is walked twice in BLOCK_N-wide tiles (statistics, then dx; the second read mostly
hits L2) and the partial row lives in DW_PARTIAL itself, read-modified-written tile by tile by its
one owner program (a barrier orders the re-read; still no atomics).
"""

import triton
import triton.language as tl


@triton.jit
def norm_bwd_kernel(
    X, W, DY, DX, RSTD, DW_PARTIAL,  # x, dy strided (M, N); dx row-major; rstd (M,); partial (G, N)
    M, N,
    stride_x_row, stride_x_col, stride_dy_row, stride_dy_col, stride_dx_row,
    eps,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ONE_TILE: tl.constexpr,
    HAS_WEIGHT: tl.constexpr,
    RECOMPUTE_RSTD: tl.constexpr,
    COMPUTE_DTYPE: tl.constexpr,
):
    pid = tl.program_id(0)
    num_programs = tl.num_programs(0)
    num_row_blocks = tl.cdiv(M, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    if HAS_WEIGHT:
        partial_row = DW_PARTIAL + pid.to(tl.int64) * N

    if ONE_TILE:
        col_mask = cols < N
        if HAS_WEIGHT:
            w = tl.load(W + cols, mask=col_mask, other=0.0).to(COMPUTE_DTYPE)
        dw_acc = tl.zeros([BLOCK_N], dtype=COMPUTE_DTYPE)
    elif HAS_WEIGHT:
        for start in tl.range(0, N, BLOCK_N):
            c = start + cols
            tl.store(partial_row + c, tl.zeros([BLOCK_N], dtype=COMPUTE_DTYPE), mask=c < N)
        tl.debug_barrier()

    for row_block in tl.range(pid, num_row_blocks, num_programs):
        rows = row_block * BLOCK_M + tl.arange(0, BLOCK_M)
        row_mask = rows < M
        rows64 = rows.to(tl.int64)  # int64 offsets: tensors above 2**31 elements
        x_rows = X + rows64[:, None] * stride_x_row
        dy_rows = DY + rows64[:, None] * stride_dy_row
        dx_rows = DX + rows64[:, None] * stride_dx_row

        if ONE_TILE:
            mask = row_mask[:, None] & col_mask[None, :]
            x = tl.load(x_rows + cols[None, :] * stride_x_col, mask=mask, other=0.0).to(COMPUTE_DTYPE)
            dy = tl.load(dy_rows + cols[None, :] * stride_dy_col, mask=mask, other=0.0).to(COMPUTE_DTYPE)
            g = dy * w[None, :] if HAS_WEIGHT else dy
            sum_gx = tl.sum(g * x, axis=1)
            if RECOMPUTE_RSTD:
                rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / N + eps)
        else:
            sum_gx = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE)
            sum_sq = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE)
            for start in tl.range(0, N, BLOCK_N):
                c = start + cols
                mask = row_mask[:, None] & (c < N)[None, :]
                xt = tl.load(x_rows + c[None, :] * stride_x_col, mask=mask, other=0.0).to(COMPUTE_DTYPE)
                gt = tl.load(dy_rows + c[None, :] * stride_dy_col, mask=mask, other=0.0).to(COMPUTE_DTYPE)
                if HAS_WEIGHT:
                    gt = gt * tl.load(W + c, mask=c < N, other=0.0).to(COMPUTE_DTYPE)[None, :]
                sum_gx += tl.sum(gt * xt, axis=1)
                if RECOMPUTE_RSTD:
                    sum_sq += tl.sum(xt * xt, axis=1)
            if RECOMPUTE_RSTD:
                rstd = 1.0 / tl.sqrt(sum_sq / N + eps)

        if not RECOMPUTE_RSTD:
            rstd = tl.load(RSTD + rows64, mask=row_mask, other=0.0).to(COMPUTE_DTYPE)
        # Rows past M must contribute nothing to dweight, even when eps = 0 makes 1/sqrt(0) = inf.
        rstd = tl.where(row_mask, rstd, 0.0)
        # dx = rstd·g − x·(rstd³·Σ(g·x)/N): precompute the per-row coefficient of x.
        x_coef = rstd * rstd * rstd * sum_gx / N

        if ONE_TILE:
            dx = g * rstd[:, None] - x * x_coef[:, None]
            tl.store(dx_rows + cols[None, :], dx.to(DX.dtype.element_ty), mask=mask)
            if HAS_WEIGHT:
                dw_acc += tl.sum(dy * (x * rstd[:, None]), axis=0)
        else:
            for start in tl.range(0, N, BLOCK_N):
                c = start + cols
                mask = row_mask[:, None] & (c < N)[None, :]
                xt = tl.load(x_rows + c[None, :] * stride_x_col, mask=mask, other=0.0).to(COMPUTE_DTYPE)
                dyt = tl.load(dy_rows + c[None, :] * stride_dy_col, mask=mask, other=0.0).to(COMPUTE_DTYPE)
                gt = dyt
                if HAS_WEIGHT:
                    gt = dyt * tl.load(W + c, mask=c < N, other=0.0).to(COMPUTE_DTYPE)[None, :]
                dx = gt * rstd[:, None] - xt * x_coef[:, None]
                tl.store(dx_rows + c[None, :], dx.to(DX.dtype.element_ty), mask=mask)
                if HAS_WEIGHT:
                    partial = tl.load(partial_row + c, mask=c < N, other=0.0)
                    partial += tl.sum(dyt * (xt * rstd[:, None]), axis=0)
                    tl.store(partial_row + c, partial, mask=c < N)
            tl.debug_barrier()

    if ONE_TILE and HAS_WEIGHT:
        tl.store(partial_row + cols, dw_acc, mask=col_mask)
