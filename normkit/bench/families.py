"""What the benchmark measures: plain RMSNorm, fused residual add + RMSNorm (prenorm), LayerNorm, fused
residual add + LayerNorm (prenorm), gated RMSNorm (Qwen3-Next).

A `Family` names what its implementations take and return; inputs, errors and timing follow
from those names, so every family goes through the same measurement (`normkit.bench.cli`):

  rms         apply(x, weight, eps) -> y                              grads (dy,)
  fused_add   apply(x, residual, weight, eps) -> (y, residual_out)    grads (dy, dresidual_out)
  layer_norm  apply(x, weight, bias, eps) -> y                        grads (dy,)
  fused_layer_norm  apply(x, residual, weight, bias, eps) -> (y, residual_out)
                                                                      grads (dy, dresidual_out)
  gated       apply(x, weight, gate, eps) -> y                        grads (dy,)

backward(inputs, grads, eps) returns the gradients of the inputs in their order (see `peers`).

Fused add peers: normkit.rms_norm(..., residual, prenorm=True), backward = rms_norm_bwd on the
saved residual_out and rstd; native = F.rms_norm(x + residual) in eager; compile = torch.compile
of the float32 composite h = x + residual, y = RMSNorm(h); liger = LigerFusedAddRMSNormFunction;
quack = quack.rmsnorm.rmsnorm(..., residual, prenorm=True).
LayerNorm peers: normkit.layer_norm, backward = layer_norm_bwd with the saved mean and rstd;
native = F.layer_norm; compile = torch.compile of the float32 composite; liger =
LigerLayerNormFunction. Fused LayerNorm peers: normkit.layer_norm(..., residual, prenorm=True), backward =
layer_norm_bwd on the saved residual_out, mean and rstd; native = F.layer_norm(x + residual); compile =
torch.compile of the float32 composite (neither Liger nor quack has a fused LayerNorm with autograd).
Gated RMSNorm peers: normkit.rms_norm(..., gate=gate, casting_mode="llama"), backward = rms_norm_bwd with
the saved rstd; native = Hugging Face's Qwen3NextRMSNormGated forward in eager; compile = torch.compile
of it (`gated_composite`).
Peers take their backward from autograd.
"""

from dataclasses import dataclass
from typing import Callable, Dict, Mapping, NamedTuple, Optional, Sequence, Tuple

import torch

from .. import reference
from . import peers
from .inputs import float64_errors, make_inputs
from .peers import Impl, autograd_backward, compile_impl, liger_impl

Tensor = torch.Tensor
Case = Tuple[torch.dtype, int, int]  # (dtype, M, N)


class Sample(NamedTuple):
    inputs: Tuple[Tensor, ...]  # what apply takes, in the family's order
    grads: Tuple[Tensor, ...]  # the gradients arriving on its outputs


@dataclass(frozen=True)
class Family:
    name: str
    inputs: Tuple[str, ...]
    outputs: Tuple[str, ...]
    is_rms_norm: bool
    loaders: Optional[Mapping[str, Callable[[], Impl]]]  # None: the RMSNorm peers of `peers`

    @property
    def grads(self) -> Tuple[str, ...]:
        return tuple("d" + name for name in self.outputs)

    def load(self, name: str) -> Impl:
        """The implementation called `name`; raises (ImportError, LookupError) when unavailable."""
        if self.loaders is None:
            return peers.load(name)
        if name not in self.loaders:
            raise LookupError(f"no {name} implementation of {self.name}")
        return self.loaders[name]()


# Tensors beyond make_inputs' (x, weight, dy), from a generator seeded apart from make_inputs'
# own so they are not copies of x: residual and dresidual_out ~ N(0, 1), bias ~ 0.25·N(0, 1).
_EXTRA_SEED = 1_000_003


def make_sample(family: Family, case: Case, device, seed: int = 0) -> Sample:
    """Fresh random inputs and output gradients for one case (dy = 0.5·x + noise, see `inputs`)."""
    dtype, m, n = case
    x, weight, dy = make_inputs((m, n), dtype, device, seed)
    tensors = {"x": x, "weight": weight, "dy": dy}
    gen = torch.Generator(device=device).manual_seed(_EXTRA_SEED + seed)
    for name in family.inputs + family.grads:
        if name not in tensors:
            shape, scale = ((n,), 0.25) if name == "bias" else ((m, n), 1.0)
            randn = torch.randn(*shape, generator=gen, dtype=torch.float32, device=device)
            tensors[name] = (scale * randn).to(dtype)
    return Sample(tuple(tensors[k] for k in family.inputs), tuple(tensors[k] for k in family.grads))


