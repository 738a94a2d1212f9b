"""The op layer: output allocation and the `torch.library` custom ops with fake (meta) implementations.

Layering: functional → calls → ops → launchers → kernels. The ops take 2-D (M, N) views (reshaping happens
above, so `torch.compile` sees stable ranks) and weights of shape (N,) or per-head (H, N); they allocate the
outputs and hand them to the launchers (`normkit.launchers`: `launch_fwd` / `launch_bwd`, also importable
from here), which launch the Triton kernels on CUDA tensors (and on CPU tensors under TRITON_INTERPRET=1) or
call `normkit.reference` on CPU. They do no math of their own. The public, quack-aligned entry points live in
`normkit.lowlevel`.

Under torch.compile the ops trace as the opaque custom ops `normkit::norm_fwd` / `norm_bwd` below, which run
the launchers on every step. `set_compile_ops("triton")` or NORMKIT_COMPILE_OPS=triton traces
`normkit::norm_fwd_triton` / `norm_bwd_triton` instead (`normkit.compiled`): Inductor sees the Triton kernels
and its generated code launches them, with no normkit Python per step; where a traced launch cannot express
the call (a symbolic N or stride, split-row tiles, ...) they call the opaque ops (docs/design.md#launch-path).
"""

import os
from typing import List, Optional, Tuple

import torch

from .launchers import launch_bwd, launch_fwd
from .plan import CALLS, PLANS
from .validation import stats_dtype
from .variant import CompileFallbackWarning

__all__ = ["norm_fwd", "norm_bwd", "launch_fwd", "launch_bwd", "plan_cache_info", "clear_plans",
           "set_compile_ops", "get_compile_ops", "CompileFallbackWarning", "PLANS", "CALLS"]

Tensor = torch.Tensor


def plan_cache_info() -> dict:
    """The launch plans (docs/design.md#launch-path): size, maxsize, hits, misses and whether they are on;
    "calls": the same for call plans (`normkit.calls`)."""
    return dict(PLANS.info(), calls=CALLS.info())


def clear_plans() -> None:
    """Forget every launch and call plan (and the counts): the next call of each signature takes the full path."""
    PLANS.clear()
    CALLS.clear()


# ----------------------------------------------------------------------------- what torch.compile traces
_COMPILE_OPS = ("triton", "opaque")


def set_compile_ops(mode: str) -> None:
    """What torch.compile traces for a norm (docs/design.md#launch-path): "opaque" (default) the custom
    ops below, which call the launchers at run time; "triton" the triton ops of `normkit.compiled`, whose
    kernels Inductor launches (not the default until it has run on a GPU). Dynamo guards on the mode: a
    function compiled in the other mode recompiles at its next call."""
    global _triton_ops
    if not isinstance(mode, str):
        raise TypeError(f"mode must be a str, 'triton' or 'opaque', got {type(mode).__name__} {mode!r}")
    if mode not in _COMPILE_OPS:
        raise ValueError(f"mode must be 'triton' or 'opaque', got {mode!r}")
    _triton_ops = mode == "triton"


def get_compile_ops() -> str:
    return "triton" if _triton_ops else "opaque"


_triton_ops = False
_ENV_MODE = os.environ.get("NORMKIT_COMPILE_OPS", "").strip().lower() or "opaque"
if _ENV_MODE not in _COMPILE_OPS:
    raise ValueError(f"NORMKIT_COMPILE_OPS must be 'triton' or 'opaque' (or unset), got "
                     f"{os.environ['NORMKIT_COMPILE_OPS']!r}")
set_compile_ops(_ENV_MODE)


# ----------------------------------------------------------------------------- custom ops
# Custom ops cannot return None or alias an input: an empty tensor stands for "not produced".
# Eager calls skip both the dispatcher and these placeholders (host time): see norm_fwd/norm_bwd.
def _empty(x: Tensor, dtype: torch.dtype) -> Tensor:
    return torch.empty((0,), dtype=dtype, device=x.device)


