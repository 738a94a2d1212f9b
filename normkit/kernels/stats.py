"""Row statistics: for rows walked in column tiles (`merge_tile_stats`, forward and backward) and
for rows split across programs (`exchange_row_sums`, backward)."""

import triton
import triton.language as tl


@triton.jit
def merge_tile_stats(h, mask, start, N, mean, m2, IS_RMS_NORM: tl.constexpr, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, COMPUTE_DTYPE: tl.constexpr):
    """Fold the tile h (columns start … start + BLOCK_N) into the running (mean, M2) of each row.

    RMSNorm: mean stays 0 and M2 = Σh². LayerNorm: Chan et al.'s parallel update, stable for large
    means — with n = start values seen and k in this tile, δ = mean_tile − mean:
    mean += δ·k/(n + k),  M2 += M2_tile + δ²·n·k/(n + k).
    """
    if IS_RMS_NORM:
        m2 += tl.sum(h * h, axis=1)
    else:
        seen = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE) + start
        count = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE) + tl.minimum(N - start, BLOCK_N)
        tile_mean = tl.sum(h, axis=1) / count
        d = tl.where(mask, h - tile_mean[:, None], 0.0)
        delta = tile_mean - mean
        mean += delta * count / (seen + count)
        m2 += tl.sum(d * d, axis=1) + delta * delta * seen * count / (seen + count)
    return mean, m2


@triton.jit
def exchange_row_sums(XCHG, COUNTER, group, iteration, part, parts, N, h, mask, sum_gh, sum_g,
                      IS_RMS_NORM: tl.constexpr, RECOMPUTE_STATS: tl.constexpr, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, SPLIT: tl.constexpr, COMPUTE_DTYPE: tl.constexpr):
    """Whole-row (Σ(g·h), Σg, mean, var) from this part's tile and its group's other parts.

    The `parts` programs of a group hold columns part·BLOCK_N … of the same BLOCK_M rows. Each
    writes its row sums to its slot of XCHG (layout (groups, 2, 4, SPLIT, BLOCK_M): iteration
    parity, quantity, part, row), increments the group's counter (integer atomic, acquire-release)
    and waits for (iteration + 1)·parts arrivals; then all read the `parts` slots back and reduce
    them in one fixed order, so every part gets the same bits.

    Part k contributes its sums and, recomputing, s₁ = its mean and s₂ = its M2 over its n_k
    columns (RMSNorm: s₂ = Σh²). The row's statistics then follow without cancellation::

        mean = Σ n_k·s₁ₖ / N        M2 = Σ s₂ₖ + Σ n_k·(s₁ₖ − mean)²        var = M2 / N
    """
    rows = tl.arange(0, BLOCK_M)
    slot = XCHG + ((group.to(tl.int64) * 2 + iteration % 2) * 4) * (SPLIT * BLOCK_M)
    mine = part * BLOCK_M + rows
    tl.store(slot + mine, sum_gh)
    tl.store(slot + SPLIT * BLOCK_M + mine, sum_g)
    if RECOMPUTE_STATS:
        if IS_RMS_NORM:
            tl.store(slot + 3 * SPLIT * BLOCK_M + mine, tl.sum(h * h, axis=1))
        else:
            n_k = tl.maximum(tl.sum(mask.to(COMPUTE_DTYPE), axis=1), 1.0)
            local_mean = tl.sum(h, axis=1) / n_k
            d = tl.where(mask, h - local_mean[:, None], 0.0)
            tl.store(slot + 2 * SPLIT * BLOCK_M + mine, local_mean)
            tl.store(slot + 3 * SPLIT * BLOCK_M + mine, tl.sum(d * d, axis=1))
    # Every thread's stores, then one release increment; spin (acquire) until all parts arrived.
    tl.debug_barrier()
    target = (iteration + 1) * parts
    arrived = tl.atomic_add(COUNTER + group, 1, sem="acq_rel") + 1
    while arrived < target:
        arrived = tl.atomic_add(COUNTER + group, 0, sem="acquire")
    tl.debug_barrier()
    ks = tl.arange(0, SPLIT)
    all_offs = ks[:, None] * BLOCK_M + rows[None, :]
    k_mask = (ks < parts)[:, None]
    # .cg: read from L2, never a stale L1 line of an earlier round.
    sum_gh = tl.sum(tl.load(slot + all_offs, mask=k_mask, other=0.0, cache_modifier=".cg"), axis=0)
    sum_g = tl.sum(tl.load(slot + SPLIT * BLOCK_M + all_offs, mask=k_mask, other=0.0, cache_modifier=".cg"),
                   axis=0)
    mean = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE)
    var = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE)
    if RECOMPUTE_STATS:
        s2 = tl.load(slot + 3 * SPLIT * BLOCK_M + all_offs, mask=k_mask, other=0.0, cache_modifier=".cg")
        if IS_RMS_NORM:
            var = tl.sum(s2, axis=0) / N
        else:
            s1 = tl.load(slot + 2 * SPLIT * BLOCK_M + all_offs, mask=k_mask, other=0.0, cache_modifier=".cg")
            n_k = tl.minimum(tl.maximum(N - ks * BLOCK_N, 0), BLOCK_N).to(COMPUTE_DTYPE)[:, None]
            mean = tl.sum(n_k * s1, axis=0) / N
            d = s1 - mean[None, :]
            var = (tl.sum(s2, axis=0) + tl.sum(tl.where(k_mask, n_k * d * d, 0.0), axis=0)) / N
    return sum_gh, sum_g, mean, var
