"""Input checks, in one place. Each error names the argument, what was expected and what was given.

Everything here runs before any output is allocated or any caller tensor is written.
"""

import math
import numbers
from typing import Optional

import torch

_is_compiling = torch.compiler.is_compiling  # (Dynamo cannot trace is_neg(); a traced call is not checked)
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_DTYPE_NAMES = "float16, bfloat16, float32 or float64"


def check_float_tensor(name: str, tensor, *, optional: bool = False) -> None:
    """`tensor` must be a torch.Tensor of a supported floating dtype (or None when optional)."""
    if tensor is None and optional:
        return
    kind = type(tensor)
    if kind is not torch.Tensor and kind is not torch.nn.Parameter:  # (exact types first: host time)
        if not isinstance(tensor, torch.Tensor):
            expected = "a torch.Tensor or None" if optional else "a torch.Tensor"
            raise TypeError(f"{name} must be {expected}, got {kind.__name__}{_positional_hint(name, tensor)}")
        if _is_dtensor(tensor):
            _reject_dtensor(name, tensor)
    if tensor.is_nested or tensor.layout is not torch.strided:  # sparse, nested, mkldnn: no strided storage
        shown = "a nested tensor" if tensor.is_nested else tensor.layout
        raise TypeError(f"{name} must be a dense (strided) tensor, got {shown}")
    if not _is_compiling() and tensor.is_neg():  # the kernels read memory, which holds the negated values
        raise TypeError(f"{name} is a negative view ({name}.is_neg(), e.g. z.conj().imag): pass {name}.resolve_neg()")
    if tensor.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"{name} must have a floating dtype ({_DTYPE_NAMES}), got {tensor.dtype}")


def _positional_hint(name: str, value) -> str:
    """What a call written like torch's probably meant: F.rms_norm(x, normalized_shape, weight, eps)
    puts a shape where normkit takes the weight, and eps where normkit takes bias or residual."""
    if name == "weight" and isinstance(value, (tuple, list, int)):
        return " (normkit takes no normalized_shape: it normalizes over x's last dimension; pass the weight tensor here)"
    if name in ("bias", "residual") and isinstance(value, float):
        return " (eps is keyword-only: eps=...)"
    return ""


def mixes_float64(x: torch.Tensor, *params: Optional[torch.Tensor]) -> bool:
    """float64 beside another dtype among x and the given parameters: normkit's kernels keep float64
    apart (torch.nn.RMSNorm computes such a mix; normkit's modules and patched norms run torch's forward)."""
    wide = x.dtype == torch.float64
    return any(p is not None and (p.dtype == torch.float64) != wide for p in params)


def check_same_device(name: str, tensor: Optional[torch.Tensor], x: torch.Tensor) -> None:
    if tensor is not None and tensor.device != x.device:
        raise ValueError(f"{name} must be on x's device ({x.device}), got {tensor.device}")


def check_shape(name: str, tensor: Optional[torch.Tensor], expected: tuple) -> None:
    if tensor is not None and tensor.shape != expected:  # torch.Size compares with tuples
        raise ValueError(f"{name} must have shape {tuple(expected)}, got {tuple(tensor.shape)}")


def check_finite_float(name: str, value, *, minimum: Optional[float] = None) -> float:
    """A real, finite number (≥ minimum when given), returned as a Python float."""
    if type(value) is not float and (isinstance(value, bool) or not isinstance(value, numbers.Real)):  # (NumPy
        # floats are Real; NumPy bools are not)
        raise TypeError(f"{name} must be a float, got {type(value).__name__}")
    bound = f" >= {minimum:g}" if minimum is not None else ""
    try:
        value = float(value)
    except OverflowError:  # an int beyond float's range (its digits may be too many to print)
        raise ValueError(f"{name} must be a finite number{bound}, got an int of {value.bit_length()} bits, "
                         f"beyond float's range") from None
    if not -math.inf < value < math.inf or (minimum is not None and value < minimum):  # NaN fails too
        raise ValueError(f"{name} must be a finite number{bound}, got {value}")
    return value


