"""The implementations the benchmark compares, behind one small interface.

Each `Impl` has
  apply(x, weight, eps) -> y          autograd-aware forward (timed under no_grad for "fwd")
  backward(x, weight, dy, eps) -> fn  a closure that runs the backward only and returns (dx, dweight)

Peers get their backward from autograd: the forward runs once with requires_grad, and the closure
is `torch.autograd.grad(y, (x, weight), dy, retain_graph=True)`, so replaying it runs only the
peer's backward kernels. normkit's closure is `rms_norm_bwd` with the rstd saved by the forward.

Peers: native = torch.nn.functional.rms_norm; compile = torch.compile of the plain composite
(x·rsqrt(mean(x²) + eps)·w in float32, cast back: what quack and Liger compare against);
liger = Liger-Kernel's LigerRMSNormFunction (casting_mode "llama", in_place=False so dy survives
graph replays); quack = quack.rmsnorm.rmsnorm. The last two are optional imports.
"""

import inspect
from dataclasses import dataclass
from typing import Callable, Optional

import torch

Tensor = torch.Tensor
NAMES = ("normkit", "native", "compile", "liger", "quack")


@dataclass
class Impl:
    name: str
    apply: Callable[[Tensor, Optional[Tensor], float], Tensor]
    backward: Callable[[Tensor, Optional[Tensor], Tensor, float], Callable[[], tuple]]
    note: str = ""


def autograd_backward(apply):
    """Backward-only closure factory for an autograd-aware forward."""

    def make(x, weight, dy, eps):
        x = x.detach().requires_grad_()
        weight = weight.detach().requires_grad_()
        y = apply(x, weight, eps)
        return lambda: torch.autograd.grad(y, (x, weight), dy, retain_graph=True)

    return make


# ----------------------------------------------------------------------------- normkit
def _normkit() -> Impl:
    import normkit

    def backward(x, weight, dy, eps):
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
    acc = torch.float64 if x.dtype == torch.float64 else torch.float32
    xf = x.to(acc)
    y = xf * torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + eps) * weight.to(acc)
    return y.to(x.dtype)


_COMPILED = None


def _compile() -> Impl:
    global _COMPILED
    if _COMPILED is None:
        # One specialisation per shape and dtype (dynamic=False, like the peers' benchmarks): the
        # default recompile limit (8) would silently fall back to eager after 8 shapes.
        config = torch._dynamo.config
        for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                     "accumulated_cache_size_limit"):
            if hasattr(config, name):
                setattr(config, name, max(getattr(config, name), 1024))
        _COMPILED = torch.compile(composite, dynamic=False)
    return Impl("compile", _COMPILED, autograd_backward(_COMPILED), "torch.compile(composite)")


# ----------------------------------------------------------------------------- optional peers
def _liger() -> Impl:
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction

    # The signature changed across releases (offset, casting_mode, in_place, row_mode, ...):
    # pass what exists by position (Function.apply takes no keywords), defaults elsewhere.
    params = list(inspect.signature(LigerRMSNormFunction.forward).parameters.values())[1:]
    wanted = {"offset": 0.0, "casting_mode": "llama", "in_place": False}
    extra = [wanted.get(p.name, p.default) for p in params[3:]
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(value is inspect.Parameter.empty for value in extra):
        extra = []

    def apply(x, weight, eps):
        return LigerRMSNormFunction.apply(x, weight, eps, *extra)

    return Impl("liger", apply, autograd_backward(apply), "LigerRMSNormFunction, llama casting")


def _quack() -> Impl:
    from quack.rmsnorm import rmsnorm

    def apply(x, weight, eps):
        return rmsnorm(x, weight, eps=eps)

    return Impl("quack", apply, autograd_backward(apply), "quack.rmsnorm.rmsnorm")


_LOADERS = {"normkit": _normkit, "native": _native, "compile": _compile, "liger": _liger,
            "quack": _quack}


def load(name: str) -> Impl:
    """The implementation called `name`; raises (ImportError, …) when it is not available."""
    if name not in _LOADERS:
        raise ValueError(f"unknown implementation {name!r}; expected one of {', '.join(NAMES)}")
    return _LOADERS[name]()