def errors(family: Family, sample: Sample, outputs: Sequence[Tensor], input_grads: Sequence[Tensor],
           eps: float) -> Dict[str, float]:
    """Relative errors against float64 of the outputs (y, residual_out) and of the gradients of
    the inputs (dx, dresidual, dweight, dbias), keyed by those names."""
    named = dict(zip(family.inputs + family.grads, sample.inputs + sample.grads))
    labelled = {name: (name, t) for name, t in zip(family.outputs, outputs)}
    for name, t in zip(family.inputs, input_grads):  # the residual's gradient is h's, like x's
        labelled["d" + name] = ("dx" if name in ("x", "residual") else "d" + name, t)
    return float64_errors(named["x"], named.get("weight"), named["dy"], eps, labelled,
                          bias=named.get("bias"), residual=named.get("residual"),
                          dresidual_out=named.get("dresidual_out"), is_rms_norm=family.is_rms_norm,
                          gate=named.get("gate"))


# ----------------------------------------------------------------------------- fused residual add
def _normkit_fused_add() -> Impl:
    import normkit

    def apply(x, residual, weight, eps):
        return normkit.rms_norm(x, weight, residual=residual, eps=eps, prenorm=True)

    def backward(inputs, grads, eps):
        (x, residual, weight), (dy, dresidual_out) = inputs, grads
        _, residual_out, rstd = normkit.rms_norm_fwd(x, weight, residual=residual, eps=eps,
                                                     store_rstd=True)

        def run():
            dx, dweight, _, dresidual = normkit.rms_norm_bwd(
                residual_out, weight, dy, rstd, dresidual_out=dresidual_out, has_residual=True,
                eps=eps)
            return dx, dresidual, dweight

        return run

    return Impl("normkit", apply, backward, "backward = rms_norm_bwd with saved residual_out, rstd")


def _native_fused_add() -> Impl:
    def apply(x, residual, weight, eps):
        h = x + residual
        return torch.nn.functional.rms_norm(h, (h.shape[-1],), weight, eps), h

    return Impl("native", apply, autograd_backward(apply), "F.rms_norm(x + residual), eager")


def _added(x: Tensor, residual: Tensor) -> Tensor:
    """h = x + residual in the compute dtype (float32 for 2- and 4-byte inputs), as the fused kernels add."""
    acc = reference.compute_dtype(x.dtype)
    return x.to(acc) + residual.to(acc)


def fused_add_composite(x: Tensor, residual: Tensor, weight: Tensor, eps: float):
    """The plain PyTorch fused add + RMSNorm: h = x + residual in float32, y = RMSNorm(h)."""
    h = _added(x, residual)
    return peers.composite(h, weight, eps).to(x.dtype), h.to(residual.dtype)


def _liger_fused_add() -> Impl:
    from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction

    return liger_impl(LigerFusedAddRMSNormFunction, 3,
                      "LigerFusedAddRMSNormFunction, llama casting")


def _quack_fused_add() -> Impl:
    from quack.rmsnorm import rmsnorm

    def apply(x, residual, weight, eps):
        return rmsnorm(x, weight, residual=residual, eps=eps, prenorm=True)

    return Impl("quack", apply, autograd_backward(apply), "quack.rmsnorm.rmsnorm, prenorm")


# ----------------------------------------------------------------------------- LayerNorm
def _normkit_layer_norm() -> Impl:
    import normkit

    def apply(x, weight, bias, eps):
        return normkit.layer_norm(x, weight, bias, eps=eps)

    def backward(inputs, grads, eps):
        (x, weight, bias), (dy,) = inputs, grads
        _, _, mean, rstd = normkit.layer_norm_fwd(x, weight, bias, eps=eps, store_rstd=True)

        def run():
            dx, dweight, dbias, _ = normkit.layer_norm_bwd(x, weight, dy, mean, rstd,
                                                           has_bias=True, eps=eps)
            return dx, dweight, dbias

        return run

    return Impl("normkit", apply, backward, "backward = layer_norm_bwd with saved mean, rstd")


def _native_layer_norm() -> Impl:
    def apply(x, weight, bias, eps):
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps)

    return Impl("native", apply, autograd_backward(apply), "torch.nn.functional.layer_norm")


def layer_norm_composite(x: Tensor, weight: Tensor, bias: Tensor, eps: float) -> Tensor:
    """The plain PyTorch LayerNorm that torch.compile is given: float32 math, cast back."""
    xf = x.to(reference.compute_dtype(x.dtype))
    centered = xf - xf.mean(dim=-1, keepdim=True)
    rstd = torch.rsqrt(centered.square().mean(dim=-1, keepdim=True) + eps)
    return (centered * rstd * weight.to(xf.dtype) + bias.to(xf.dtype)).to(x.dtype)


