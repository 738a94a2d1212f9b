"""Call plans: a `rms_norm` / `layer_norm` call signature that passed validation, kept so that the
next call with it goes straight to its launch (docs/design.md#launch-path).

A launch plan (`normkit.plan`) skips the configuration pick, grid fit and Triton's binder, but a
call still validated its arguments, flattened them, chose between autograd and the bare op,
allocated through three layers and built the launch plan's key. A *call signature* is everything
those steps read: the norm; for x, weight, bias, residual and gate their type, shape, strides,
dtype, device, 16-byte alignment, requires_grad and negative bit (or None); eps and weight_offset
(type and value); prenorm, out_dtype, residual_dtype and casting_mode; grad mode; the current CUDA device. A
signature is stored only after a call with it succeeded and launched through a launch plan, so a
hit proves what validation would find, and what the layers below would decide.

On a hit:
- without autograd, the call allocates its outputs and hands the caller's tensors (any rank: the
  kernel reads pointers and the plan's strides, which the signature fixes) to the launch plan;
- with autograd, `NormFunction` receives the `FwdCall` and its forward does the same; its
  backward keeps the backward's launch plan per gradient signature (dout's and dresidual_out's
  strides, dtype, alignment, and those of the saved tensors as they come back, which saved-tensor
  hooks may change) in the same `FwdCall`.

Not planned (the full path every call): torch.compile, torch.func / vmap, jit tracing and
forward-mode AD; tensor subclasses (DTensors take `normkit.distributed`); non-contiguous parameters;
inputs whose 2-D view is a copy; calls without a launch plan (M = 0, the CPU reference path, plans
off, a float64 input staged through float32 in the interpreter). `ops.clear_plans()` forgets both kinds.
"""

from typing import Optional

import torch

from . import launch, launchers, ops
from .plan import CALLS, _get_device  # noqa: F401  (CALLS: read as calls.CALLS)

_Tensor, _Parameter = torch.Tensor, torch.nn.Parameter
_is_compiling = torch.compiler.is_compiling
_grad_enabled = torch.is_grad_enabled
_transforms_active = torch._C._are_functorch_transforms_active
_tracing_state = torch._C._get_tracing_state
_forward_ad = torch.autograd.forward_ad

# A backward's gradient signatures per call signature: dout is row-major, or an expanded constant
# (a sum's gradient), rarely more; past this many the backward takes its launch path's plans.
MAX_GRADIENT_SIGNATURES = 8


def _plain(t) -> bool:
    return t is None or type(t) is _Tensor or type(t) is _Parameter


def signature(is_rms_norm, x, weight, bias, residual, gate, eps, weight_offset, prenorm, out_dtype, residual_dtype,
              casting_mode) -> Optional[tuple]:
    """The call's signature (module docstring), or None where the call is never planned."""
    if (not launch._enabled or (prenorm is not True and prenorm is not False) or _is_compiling()
            or _transforms_active() or _tracing_state() is not None or _forward_ad._current_level >= 0
            or not (type(x) is _Tensor or type(x) is _Parameter) or not _plain(weight) or not _plain(bias)
            or not _plain(residual) or not _plain(gate)):
        return None
    device = x.device
    # (inline rather than a helper per tensor: this is most of a hit's host time)
    return (
        is_rms_norm, type(x), x.shape, x.stride(), x.dtype, device, x.data_ptr() & 15, x.requires_grad, x.is_neg(),
        None if weight is None else (type(weight), weight.shape, weight.stride(), weight.dtype, weight.device,
                                     weight.data_ptr() & 15, weight.requires_grad, weight.is_neg()),
        None if bias is None else (type(bias), bias.shape, bias.stride(), bias.dtype, bias.device,
                                   bias.data_ptr() & 15, bias.requires_grad, bias.is_neg()),
        None if residual is None else (type(residual), residual.shape, residual.stride(), residual.dtype,
                                       residual.device, residual.data_ptr() & 15, residual.requires_grad,
                                       residual.is_neg()),
        None if gate is None else (type(gate), gate.shape, gate.stride(), gate.dtype, gate.device,
                                   gate.data_ptr() & 15, gate.requires_grad, gate.is_neg()),
        type(eps), eps, type(weight_offset), weight_offset, prenorm, out_dtype, residual_dtype, casting_mode,
        _grad_enabled(), _get_device() if device.type == "cuda" else None)


