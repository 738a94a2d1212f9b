"""Row statistics shared by the forward and backward kernels, for rows walked in column tiles."""

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