def _liger_layer_norm() -> Impl:
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction

    return liger_impl(LigerLayerNormFunction, 3, "LigerLayerNormFunction")


# ----------------------------------------------------------------------------- fused residual add + LayerNorm
def _normkit_fused_layer_norm() -> Impl:
    import normkit

    def apply(x, residual, weight, bias, eps):
        return normkit.layer_norm(x, weight, bias, residual=residual, eps=eps, prenorm=True)

    def backward(inputs, grads, eps):
        (x, residual, weight, bias), (dy, dresidual_out) = inputs, grads
        _, residual_out, mean, rstd = normkit.layer_norm_fwd(x, weight, bias, residual=residual, eps=eps,
                                                             store_rstd=True)

        def run():
            dx, dweight, dbias, dresidual = normkit.layer_norm_bwd(
                residual_out, weight, dy, mean, rstd, dresidual_out=dresidual_out, has_bias=True,
                has_residual=True, eps=eps)
            return dx, dresidual, dweight, dbias

        return run

    return Impl("normkit", apply, backward, "backward = layer_norm_bwd with saved residual_out, mean, rstd")


def _native_fused_layer_norm() -> Impl:
    def apply(x, residual, weight, bias, eps):
        h = x + residual
        return torch.nn.functional.layer_norm(h, (h.shape[-1],), weight, bias, eps), h

    return Impl("native", apply, autograd_backward(apply), "F.layer_norm(x + residual), eager")


def fused_layer_norm_composite(x: Tensor, residual: Tensor, weight: Tensor, bias: Tensor, eps: float):
    """The plain PyTorch fused add + LayerNorm: h = x + residual in float32, y = LayerNorm(h)."""
    h = _added(x, residual)
    return layer_norm_composite(h, weight, bias, eps).to(x.dtype), h.to(residual.dtype)


# ----------------------------------------------------------------------------- gated RMSNorm
def _normkit_gated() -> Impl:
    import normkit

    def apply(x, weight, gate, eps):
        return normkit.rms_norm(x, weight, gate=gate, eps=eps, casting_mode="llama")

    def backward(inputs, grads, eps):
        (x, weight, gate), (dy,) = inputs, grads
        _, _, rstd = normkit.rms_norm_fwd(x, weight, gate=gate, eps=eps, store_rstd=True, casting_mode="llama")

        def run():
            dx, dweight, _, _, dgate = normkit.rms_norm_bwd(x, weight, dy, rstd, gate=gate, eps=eps,
                                                            casting_mode="llama")
            return dx, dweight, dgate

        return run

    return Impl("normkit", apply, backward, "backward = rms_norm_bwd(gate=) with saved rstd, llama casting")


def gated_composite(x: Tensor, weight: Tensor, gate: Tensor, eps: float) -> Tensor:
    """Hugging Face's Qwen3NextRMSNormGated forward: x̂ in float32, `weight * x̂.to(x.dtype)`, times
    silu(gate) in float32, cast back to x's dtype."""
    acc = reference.compute_dtype(x.dtype)
    xf = x.to(acc)
    x_hat = xf * torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + eps)
    return ((weight * x_hat.to(x.dtype)) * torch.nn.functional.silu(gate.to(acc))).to(x.dtype)


def _native_gated() -> Impl:
    return Impl("native", gated_composite, autograd_backward(gated_composite),
                "Qwen3NextRMSNormGated's forward, eager")


# ----------------------------------------------------------------------------- the registry
FAMILIES: Dict[str, Family] = {
    "rms": Family("rms", ("x", "weight"), ("y",), True, None),
    "fused_add": Family("fused_add", ("x", "residual", "weight"), ("y", "residual_out"), True, {
        "normkit": _normkit_fused_add, "native": _native_fused_add,
        "compile": lambda: compile_impl(fused_add_composite), "liger": _liger_fused_add,
        "quack": _quack_fused_add}),
    "layer_norm": Family("layer_norm", ("x", "weight", "bias"), ("y",), False, {
        "normkit": _normkit_layer_norm, "native": _native_layer_norm,
        "compile": lambda: compile_impl(layer_norm_composite), "liger": _liger_layer_norm}),
    "fused_layer_norm": Family("fused_layer_norm", ("x", "residual", "weight", "bias"), ("y", "residual_out"),
                               False, {"normkit": _normkit_fused_layer_norm, "native": _native_fused_layer_norm,
                                       "compile": lambda: compile_impl(fused_layer_norm_composite)}),
    "gated": Family("gated", ("x", "weight", "gate"), ("y",), True, {
        "normkit": _normkit_gated, "native": _native_gated, "compile": lambda: compile_impl(gated_composite)}),
}
