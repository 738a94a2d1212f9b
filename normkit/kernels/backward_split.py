"""The backward's split rows (SPLIT > 1, with ONE_TILE; docs/design.md#split-rows).

A row too wide for one program's registers is cut into P = cdiv(N, BLOCK_N) column parts, each held
in registers by its own program: program p is part p % P of group p // P, and a group's P programs
walk the same row blocks in lockstep. Each part publishes its per-row partial sums (Σ(g·h), Σg and,
recomputing, Σh² or its local mean and M2) to XCHG as 64-bit words tagged with the round (relaxed
atomic exchanges, no fence); each lane of a part spins until its partners' words carry the round's
tag (stats.await_row_sums), then the P partial sums are reduced in a fixed order (LayerNorm
statistics with Chan's merge): x and dy are read once, as with ONE_TILE, and the result is bitwise
reproducible. The exchange is pipelined one block deep: iteration t publishes block t, then waits
for block t − 1 (published a whole iteration earlier, so the wait rarely spins) and finishes it —
the parts hold two row blocks (three with PREFETCH) and one extra iteration finishes the last block.
XCHG is a ring of 4 slots (`stats.publish_row_sums` says why 4 is safe). All programs must be
resident at once (the launcher keeps the grid within one program per SM); Triton's interpreter runs
programs one after another, so it cannot run this path.
"""

import triton
import triton.language as tl

from .backward_tiles import (block_weight, compute_dh, compute_dh_scaled, dweight_term, row_loop_start, store_dh,
                             take_rows)
from .convert import upcast
from .ptx import load_row_stat
from .stats import await_row_sums, inverse_std, publish_row_sums


@triton.jit
def _add_pair(a, b, c, d):
    """tl.reduce's combine of two sums at once: (a, b) + (c, d). Split parts only — Triton 3.6's
    interpreter runs a combine function element by element in fp32 (docs/design.md#cpu-path)."""
    return a + c, b + d


@triton.jit
def _add_triple(a, b, c, d, e, f):
    """tl.reduce's combine of three sums at once (`_add_pair`'s, for the recomputing split parts)."""
    return a + d, b + e, c + f