def check_bool(name: str, value) -> bool:
    """`value` as a Python bool: True or False, or a numpy bool (`numpy.True_`, unambiguous and common
    in configs). Anything else, truthy or not ("no", 1, None, a 0-d tensor), raises TypeError: a
    truthy string such as "no" would otherwise silently act as True."""
    if isinstance(value, bool):
        return value
    kind = type(value)
    if kind.__module__ == "numpy" and kind.__name__ in ("bool_", "bool"):  # numpy 1.x / 2.x name
        return bool(value)
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    raise TypeError(f"{name} must be a bool (True or False), got {kind.__name__} {shown}")


def check_eps(eps) -> float:
    return check_finite_float("eps", eps, minimum=0.0)


def check_dtype_arg(name: str, dtype) -> None:
    if dtype is not None and dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"{name} must be None or one of {_DTYPE_NAMES}, got {dtype}")


_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)  # exact types: certainly not a DTensor


def _is_dtensor(t) -> bool:
    if type(t) in _PLAIN_TENSORS:
        return False
    dtensor = getattr(getattr(torch.distributed, "tensor", None), "DTensor", None)
    return dtensor is not None and isinstance(t, dtensor)


def _reject_dtensor(name: str, tensor) -> None:
    """A DTensor where a plain tensor is expected: beside a plain x (normkit.rms_norm routes a DTensor x to
    normkit/distributed.py before any check here), or in the low-level API; unchecked, it would reach the
    kernels as a wrapper without storage."""
    placements = tuple(tensor.placements)
    if name == "x":
        raise TypeError(f"x must be a plain torch.Tensor for the low-level normkit.*_fwd / *_bwd, got a DTensor "
                        f"(placements {placements}); normkit.rms_norm / layer_norm and the modules take DTensors")
    raise TypeError(f"{name} must be a plain torch.Tensor like x, got a DTensor (placements {placements}); "
                    f"pass x as a DTensor on {name}'s mesh too, or {name}.full_tensor()")


def check_x(x) -> int:
    """x must be a floating tensor of shape (..., N) with N ≥ 1; returns N."""
    check_float_tensor("x", x)
    if x.dim() == 0:
        raise ValueError("x must have at least one dimension (..., N), got a 0-d tensor")
    if x.shape[-1] == 0:
        raise ValueError(f"x's last dimension N must be >= 1, got shape {tuple(x.shape)}")
    return x.shape[-1]


def check_param(name: str, param, x: torch.Tensor) -> None:
    """weight/bias: (N,), or per-head (H, N) with x of shape (..., H, N)."""
    check_float_tensor(name, param, optional=True)
    if param is None:
        return
    if param.dim() == 2:
        if x.dim() < 2 or x.shape[-2:] != param.shape:
            raise ValueError(f"{name} of shape {tuple(param.shape)} is a per-head (H, N) parameter and "
                             f"needs x of shape (..., {param.shape[0]}, {param.shape[1]}), got {tuple(x.shape)}")
    else:
        check_shape(name, param, (x.shape[-1],))
    check_same_device(name, param, x)


def check_float64_consistency(x: torch.Tensor, **tensors) -> None:
    """float64 runs compute in float64 (gradcheck); mixing it with lower precision would not."""
    for name, t in tensors.items():
        if t is not None and (t.dtype == torch.float64) != (x.dtype == torch.float64):
            raise TypeError(f"unsupported dtype combination: x is {x.dtype} but {name} is {t.dtype}; "
                            f"float64 inputs must all be float64 (the float64 path computes in float64)")


CASTING_MODES = ("fp32", "llama")


def check_casting_mode(casting_mode) -> None:
    if not isinstance(casting_mode, str) or casting_mode not in CASTING_MODES:
        raise ValueError(f"casting_mode must be one of {', '.join(map(repr, CASTING_MODES))}, got {casting_mode!r}")


