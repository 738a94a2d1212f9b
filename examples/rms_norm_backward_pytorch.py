"""A plain-PyTorch solution of the RMSNorm-backward challenge (no custom kernel).

Grade it with:  python -m normkit challenge rms-norm-backward --solution examples/rms_norm_backward_pytorch.py --action submit

Math, per row r of x (N rows × C columns, float32):
    rstd = 1 / sqrt(mean(x²) + eps),  x̂ = x·rstd,  g = dy·w
    dx = rstd·(g − x̂·mean(g·x̂)),      dweight = Σ_rows dy·x̂
"""

import torch


def solve(x: torch.Tensor, weight: torch.Tensor, dy: torch.Tensor, dx: torch.Tensor,
          dweight: torch.Tensor, N: int, C: int, eps: float) -> None:
    x = x.view(N, C)
    dy = dy.view(N, C)
    rstd = torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + eps)
    x_hat = x * rstd
    g = dy * weight
    dx.view(N, C).copy_(rstd * (g - x_hat * (g * x_hat).mean(dim=1, keepdim=True)))
    dweight.copy_((dy * x_hat).sum(dim=0))