def _fwd_outputs(x, residual, is_rms_norm, store_stats, out_dtype, residual_dtype):
    """Allocate (out, residual_out, mean, rstd), None for what is not produced: row-major, on x's
    device (empty_like, and sizes as ints: half the argument parsing of torch.empty(x.shape, ...))."""
    m = x.shape[0]
    out = torch.empty_like(x, dtype=out_dtype or x.dtype, memory_format=torch.contiguous_format)
    res_dtype = residual_dtype or (residual.dtype if residual is not None else x.dtype)
    store_residual = residual is not None or res_dtype != x.dtype
    residual_out = torch.empty_like(x, dtype=res_dtype, memory_format=torch.contiguous_format) if store_residual \
        else None
    sdt = stats_dtype(x.dtype)
    rstd = torch.empty(m, dtype=sdt, device=x.device) if store_stats else None
    mean = torch.empty(m, dtype=sdt, device=x.device) if store_stats and not is_rms_norm else None
    return out, residual_out, mean, rstd


def _fwd_placeholders(x, outputs):
    out, residual_out, mean, rstd = outputs
    sdt = stats_dtype(x.dtype)
    return (out, _empty(x, x.dtype) if residual_out is None else residual_out,
            _empty(x, sdt) if mean is None else mean, _empty(x, sdt) if rstd is None else rstd)


def _run_fwd(x, weight, bias, residual, eps, weight_offset, is_rms_norm, store_stats, out_dtype, residual_dtype,
             x_hat_dtype, gate=None):
    """(outputs, the launch plan that ran or None)."""
    outputs = _fwd_outputs(x, residual, is_rms_norm, store_stats, out_dtype, residual_dtype)
    out, residual_out, mean, rstd = outputs
    planned = launch_fwd(x, out, weight=weight, bias=bias, residual=residual, residual_out=residual_out, mean=mean,
                         rstd=rstd, eps=eps, weight_offset=weight_offset, is_rms_norm=is_rms_norm,
                         x_hat_dtype=x_hat_dtype, gate=gate)
    return outputs, planned


# The gate comes last, with a default, in both schemas: calls written before it existed keep their positions.
def _norm_fwd_impl(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], residual: Optional[Tensor],
                   eps: float, weight_offset: float, is_rms_norm: bool, store_stats: bool,
                   out_dtype: Optional[torch.dtype], residual_dtype: Optional[torch.dtype],
                   x_hat_dtype: Optional[torch.dtype], gate: Optional[Tensor] = None
                   ) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    return _fwd_placeholders(x, _run_fwd(x, weight, bias, residual, eps, weight_offset, is_rms_norm, store_stats,
                                         out_dtype, residual_dtype, x_hat_dtype, gate)[0])


_norm_fwd_op = torch.library.custom_op("normkit::norm_fwd", _norm_fwd_impl, mutates_args=())


@_norm_fwd_op.register_fake
def _(x, weight, bias, residual, eps, weight_offset, is_rms_norm, store_stats, out_dtype, residual_dtype,
      x_hat_dtype, gate=None):
    return _fwd_placeholders(x, _fwd_outputs(x, residual, is_rms_norm, store_stats, out_dtype, residual_dtype))


def _bwd_outputs(x, weight, bias_shape, bias_dtype, gate=None):
    """Allocate (dx, dweight, dbias, dgate), None for what is not produced: dweight like weight, dbias
    of bias_shape in bias_dtype, dgate row-major in gate's dtype."""
    dx = torch.empty_like(x, memory_format=torch.contiguous_format)  # (as _fwd_outputs: host time)
    dweight = torch.empty_like(weight, memory_format=torch.contiguous_format) if weight is not None else None
    dbias = torch.empty(*bias_shape, dtype=bias_dtype, device=x.device) if bias_dtype is not None else None
    dgate = torch.empty_like(gate, memory_format=torch.contiguous_format) if gate is not None else None
    return dx, dweight, dbias, dgate


def _bwd_placeholders(x, outputs):
    return tuple(_empty(x, x.dtype) if t is None else t for t in outputs)


def _run_bwd(x, weight, dout, mean, rstd, dresidual_out, bias_shape, bias_dtype, eps, weight_offset, is_rms_norm,
             x_hat_dtype, gate=None):
    """(outputs, the launch plan that ran or None)."""
    outputs = _bwd_outputs(x, weight, bias_shape, bias_dtype, gate)
    dx, dweight, dbias, dgate = outputs
    planned = launch_bwd(x, dout, dx, weight=weight, dweight=dweight, dbias=dbias, dresidual_out=dresidual_out,
                         mean=mean, rstd=rstd, eps=eps, weight_offset=weight_offset, is_rms_norm=is_rms_norm,
                         x_hat_dtype=x_hat_dtype, gate=gate, dgate=dgate)
    return outputs, planned