def stats_dtype(x_dtype: torch.dtype) -> torch.dtype:
    """dtype of saved statistics (mean, rstd): float32, or float64 for float64 inputs."""
    return torch.float64 if x_dtype == torch.float64 else torch.float32


def check_gate(gate, x: torch.Tensor, bias=None) -> None:
    """gate (optional): a floating tensor of x's shape on x's device, with no bias beside it (the gated
    norms have none: y = (x̂·w)·silu(gate))."""
    check_float_tensor("gate", gate, optional=True)
    if gate is None:
        return
    check_shape("gate", gate, x.shape)
    check_same_device("gate", gate, x)
    if bias is not None:
        raise ValueError("gate multiplies x̂·weight by silu(gate) and takes no bias (the gated norms have none), "
                         f"got a bias of shape {tuple(bias.shape)}")


def check_fwd(x, weight=None, bias=None, residual=None, *, eps, weight_offset=0.0,
              out_dtype=None, residual_dtype=None, gate=None) -> float:
    """Checks the forward's arguments; returns eps as a float."""
    check_x(x)
    check_param("weight", weight, x)
    check_param("bias", bias, x)
    if weight is not None and bias is not None and weight.shape != bias.shape:
        raise ValueError(f"bias must have weight's shape {tuple(weight.shape)}, got {tuple(bias.shape)}")
    check_float_tensor("residual", residual, optional=True)
    check_shape("residual", residual, x.shape)
    check_same_device("residual", residual, x)
    check_gate(gate, x, bias)
    check_float64_consistency(x, weight=weight, bias=bias, residual=residual, gate=gate)
    if check_finite_float("weight_offset", weight_offset) != 0.0 and weight is None:
        raise ValueError(f"weight_offset shifts the weight (y = x̂·(weight + weight_offset)) and needs a "
                         f"weight, got weight=None with weight_offset={weight_offset}")
    check_dtype_arg("out_dtype", out_dtype)
    check_dtype_arg("residual_dtype", residual_dtype)
    if residual_dtype == torch.float64 and x.dtype != torch.float64:
        raise TypeError(f"unsupported dtype combination: residual_dtype=torch.float64 with x of dtype "
                        f"{x.dtype}; float64 residuals need float64 inputs (the float64 path computes in float64)")
    return check_eps(eps)


def check_stats(name: str, stats, x: torch.Tensor) -> None:
    if stats is None:
        return
    check_float_tensor(name, stats)
    check_shape(name, stats, (math.prod(x.shape[:-1]),))
    if stats.dtype != stats_dtype(x.dtype):
        raise TypeError(f"{name} must have dtype {stats_dtype(x.dtype)} (as the forward saves it for x "
                        f"of dtype {x.dtype}), got {stats.dtype}")
    check_same_device(name, stats, x)


def check_bwd(x, weight, dout, *, mean=None, rstd=None, dresidual_out=None, eps,
              weight_offset=0.0, is_rms_norm=True, gate=None, bias=None) -> float:
    """Checks the backward's arguments; returns eps as a float."""
    eps = check_fwd(x, weight, bias, eps=eps, weight_offset=weight_offset, gate=gate)
    for name, t in (("dout", dout), ("dresidual_out", dresidual_out)):
        check_float_tensor(name, t, optional=name != "dout")
        check_shape(name, t, x.shape)
        check_same_device(name, t, x)
    check_stats("rstd", rstd, x)
    check_stats("mean", mean, x)
    if not is_rms_norm and (mean is None) != (rstd is None):
        raise ValueError("mean and rstd must be given together (saved by layer_norm_fwd) or both be None "
                         f"(recomputed), got mean={'None' if mean is None else 'a tensor'} and "
                         f"rstd={'None' if rstd is None else 'a tensor'}")
    return eps