class FwdCall:
    """What a call signature decided: the forward's outputs (dtypes; statistics stored or not),
    eps and weight_offset as the kernels take them, whether the call goes through autograd, and
    once launched, the forward's launch plan and the backward's per gradient signature."""

    __slots__ = ("out_dtype", "residual_out_dtype", "store_stats", "is_rms_norm", "eps", "weight_offset",
                 "autograd", "flat", "prenorm", "rest", "plan", "bwd")

    def __init__(self, x, residual, eps, weight_offset, is_rms_norm, out_dtype, residual_dtype, x_hat_dtype,
                 store_stats, autograd, prenorm):
        self.out_dtype = out_dtype or x.dtype
        stored = residual_dtype or (residual.dtype if residual is not None else x.dtype)
        self.residual_out_dtype = stored if residual is not None or stored != x.dtype else None
        self.store_stats, self.is_rms_norm = store_stats, is_rms_norm
        self.eps, self.weight_offset = float(eps), float(weight_offset)
        self.autograd, self.flat, self.prenorm = autograd, x.dim() == 2, prenorm
        # NormFunction's non-tensor arguments after the five tensors, this call included
        self.rest = (self.eps, self.weight_offset, is_rms_norm, out_dtype, residual_dtype, x_hat_dtype, self)
        self.plan = None  # the forward's launch plan, once a launch recorded one
        self.bwd: dict = {}

    def forward(self, x, weight, bias, residual, gate):
        """(out, residual_out, mean, rstd) for these tensors (of the signature's shapes: any rank),
        None for what is not produced; launched through the plan."""
        return launchers.planned_fwd(self.plan, x, weight, bias, residual, gate, self.out_dtype,
                                     self.residual_out_dtype, self.store_stats, self.is_rms_norm, self.eps,
                                     self.weight_offset)

    def backward(self, h, weight, gate, mean, rstd, dout, dresidual_out, bias_shape, bias_dtype, x_hat_dtype):
        """(dx, dweight, dbias, dgate) of the forward this call ran (h: x or residual_out, 2-D), through the
        backward's launch plan for dout's and dresidual_out's signature (recorded on first use).

        The key holds the saved tensors' layouts too: saved-tensor hooks (offloading, as
        `torch.autograd.graph.save_on_cpu`) may return h, the gate, the weight or the statistics as
        copies with other strides, dtype or alignment than the forward's, which a plan would misread."""
        key = (type(dout), dout.stride(), dout.dtype, dout.data_ptr() & 15,
               None if dresidual_out is None else (type(dresidual_out), dresidual_out.stride(),
                                                   dresidual_out.dtype, dresidual_out.data_ptr() & 15),
               _get_device() if h.device.type == "cuda" else None,
               type(h), h.stride(), h.dtype, h.data_ptr() & 15,
               None if gate is None else (type(gate), gate.stride(), gate.dtype, gate.data_ptr() & 15),
               None if weight is None else (type(weight), weight.stride(), weight.dtype, weight.data_ptr() & 15),
               None if rstd is None else (rstd.stride(), rstd.dtype, rstd.data_ptr() & 15),
               None if mean is None else (mean.stride(), mean.dtype, mean.data_ptr() & 15))
        planned = self.bwd.get(key)
        dx, dweight, dbias, dgate = outputs = ops._bwd_outputs(h, weight, bias_shape, bias_dtype, gate)
        if planned is not None:
            launchers.launch_bwd_plan(planned, h, weight, dout, dresidual_out, mean, rstd, gate, dx, dweight, dbias,
                                      dgate, self.eps, self.weight_offset)
            return outputs
        planned = launchers.launch_bwd(h, dout, dx, weight=weight, dweight=dweight, dbias=dbias,
                                       dresidual_out=dresidual_out, mean=mean, rstd=rstd, eps=self.eps,
                                       weight_offset=self.weight_offset, is_rms_norm=self.is_rms_norm,
                                       x_hat_dtype=x_hat_dtype, gate=gate, dgate=dgate)
        if planned is not None and _plain(dout) and _plain(dresidual_out) and len(self.bwd) < MAX_GRADIENT_SIGNATURES:
            self.bwd[key] = planned
        return outputs


def plannable(weight, bias) -> bool:
    """Whether a validated call's parameters let a plan pass them as they are (launches take
    contiguous parameters; a non-contiguous one is copied on the full path)."""
    return (weight is None or weight.is_contiguous()) and (bias is None or bias.is_contiguous())
