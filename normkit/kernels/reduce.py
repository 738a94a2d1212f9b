"""Finisher: dweight[n] = Σ_{p < G} DW_PARTIAL[p, n], summed in a fixed order.

Each program owns BLOCK_N columns and walks the G partial rows BLOCK_G at a time, so the order
of the additions depends only on (G, BLOCK_G): bitwise reproducible, no atomics. The result is
cast to the parameter's dtype on store.
"""

import triton
import triton.language as tl


@triton.jit
def sum_partials_kernel(
    PARTIAL, OUT,  # partial (G, N) row-major in ACC dtype; out (N,)
    G, N,
    BLOCK_G: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    acc = tl.zeros([BLOCK_G, BLOCK_N], dtype=PARTIAL.dtype.element_ty)
    for start in tl.range(0, G, BLOCK_G):
        rows = start + tl.arange(0, BLOCK_G)
        mask = (rows < G)[:, None] & col_mask[None, :]
        acc += tl.load(PARTIAL + rows.to(tl.int64)[:, None] * N + cols[None, :], mask=mask, other=0.0)
    tl.store(OUT + cols, tl.sum(acc, axis=0).to(OUT.dtype.element_ty), mask=col_mask)
