"""Plain-PyTorch RMSNorm: the float64-capable reference of the tests and the CPU path.

Same math as the kernels (see `normkit.kernels`), computed in `compute_dtype`: float32 for
16/32-bit inputs, float64 for float64 inputs, or whatever the caller asks (tests pass float64
copies to get the reference).
"""

from typing import Optional, Tuple

import torch


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def rms_norm_fwd(x: torch.Tensor, weight: Optional[torch.Tensor], eps: float
                 ) -> Tuple[torch.Tensor, torch.Tensor]:
    """y = x·rstd·w with rstd = 1/sqrt(mean(x²) + eps) over the last dim; returns (y, rstd).

    y has x's dtype; rstd (shape x.shape[:-1]) has the compute dtype.
    """
    acc = compute_dtype(x.dtype)
    xc = x.to(acc)
    rstd = torch.rsqrt(xc.square().mean(dim=-1) + eps)
    y = xc * rstd.unsqueeze(-1)
    if weight is not None:
        y = y * weight.to(acc)
    return y.to(x.dtype), rstd


def rms_norm_bwd(x: torch.Tensor, weight: Optional[torch.Tensor], dy: torch.Tensor,
                 rstd: Optional[torch.Tensor], eps: float
                 ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """dx = rstd·(g − x̂·mean(g·x̂)) with g = dy·w, x̂ = x·rstd; dweight = Σ_rows dy·x̂.

    rstd=None recomputes it from x. dx has x's dtype, dweight weight's dtype (None without weight).
    """
    acc = compute_dtype(x.dtype)
    xc, dyc = x.to(acc), dy.to(acc)
    if rstd is None:
        rstd = torch.rsqrt(xc.square().mean(dim=-1) + eps)
    rstd = rstd.to(acc).reshape(x.shape[:-1]).unsqueeze(-1)
    x_hat = xc * rstd
    g = dyc * weight.to(acc) if weight is not None else dyc
    dx = rstd * (g - x_hat * (g * x_hat).mean(dim=-1, keepdim=True))
    dweight = None
    if weight is not None:
        dweight = (dyc * x_hat).reshape(-1, x.shape[-1]).sum(dim=0).to(weight.dtype)
    return dx.to(x.dtype), dweight
