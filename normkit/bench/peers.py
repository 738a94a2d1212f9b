"""The RMSNorm implementations the benchmark compares, behind one small interface.

Each `Impl` has
  apply(*inputs, eps) -> output(s)         autograd-aware forward (timed under no_grad for "fwd")
  backward(inputs, grads, eps) -> fn       a closure that runs the backward only and returns the
                                           gradients of the inputs, in their order

For RMSNorm inputs = (x, weight), the output is y and grads = (dy,); the other families
(`normkit.bench.families`) use the same interface with their own inputs and outputs.

Peers get their backward from autograd: the forward runs once with requires_grad, and the closure
is `torch.autograd.grad(outputs, inputs, grads, retain_graph=True)`, so replaying it runs only the
peer's backward kernels. normkit's closure is `rms_norm_bwd` with the rstd saved by the forward.

Peers: native = torch.nn.functional.rms_norm; compile = torch.compile of the plain composite
(x·rsqrt(mean(x²) + eps)·w in float32, cast back: what quack and Liger compare against);
liger = Liger-Kernel's LigerRMSNormFunction (casting_mode "llama", in_place=False so dy survives
graph replays); quack = quack.rmsnorm.rmsnorm. The last two are optional imports.
"""

import inspect
from dataclasses import dataclass
from typing import Callable, Dict, List, Sequence

import torch

from .. import reference

Tensor = torch.Tensor
NAMES = ("normkit", "native", "compile", "liger", "quack")


@dataclass
class Impl:
    name: str
    apply: Callable[..., object]  # (*inputs, eps) -> a tensor or a tuple of tensors
    backward: Callable[[Sequence[Tensor], Sequence[Tensor], float], Callable[[], tuple]]
    note: str = ""


def autograd_backward(apply):
    """Backward-only closure factory for an autograd-aware forward."""

    def make(inputs, grads, eps):
        leaves = [t.detach().requires_grad_() for t in inputs]
        outputs = apply(*leaves, eps)
        return lambda: torch.autograd.grad(outputs, leaves, grads, retain_graph=True)

    return make


# ----------------------------------------------------------------------------- normkit
def _normkit() -> Impl:
    import normkit

    def backward(inputs, grads, eps):
        (x, weight), (dy,) = inputs, grads
        _, _, rstd = normkit.rms_norm_fwd(x, weight, eps=eps, store_rstd=True)

        def run():
            dx, dweight, _, _ = normkit.rms_norm_bwd(x, weight, dy, rstd, eps=eps)
            return dx, dweight

        return run

    return Impl("normkit", lambda x, w, eps: normkit.rms_norm(x, w, eps=eps), backward,
                "backward = rms_norm_bwd with saved rstd")


# ----------------------------------------------------------------------------- PyTorch
def _native() -> Impl:
    def apply(x, weight, eps):
        return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps)

    return Impl("native", apply, autograd_backward(apply), "torch.nn.functional.rms_norm")


def composite(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    """The plain PyTorch RMSNorm that torch.compile is given: float32 math, cast back."""
    xf = x.to(reference.compute_dtype(x.dtype))
    y = xf * torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + eps) * weight.to(xf.dtype)
    return y.to(x.dtype)


_COMPILED: Dict[Callable, Callable] = {}


def compiled(fn: Callable) -> Callable:
    """torch.compile(fn, dynamic=False), made once per function."""
    if fn not in _COMPILED:
        # One specialisation per shape and dtype (dynamic=False, like the peers' benchmarks): the
        # default recompile limit (8) would silently fall back to eager after 8 shapes.
        config = torch._dynamo.config
        for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                     "accumulated_cache_size_limit"):
            if hasattr(config, name):
                setattr(config, name, max(getattr(config, name), 1024))
        _COMPILED[fn] = torch.compile(fn, dynamic=False)
    return _COMPILED[fn]


def compile_impl(fn: Callable) -> Impl:
    """The "compile" peer of a plain PyTorch composite fn(*inputs, eps)."""
    apply = compiled(fn)
    return Impl("compile", apply, autograd_backward(apply), f"torch.compile({fn.__name__})")


# ----------------------------------------------------------------------------- optional peers
LIGER_OPTIONS = {"offset": 0.0, "casting_mode": "llama", "in_place": False}


def liger_extra_args(function, leading: int) -> List:
    """The arguments of a Liger autograd Function after its first `leading` ones (tensors, eps).

    The signatures changed across releases (offset, casting_mode, in_place, row_mode, ...): pass
    what exists by position (Function.apply takes no keywords), LIGER_OPTIONS where named there,
    defaults elsewhere; nothing when an extra argument has no default.
    """
    params = list(inspect.signature(function.forward).parameters.values())[1:]  # after ctx
    extra = [LIGER_OPTIONS.get(p.name, p.default) for p in params[leading:]
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [] if any(value is inspect.Parameter.empty for value in extra) else extra


def liger_impl(function, inputs: int, note: str) -> Impl:
    """The "liger" peer of a Liger autograd Function taking (*inputs, eps, extra arguments)."""
    extra = liger_extra_args(function, inputs + 1)

    def apply(*inputs_and_eps):
        return function.apply(*inputs_and_eps, *extra)

    return Impl("liger", apply, autograd_backward(apply), note)


def _liger() -> Impl:
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction

    return liger_impl(LigerRMSNormFunction, 2, "LigerRMSNormFunction, llama casting")


def _quack() -> Impl:
    from quack.rmsnorm import rmsnorm

    def apply(x, weight, eps):
        return rmsnorm(x, weight, eps=eps)

    return Impl("quack", apply, autograd_backward(apply), "quack.rmsnorm.rmsnorm")


_LOADERS = {"normkit": _normkit, "native": _native, "compile": lambda: compile_impl(composite),
            "liger": _liger, "quack": _quack}


def load(name: str) -> Impl:
    """The implementation called `name`; raises (ImportError, …) when it is not available."""
    if name not in _LOADERS:
        raise ValueError(f"unknown implementation {name!r}; expected one of {', '.join(NAMES)}")
    return _LOADERS[name]()
