"""nn.Module drop-ins backed by normkit's kernels."""

import math

import torch

from .functional import rms_norm


class RMSNorm(torch.nn.RMSNorm):
    """`torch.nn.RMSNorm` with normkit's kernels; same constructor, parameters and semantics.

    Normalises over the trailing ``normalized_shape`` dimensions (flattened into one row of
    length N = prod(normalized_shape)). ``eps=None`` means what PyTorch's kernel does: the
    machine epsilon of the compute dtype, i.e. ``torch.finfo(torch.float32).eps`` for 16-bit
    inputs (not bfloat16's 2**-7, which the documentation's wording suggests) and x's own for
    float32/float64.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = tuple(self.normalized_shape)
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
        if tuple(x.shape[x.dim() - len(shape):]) != shape or x.dim() < len(shape):
            raise ValueError(f"x must end with the dimensions normalized_shape={shape}, "
                             f"got shape {tuple(x.shape)}")
        eps = self.eps if self.eps is not None else _default_eps(x.dtype)
        n = math.prod(shape)
        weight = self.weight.reshape(n) if self.weight is not None else None
        lead = x.shape[: x.dim() - len(shape)]
        return rms_norm(x.reshape(*lead, n), weight, eps=eps).view(x.shape)


def _default_eps(dtype: torch.dtype) -> float:
    return torch.finfo(torch.float64 if dtype == torch.float64 else torch.float32).eps
