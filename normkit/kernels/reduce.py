"""Finisher: grad_k[n] = Σ_{p < G} PARTIAL[k, p, n], summed in a fixed order, for k < K ≤ 2.

(PARTIAL may have more than G rows: sized for the grid the tile asked for, when fewer of the
backward's programs fit on the device; rows ≥ G are not read.)

One launch finishes every parameter gradient of a backward: k = 0 → OUT (dweight, or dbias when
there is no weight), k = 1 → OUT2 (dbias), the gradient chosen by the grid's second axis. Each
program owns BLOCK_N columns of one gradient and walks its G partial rows BLOCK_G at a time, so
the order of the additions depends only on (G, BLOCK_G): bitwise reproducible, no atomics. The
result is cast to the parameter's dtype on store.

USE_PDL (sm_90+): launched as a programmatic dependent of the backward kernel, whose programs
signal `ptx.launch_dependents` as they start; this kernel's programs can then be placed on SMs as
the backward's programs exit, and `ptx.wait_for_primary` holds them until the backward grid has completed and
its partial rows are visible — the launch latency overlaps the backward's tail.
"""

import triton
import triton.language as tl

from .ptx import wait_for_primary


@triton.jit
def sum_partials_kernel(
    PARTIAL, OUT, OUT2,  # partial (K, ≥ G, N) in ACC dtype, rows contiguous; out, out2 (N,) (out2 used when K = 2)
    G, N,
    stride_k,  # elements from PARTIAL[k] to PARTIAL[k + 1] (the buffer may hold more than G rows)
    BLOCK_G: tl.constexpr,
    BLOCK_N: tl.constexpr,
    USE_PDL: tl.constexpr = False,
):
    """OUT[n] = Σ_{p < G} PARTIAL[0, p, n] (dweight, or dbias without a weight) and, with a second
    grid column, OUT2[n] = Σ_{p < G} PARTIAL[1, p, n] (dbias), added BLOCK_G rows at a time in a fixed
    order (docs/design.md#finisher)."""
    if USE_PDL:
        wait_for_primary()
    which = tl.program_id(1)
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    base = PARTIAL + which.to(tl.int64) * stride_k
    acc = tl.zeros([BLOCK_G, BLOCK_N], dtype=PARTIAL.dtype.element_ty)
    for start in tl.range(0, G, BLOCK_G):
        rows = start + tl.arange(0, BLOCK_G)
        mask = (rows < G)[:, None] & col_mask[None, :]
        acc += tl.load(base + rows.to(tl.int64)[:, None] * N + cols[None, :], mask=mask, other=0.0)
    total = tl.sum(acc, axis=0)
    if which == 0:
        tl.store(OUT + cols, total.to(OUT.dtype.element_ty), mask=col_mask)
    else:
        tl.store(OUT2 + cols, total.to(OUT2.dtype.element_ty), mask=col_mask)
