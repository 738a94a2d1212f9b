"""Autograd-aware RMSNorm: `rms_norm(x, weight=None, *, eps=1e-6)`.

The autograd.Function works on a 2-D (M, N) view (reshapes stay outside it, so torch.compile sees
stable ranks); it saves x, weight and the float32 rstd from the forward and calls the backward op
with the saved rstd. It never launches kernels itself: that is `normkit.ops`.
"""

from typing import Optional

import torch

from . import ops, validation

Tensor = torch.Tensor


class RMSNormFunction(torch.autograd.Function):
    """y = x·rstd·w on (M, N) rows; backward gives (dx, dweight)."""

    @staticmethod
    def forward(ctx, x: Tensor, weight: Optional[Tensor], eps: float) -> Tensor:
        # rstd is M floats: always saved, so the backward never re-reads x to recompute it.
        out, rstd = ops.fwd_2d(x, weight, eps, True)
        ctx.save_for_backward(x, weight, rstd)
        ctx.eps = eps
        return out

    @staticmethod
    def backward(ctx, dout: Tensor):
        x, weight, rstd = ctx.saved_tensors
        dx, dweight = ops.bwd_2d(x, weight, dout, rstd, ctx.eps)
        if weight is None or not ctx.needs_input_grad[1]:
            dweight = None
        return dx, dweight, None


def rms_norm(x: Tensor, weight: Optional[Tensor] = None, *, eps: float = 1e-6) -> Tensor:
    """RMSNorm over the last dimension, differentiable in x and weight.

    y = x / sqrt(mean(x², dim=-1) + eps) · weight, with x of shape (..., N), weight (N,) or None.
    Statistics accumulate in float32 (float64 for float64 x); y has x's dtype and shape.
    """
    eps = validation.check_fwd(x, weight, eps)
    n = x.shape[-1]
    out = RMSNormFunction.apply(x.reshape(-1, n), weight, eps)
    return out.view(x.shape)
