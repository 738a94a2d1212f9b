"""The seed problem: run normkit's Triton RMSNorm forward once and compare it with plain torch.

    y = x · rstd · w,   rstd = 1 / sqrt(mean(x², over the row) + eps)
"""

import secrets
from typing import Tuple

import torch

from ..lowlevel import rms_norm_fwd
from .checks import check_eps, check_positive_int
from .device import challenge_device

# fp32 kernel vs fp32 torch: both sum N squares in float32, in different orders; at N = 256 the
# results differ by a few ulp (~1e-7 relative), so 1e-5 leaves room without hiding a real bug.
ATOL = 1e-5
RTOL = 1e-5
SEED = 0
CALL = "run(M=64, N=256, eps=1e-6) -> bool"  # how the grader calls a solution, for messages


def inputs(M: int, N: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """The statement's inputs, on the CPU: from torch.Generator().manual_seed(SEED), x = randn(M, N)
    then weight = randn(N)."""
    generator = torch.Generator().manual_seed(SEED)
    x = torch.randn(M, N, generator=generator)
    return x, torch.randn(N, generator=generator)


def probe_inputs(M: int, N: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """Another x (M, N) and weight (N,), from a seed nobody can know in advance: the grader replays
    the solution's launch on them, so a launch that copies a y made elsewhere is caught."""
    generator = torch.Generator().manual_seed(secrets.randbits(63))
    return torch.randn(M, N, generator=generator), torch.randn(N, generator=generator)


def torch_reference(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """x · rsqrt(mean(x²) + eps) · w in plain torch, in x's dtype."""
    return x * torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + eps) * weight


def run(M: int = 64, N: int = 256, eps: float = 1e-6) -> bool:
    """Launch normkit's Triton forward on seeded (M, N) float32 inputs; True when it matches torch.

    Inputs live on the GPU, or on the CPU under TRITON_INTERPRET=1 (RuntimeError otherwise).
    Returns the Python bool of torch.allclose(triton_out, torch_reference, atol=ATOL, rtol=RTOL).
    """
    M = check_positive_int("M", M)
    N = check_positive_int("N", N)
    eps = check_eps(eps)
    device = challenge_device()
    x, weight = (t.to(device) for t in inputs(M, N))
    out, _, _ = rms_norm_fwd(x, weight, eps=eps)
    return bool(torch.allclose(out, torch_reference(x, weight, eps), atol=ATOL, rtol=RTOL))
