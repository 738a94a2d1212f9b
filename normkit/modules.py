"""nn.Module drop-ins backed by normkit's kernels."""

import math

import torch

from . import validation
from .functional import layer_norm, rms_norm
from .validation import _is_dtensor


def _flatten_trailing(x, normalized_shape):
    """x (..., *normalized_shape) → (x viewed as (..., N), N), with a clear error on mismatch."""
    shape = tuple(normalized_shape)
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if not shape:  # (torch's modules refuse it at the call too)
        raise ValueError("normalized_shape must have at least one dimension, got ()")
    if x.dim() < len(shape) or tuple(x.shape[x.dim() - len(shape):]) != shape:
        raise ValueError(f"x must end with the dimensions normalized_shape={shape}, got shape {tuple(x.shape)}")
    if len(shape) == 1:
        return x, shape[0]  # already (..., N)
    if type(x) is not torch.Tensor and _is_dtensor(x):  # before the reshape merges a sharded dimension away
        from . import distributed
        distributed.check_x(x, len(shape))
    n = math.prod(shape)
    return x.reshape(*x.shape[: x.dim() - len(shape)], n), n


def _flat(param, n):
    return None if param is None else param.reshape(n)


def _default_eps(dtype: torch.dtype) -> float:
    return torch.finfo(torch.float64 if dtype == torch.float64 else torch.float32).eps


def _as_autocast_runs_it(x, op: str):
    """x as torch.autocast gives it to torch's `op`: float32 where autocast runs the op in float32 (torch
    registers its norms in autocast's float32 list on GPUs, not on the CPU), so that y comes out in the
    dtype torch.nn's module gives."""
    if x.dtype not in (torch.float16, torch.bfloat16):
        return x
    device_type = x.device.type
    return x.float() if torch.is_autocast_enabled(device_type) and _has_autocast_kernel(op, device_type) else x


def _autocast_registrations() -> dict:
    """{(op, device type): whether torch registers op for autocast there}, asked of the dispatcher once, at
    import: a plain dict that Dynamo reads as a constant (a dispatcher query inside a traced forward breaks
    the graph, and torch.compiler's decorators would import Dynamo with normkit)."""
    found = {}
    for op in ("aten::rms_norm", "aten::layer_norm"):
        for device_type, key in (("cuda", "CUDA"), ("cpu", "CPU"), ("xpu", "XPU"), ("mps", "MPS")):
            try:
                found[op, device_type] = torch._C._dispatch_has_kernel_for_dispatch_key(op, "Autocast" + key)
            except (RuntimeError, AttributeError):  # (an older torch: torch's GPU rule)
                found[op, device_type] = device_type != "cpu"
    return found


_AUTOCAST_FLOAT32 = _autocast_registrations()


def _has_autocast_kernel(op: str, device_type: str) -> bool:
    """Whether torch registers `op` for autocast on `device_type` (its float32 list: layer_norm, rms_norm)."""
    return _AUTOCAST_FLOAT32.get((op, device_type), device_type != "cpu")


def _refuse_torch_jit_script(self):
    """torch.jit.script asks each module to prepare itself (`__prepare_scriptable__`): normkit's say, in
    one TypeError, what works, rather than TorchScript failing on their source."""
    raise TypeError(f"normkit.{type(self).__name__} cannot be compiled by torch.jit.script (TorchScript "
                    "cannot compile its autograd Functions and Triton launches); use torch.compile, "
                    "torch.export or torch.jit.trace, which run it")


class RMSNorm(torch.nn.RMSNorm):
    """`torch.nn.RMSNorm` with normkit's kernels; same constructor, parameters and semantics.

    Normalises over the trailing ``normalized_shape`` dimensions (flattened into one row of
    length N = prod(normalized_shape)). ``eps=None`` means what PyTorch's kernel does: the
    machine epsilon of the compute dtype, i.e. ``torch.finfo(torch.float32).eps`` for 16-bit
    inputs (not bfloat16's 2**-7, which the documentation's wording suggests) and x's own for
    float32/float64. A float64 x beside a weight of another dtype, or the other way round, runs
    torch's forward (y in x's dtype, as torch gives it; normkit's kernels keep float64 apart). Under
    ``torch.autocast`` y has the dtype torch.nn's module gives: float32 for a 16-bit x on GPUs.
    """

    __prepare_scriptable__ = _refuse_torch_jit_script

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat, n = _flatten_trailing(x, self.normalized_shape)
        if (validation.mixes_float64(x, self.weight) and x.dtype in validation.SUPPORTED_DTYPES
                and self.weight.dtype in validation.SUPPORTED_DTYPES):  # (what torch computes and normkit does not)
            return super().forward(x)
        flat = _as_autocast_runs_it(flat, "aten::rms_norm")
        eps = self.eps if self.eps is not None else _default_eps(flat.dtype)
        y = rms_norm(flat, _flat(self.weight, n), eps=eps)
        return y if y.dim() == x.dim() else y.view(x.shape)


class LayerNorm(torch.nn.LayerNorm):
    """`torch.nn.LayerNorm` with normkit's kernels; same constructor, parameters and semantics (under
    ``torch.autocast`` y has the dtype torch.nn's module gives: float32 for a 16-bit x on GPUs)."""

    __prepare_scriptable__ = _refuse_torch_jit_script

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat, n = _flatten_trailing(x, self.normalized_shape)
        flat = _as_autocast_runs_it(flat, "aten::layer_norm")
        y = layer_norm(flat, _flat(self.weight, n), _flat(self.bias, n), eps=self.eps)
        return y if y.dim() == x.dim() else y.view(x.shape)


class FusedAddRMSNorm(torch.nn.Module):
    """Pre-norm block input: ``forward(x, residual) -> (y, residual_out)``; x and residual of shape
    (..., hidden_size), both outputs of that shape, y in x's dtype.

    residual_out = x + residual (added in fp32, kept in residual's dtype) and
    y = rms_norm(residual_out) · (weight + weight_offset), in one kernel each way. With
    ``weight_offset=1.0`` and a zero-initialised weight this is Gemma's (1 + w) convention.
    """

    def __init__(self, hidden_size: int, eps: float = 1e-6, weight_offset: float = 0.0,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(hidden_size, bool) or not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size must be an int, got {type(hidden_size).__name__}")
        if hidden_size < 1:
            raise ValueError(f"hidden_size must be >= 1, got {hidden_size}")
        self.hidden_size = hidden_size
        self.eps = eps
        self.weight_offset = weight_offset
        self.weight = torch.nn.Parameter(torch.empty(hidden_size, device=device, dtype=dtype))
        self.reset_parameters()

    __prepare_scriptable__ = _refuse_torch_jit_script

    def reset_parameters(self) -> None:
        """The weight as constructed: ones, or zeros with a weight_offset (Gemma's (1 + w))."""
        with torch.no_grad():
            self.weight.fill_(0.0 if self.weight_offset else 1.0)

    def forward(self, x: torch.Tensor, residual: torch.Tensor):
        flat, _ = _flatten_trailing(x, (self.hidden_size,))  # (names x, not the weight, on a wrong last dimension)
        if not isinstance(residual, torch.Tensor):
            raise TypeError(f"residual must be a torch.Tensor of x's shape {tuple(x.shape)}, "
                            f"got {type(residual).__name__}")
        return rms_norm(flat, self.weight, residual=residual, eps=self.eps, prenorm=True,
                        weight_offset=self.weight_offset)

    def extra_repr(self) -> str:
        return f"{self.hidden_size}, eps={self.eps}, weight_offset={self.weight_offset}"