def _norm_bwd_impl(x: Tensor, weight: Optional[Tensor], dout: Tensor, mean: Optional[Tensor],
                   rstd: Optional[Tensor], dresidual_out: Optional[Tensor], bias_shape: Optional[List[int]],
                   bias_dtype: Optional[torch.dtype], eps: float, weight_offset: float, is_rms_norm: bool,
                   x_hat_dtype: Optional[torch.dtype], gate: Optional[Tensor] = None
                   ) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    return _bwd_placeholders(x, _run_bwd(x, weight, dout, mean, rstd, dresidual_out, bias_shape, bias_dtype, eps,
                                         weight_offset, is_rms_norm, x_hat_dtype, gate)[0])


_norm_bwd_op = torch.library.custom_op("normkit::norm_bwd", _norm_bwd_impl, mutates_args=())


@_norm_bwd_op.register_fake
def _(x, weight, dout, mean, rstd, dresidual_out, bias_shape, bias_dtype, eps, weight_offset, is_rms_norm,
      x_hat_dtype, gate=None):
    return _bwd_placeholders(x, _bwd_outputs(x, weight, bias_shape, bias_dtype, gate))


def norm_fwd(x: Tensor, weight: Optional[Tensor], bias: Optional[Tensor], residual: Optional[Tensor], *,
             eps: float, weight_offset: float = 0.0, is_rms_norm: bool = True, store_stats: bool = False,
             out_dtype: Optional[torch.dtype] = None, residual_dtype: Optional[torch.dtype] = None,
             x_hat_dtype: Optional[torch.dtype] = None, gate: Optional[Tensor] = None
             ) -> Tuple[Tensor, Optional[Tensor], Optional[Tensor], Optional[Tensor]]:
    """The forward op on validated 2-D input: (out, residual_out, mean, rstd), None where not produced
    (residual_out None means "x itself"); out = u·silu(gate) with a gate. Eager calls skip the
    dispatcher (host overhead); under torch.compile a registered op is what gets traced (module docstring)."""
    args = (x, weight, bias, residual, eps, weight_offset, is_rms_norm, store_stats, out_dtype, residual_dtype,
            x_hat_dtype, gate)
    if not torch.compiler.is_compiling():
        return _run_fwd(*args)[0]
    if _triton_ops:
        from . import compiled  # noqa: F401  (Dynamo imports it once: it registers the triton ops)

        out, residual_out, mean, rstd = torch.ops.normkit.norm_fwd_triton(*args)
    else:
        out, residual_out, mean, rstd = torch.ops.normkit.norm_fwd(*args)
    return (out, residual_out if residual_out.dim() == 2 else None,
            mean if store_stats and not is_rms_norm else None, rstd if store_stats else None)


def norm_bwd(x: Tensor, weight: Optional[Tensor], dout: Tensor, *, mean: Optional[Tensor] = None,
             rstd: Optional[Tensor] = None, dresidual_out: Optional[Tensor] = None,
             bias_shape: Optional[List[int]] = None, bias_dtype: Optional[torch.dtype] = None, eps: float,
             weight_offset: float = 0.0, is_rms_norm: bool = True, x_hat_dtype: Optional[torch.dtype] = None,
             gate: Optional[Tensor] = None) -> Tuple[Optional[Tensor], ...]:
    """The backward op on validated 2-D input: (dx, dweight, dbias), None where not produced, and
    dgate as a fourth when the forward had a gate. dbias (of bias_shape, (N,) or per-head (H, N), in
    bias_dtype) is computed when bias_dtype is given."""
    args = (x, weight, dout, mean, rstd, dresidual_out, None if bias_dtype is None else list(bias_shape),
            bias_dtype, eps, weight_offset, is_rms_norm, x_hat_dtype, gate)
    if not torch.compiler.is_compiling():
        dx, dweight, dbias, dgate = _run_bwd(*args)[0]
    else:
        if _triton_ops:
            from . import compiled  # noqa: F401  (Dynamo imports it once: it registers the triton ops)

            dx, dweight, dbias, dgate = torch.ops.normkit.norm_bwd_triton(*args)
        else:
            dx, dweight, dbias, dgate = torch.ops.normkit.norm_bwd(*args)
        dweight, dbias = (dweight if weight is not None else None), (dbias if bias_dtype is not None else None)
    return (dx, dweight, dbias) if gate is None else (dx, dweight, dbias, dgate)
