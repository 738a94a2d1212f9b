"""Triton kernels, nothing else: no allocation, no validation, no dispatch.

One forward family (`norm_fwd_kernel`), one backward family (`norm_bwd_kernel`) and the
deterministic finisher that sums per-program parameter-gradient partials (`sum_partials_kernel`).
Features are ``tl.constexpr`` flags of these kernels, never sibling copies.

forward.py and backward.py hold the kernels and their math; backward_split.py the backward's split-row
path and backward_tiles.py the pieces its two paths share; stats.py the statistics and the split parts'
exchange; convert.py the upcasts; reduce.py the finisher; ptx.py every piece of inline PTX, each beside the
portable Triton that the PTX constexpr chooses off NVIDIA GPUs.
"""

from triton.runtime.interpreter import InterpretedFunction

from .backward import norm_bwd_kernel
from .forward import norm_fwd_kernel
from .reduce import sum_partials_kernel

# Triton chose at decoration time (from TRITON_INTERPRET): compiled kernels or its CPU interpreter.
INTERPRETED = isinstance(norm_fwd_kernel, InterpretedFunction)

__all__ = ["norm_fwd_kernel", "norm_bwd_kernel", "sum_partials_kernel", "INTERPRETED"]
