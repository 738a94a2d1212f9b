"""LeetGPU-style RMSNorm backward: `solve` writes dx and dweight into caller-allocated tensors.

Here N is the number of rows and C the hidden size (the row length). With rstd recomputed from
x (nothing is saved by a forward), x̂ = x·rstd and g = dy·w, per row::

    rstd    = 1 / sqrt(mean(x²) + eps)
    dx      = rstd · (g − x̂ · mean(g·x̂))

and over all rows::

    dweight = Σ_rows dy · x̂

The math runs in normkit's Triton backward kernel, through the public `normkit.lowlevel.rms_norm_bwd`;
this module checks the arguments, reshapes and copies the results into the caller's tensors.
"""

import torch

from ..lowlevel import rms_norm_bwd
from .checks import check_solve_args


def solve(x: torch.Tensor, weight: torch.Tensor, dy: torch.Tensor, dx: torch.Tensor,
          dweight: torch.Tensor, N: int, C: int, eps: float) -> None:
    """Write dx (N, C) and dweight (C,) of RMSNorm for x, dy of shape (N, C) or flat (N·C,).

    All tensors float32 on one device; dx and dweight are caller-allocated outputs. Raises
    TypeError / ValueError naming the argument, before writing anything, on bad input.
    """
    eps = check_solve_args(x, weight, dy, dx, dweight, N, C, eps)
    # rms_norm_bwd allocates dx and dweight: one copy each into the caller's tensors
    dx_out, dweight_out, _, _ = rms_norm_bwd(x.view(N, C), weight, dy.view(N, C), eps=eps)
    dx.view(N, C).copy_(dx_out)
    dweight.copy_(dweight_out)
