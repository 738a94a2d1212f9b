"""Input checks, in one place. Each error names the argument, what was expected and what was given.

Everything here runs before any output is allocated or any caller tensor is written.
"""

import math
from typing import Optional

import torch

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_DTYPE_NAMES = "float16, bfloat16, float32 or float64"


def check_float_tensor(name: str, tensor, *, optional: bool = False) -> None:
    """`tensor` must be a torch.Tensor of a supported floating dtype (or None when optional)."""
    if tensor is None and optional:
        return
    if not isinstance(tensor, torch.Tensor):
        expected = "a torch.Tensor or None" if optional else "a torch.Tensor"
        raise TypeError(f"{name} must be {expected}, got {type(tensor).__name__}")
    if tensor.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"{name} must have a floating dtype ({_DTYPE_NAMES}), got {tensor.dtype}")


def check_same_device(name: str, tensor: Optional[torch.Tensor], x: torch.Tensor) -> None:
    if tensor is not None and tensor.device != x.device:
        raise ValueError(f"{name} must be on x's device ({x.device}), got {tensor.device}")


def check_shape(name: str, tensor: Optional[torch.Tensor], expected: tuple) -> None:
    if tensor is not None and tuple(tensor.shape) != tuple(expected):
        raise ValueError(f"{name} must have shape {tuple(expected)}, got {tuple(tensor.shape)}")


def check_eps(eps) -> float:
    """eps must be a real number, finite and ≥ 0; returned as a Python float."""
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise TypeError(f"eps must be a float, got {type(eps).__name__}")
    eps = float(eps)
    if math.isnan(eps) or math.isinf(eps) or eps < 0:
        raise ValueError(f"eps must be a finite number >= 0, got {eps}")
    return eps


def check_x(x) -> int:
    """x must be a floating tensor of shape (..., N) with N ≥ 1; returns N."""
    check_float_tensor("x", x)
    if x.dim() == 0:
        raise ValueError("x must have at least one dimension (..., N), got a 0-d tensor")
    if x.shape[-1] == 0:
        raise ValueError(f"x's last dimension N must be >= 1, got shape {tuple(x.shape)}")
    return x.shape[-1]


def check_weight(weight, x: torch.Tensor, name: str = "weight") -> None:
    check_float_tensor(name, weight, optional=True)
    check_shape(name, weight, (x.shape[-1],))
    check_same_device(name, weight, x)


def stats_dtype(x_dtype: torch.dtype) -> torch.dtype:
    """dtype of saved statistics (rstd): float32, or float64 for float64 inputs."""
    return torch.float64 if x_dtype == torch.float64 else torch.float32


def check_fwd(x, weight, eps) -> float:
    check_x(x)
    check_weight(weight, x)
    return check_eps(eps)


def check_bwd(x, weight, dout, rstd, eps) -> float:
    eps = check_fwd(x, weight, eps)
    check_float_tensor("dout", dout)
    check_shape("dout", dout, x.shape)
    check_same_device("dout", dout, x)
    if rstd is not None:
        check_float_tensor("rstd", rstd)
        rows = math.prod(x.shape[:-1])
        check_shape("rstd", rstd, (rows,))
        if rstd.dtype != stats_dtype(x.dtype):
            raise TypeError(f"rstd must have dtype {stats_dtype(x.dtype)} (as rms_norm_fwd saves it "
                            f"for x of dtype {x.dtype}), got {rstd.dtype}")
        check_same_device("rstd", rstd, x)
    return eps