@triton.jit
def split_rows(X, W, DY, DRESIDUAL_OUT, MEAN, RSTD, DX, DW_PARTIAL, DB_PARTIAL, XCHG, M, N, HEADS,
               stride_x_row, stride_x_col, stride_dy_row, stride_dy_col, stride_dres_row, stride_dres_col,
               stride_dx_row, eps, weight_offset, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               IS_RMS_NORM: tl.constexpr, HAS_WEIGHT: tl.constexpr, HAS_BIAS: tl.constexpr,
               HAS_DRESIDUAL: tl.constexpr, RECOMPUTE_STATS: tl.constexpr, COMPUTE_DTYPE: tl.constexpr,
               X_HAT_DTYPE: tl.constexpr, SPLIT: tl.constexpr, PREFETCH: tl.constexpr, ASYNC_STAGES: tl.constexpr,
               RELOAD: tl.constexpr, JOIN_STATS: tl.constexpr, EVEN_COLS: tl.constexpr, BF16_PAIRS: tl.constexpr,
               PTX: tl.constexpr):
    """norm_bwd_kernel for SPLIT > 1: the whole backward of one column part, its row blocks in lockstep
    with its group's other parts (this module's docstring). Ends with the part's dweight and dbias
    partials stored, as the whole-row path does."""
    KEEP_W: tl.constexpr = PREFETCH or BLOCK_N <= 8192
    # norm_bwd_kernel's prologue, written out: as a shared helper, ptxas (fed its line info) scheduled it otherwise
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

    col_mask, dw_acc, db_acc, w, next_h, next_dy = row_loop_start(
        X, DY, W, pid, head, HEADS, head_rows, cols, w_row, N, weight_offset, stride_x_row, stride_x_col,
        stride_dy_row, stride_dy_col, BLOCK_M, BLOCK_N, HAS_WEIGHT, KEEP_W, PREFETCH, EVEN_COLS, COMPUTE_DTYPE,
        BF16_PAIRS)

    # Iteration t publishes the row sums of block pid + t·G, then finishes block pid + (t−1)·G
    # with the sums its partners published one iteration ago. Iteration 0 finishes nothing
    # (its "previous" rows are masked off); the extra last iteration publishes nothing real.
    # RELOAD: block t − 1's h and dy are not held across the exchange but read again after it
    # (from L2, where iteration t − 1 left them): one row block fewer live in registers.
    prev_h = tl.zeros([BLOCK_M, BLOCK_N], dtype=X.dtype.element_ty)
    prev_dy = tl.zeros([BLOCK_M, BLOCK_N], dtype=DY.dtype.element_ty)
    for t in tl.range(0, tl.cdiv(num_row_blocks - pid, num_programs) + 1, num_stages=ASYNC_STAGES):
        row_block = pid + t * num_programs
        h, dy, next_h, next_dy = take_rows(X, DY, next_h, next_dy, row_block, num_programs, head, HEADS,
                                           head_rows, cols, col_mask, stride_x_row, stride_x_col,
                                           stride_dy_row, stride_dy_col, BLOCK_M, PREFETCH)
        w_block = block_weight(w, W, w_row, cols, col_mask, weight_offset, HAS_WEIGHT, KEEP_W, COMPUTE_DTYPE,
                               BF16_PAIRS)
        mask = ((row_block * BLOCK_M + tl.arange(0, BLOCK_M)) < head_rows)[:, None] & col_mask[None, :]
        h_c = upcast(h, COMPUTE_DTYPE, BF16_PAIRS)
        g = upcast(dy, COMPUTE_DTYPE, BF16_PAIRS)
        if HAS_WEIGHT:
            g = g * w_block[None, :]
        # the sums in one reduction (one round of cross-warp exchanges), with JOIN_STATS the
        # statistics' own too: Σh² (RMSNorm) or Σh (LayerNorm; else publish_row_sums reduces it)
        sum_g = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE)  # RMSNorm's dh does not read Σg (compute_dh)
        sum_h = None
        if IS_RMS_NORM and (RECOMPUTE_STATS and JOIN_STATS):
            sum_gh, sum_h = tl.reduce((g * h_c, h_c * h_c), 1, _add_pair)
        elif IS_RMS_NORM:
            sum_gh = tl.sum(g * h_c, axis=1)
        elif RECOMPUTE_STATS and JOIN_STATS:
            sum_gh, sum_g, sum_h = tl.reduce((g * h_c, g, h_c), 1, _add_triple)
        else:
            sum_gh, sum_g = tl.reduce((g * h_c, g), 1, _add_pair)
        publish_row_sums(XCHG, group, t, part, h_c, mask, N, sum_gh, sum_g, IS_RMS_NORM, RECOMPUTE_STATS,
                         BLOCK_M, SPLIT, COMPUTE_DTYPE, SUM_G=not IS_RMS_NORM, sum_h=sum_h, PTX=PTX)

        # ---- the previous block: its rows' sums, then dh and the parameter partials
        local = (row_block - num_programs) * BLOCK_M + tl.arange(0, BLOCK_M)
        row_mask = (local < head_rows) & (t > 0)
        rows64 = local.to(tl.int64) * HEADS + head
        if (IS_RMS_NORM and not RECOMPUTE_STATS) and (ASYNC_STAGES is not None and COMPUTE_DTYPE == tl.float32):
            # rstd in flight with the exchange's words, not staged by the pipeliner behind a barrier of its
            # own (`load_row_stat`): RMSNorm −0.5 to −1.3 %; LayerNorm's mean and rstd so lost 5-16 % (H200)
            rstd = load_row_stat(RSTD + rows64, row_mask, PTX).to(COMPUTE_DTYPE)
        elif not RECOMPUTE_STATS:
            rstd = tl.load(RSTD + rows64, mask=row_mask, other=0.0).to(COMPUTE_DTYPE)
            if not IS_RMS_NORM:
                mean = tl.load(MEAN + rows64, mask=row_mask, other=0.0).to(COMPUTE_DTYPE)
        sum_gh, sum_g, row_mean, var = await_row_sums(XCHG, group, t - 1, parts, N, IS_RMS_NORM,
                                                      RECOMPUTE_STATS, BLOCK_M, BLOCK_N, SPLIT, COMPUTE_DTYPE,
                                                      SUM_G=not IS_RMS_NORM, PTX=PTX)
        if RECOMPUTE_STATS:
            mean = row_mean
            rstd = inverse_std(var, eps, COMPUTE_DTYPE)
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
                g = dy_c * w_block[None, :]
            x_hat, dh = compute_dh(h_c, g, mean, rstd, sum_gh, sum_g, N, IS_RMS_NORM)
        else:  # LayerNorm: rstd folded in first, two element-wise ops fewer (compute_dh_scaled)
            # ĥ in one FFMA where h is 2-byte (its error bound: `compute_dh_scaled`): 0.5-1 % faster (H200)
            x_hat, dh = compute_dh_scaled(h_c, dy_c, w_block if HAS_WEIGHT else None, mean, rstd, sum_gh, sum_g, N,
                                          16 == X.dtype.element_ty.primitive_bitwidth)  # (constant first: Triton 3.3)
        store_dh(DX, DRESIDUAL_OUT, rows64[:, None] * stride_dx_row + cols[None, :],
                 rows64[:, None] * stride_dres_row + cols[None, :] * stride_dres_col, dh, mask,
                 HAS_DRESIDUAL, COMPUTE_DTYPE, BF16_PAIRS)
        if HAS_WEIGHT:  # unmasked: `dweight_term`
            dw_acc += tl.sum(dweight_term(dy_c, x_hat, X_HAT_DTYPE, COMPUTE_DTYPE, BF16_PAIRS), axis=0)
        if HAS_BIAS:
            db_acc += tl.sum(dy_c, axis=0)
        if not RELOAD:
            prev_h, prev_dy = h, dy

    if HAS_WEIGHT:
        tl.store(DW_PARTIAL + partial_offset + cols, dw_acc, mask=col_mask)
    if HAS_BIAS:
        tl.store(DB_PARTIAL + partial_offset + cols, db_acc, mask=col_mask)
