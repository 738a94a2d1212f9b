"""normkit under `torch.distributed`: DTensor (sequence / tensor parallel) inputs to the norms.

DDP and FSDP2 (`fully_shard`) need nothing from normkit: the norms see plain local tensors and
the wrappers reduce the parameter gradients like any other. This module is for DTensor inputs,
e.g. the activations of sequence parallelism, sharded as Shard(0) or Shard(1) of (B, S, N).
`normkit.rms_norm` / `layer_norm`, `normkit.RMSNorm` / `LayerNorm` / `FusedAddRMSNorm` and the
modules `normkit.patch` rewrote take them as they take plain tensors:

    x = distribute_tensor(x, mesh, [Shard(1)])            # (B, S, N), the sequence split
    y = normkit.RMSNorm(N)(x)                              # a DTensor placed like x

Each rank normalises its own rows (every row lies whole on one rank, so the statistics are
exact and nothing is gathered); the kernels are the single-device ones and hold no collectives.
The gradient of a replicated weight / bias is a sum over all rows, so each rank's local sum is
a Partial placement on every mesh dimension along which x is sharded; it is all-reduced
(redistributed to Replicate) before it reaches `weight.grad`. dx comes back placed like x.

Supported: x placed Replicate or Shard(d) (or _StridedShard(d), a reshaped Shard) on each mesh
dimension, with d not one of the dimensions the weight spans (the last, or the last two for a
per-head (H, N) weight); residual and gate DTensors of x's shape placed like x; weight and bias
Replicate DTensors on x's mesh (as tensor-parallel plans make them) or plain tensors, taken as
replicated on x's mesh (a module's Parameter: its gradient is all-reduced too). Anything else
raises, in particular a shard of the normalised dimension (the statistics would be those of a
fraction of each row), Partial inputs (a norm is not linear in its input), and a plain residual or
gate beside a DTensor x (which rows of it belong to this rank is not defined).

DTensor x is unwrapped at the public entry (`functional._apply`'s first lines call `apply`), not
through DTensor sharding rules for the `normkit::` ops: eager calls launch the kernels without the
dispatcher (host time), and DTensor's dispatch would reject a module's plain Parameter beside a
DTensor x as mixed.
"""

from typing import Optional

import torch
from torch.distributed._functional_collectives import AsyncCollectiveTensor
from torch.distributed.tensor import DTensor, Partial, Replicate

from . import functional

Tensor = torch.Tensor


def _split_dim(x: DTensor, mesh_dim: int, placement) -> Optional[int]:
    """The dimension of x that `placement` splits (a Shard, or the _StridedShard that reshaping a Shard(1)
    (B, S, N) to (B·S, N) leaves, which is no Shard subclass); None for Replicate."""
    if isinstance(placement, Replicate):
        return None
    if isinstance(placement, Partial):
        raise ValueError(f"x must not be Partial (mesh dim {mesh_dim}): a norm is not linear in "
                         f"its input; redistribute it to Replicate or Shard first")
    dim = getattr(placement, "dim", None)
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise ValueError(f"x must be placed Replicate or Shard(d) on each mesh dimension, got {placement} "
                         f"(mesh dim {mesh_dim}); redistribute it first")
    return dim % x.dim()


def check_x(x: DTensor, param_ndim: int) -> None:
    """A DTensor x: no Partial, no split of the `param_ndim` trailing dimensions the norm reduces over."""
    for mesh_dim, placement in enumerate(x.placements):
        dim = _split_dim(x, mesh_dim, placement)
        if dim is not None and dim >= x.dim() - param_ndim:
            raise ValueError(
                f"x of shape {tuple(x.shape)} is sharded along dimension {placement.dim} "
                f"(mesh dim {mesh_dim}), which the norm reduces over; shard a leading dimension "
                f"(e.g. Shard(0) or Shard(1) of (B, S, N)) or redistribute it to Replicate")


def _check_like_x(name: str, t, x: DTensor) -> None:
    """residual / gate beside a DTensor x: a DTensor of x's shape, mesh and placements."""
    if not isinstance(t, DTensor):
        raise TypeError(f"{name} must be a DTensor placed like x {tuple(x.placements)} (x is a DTensor), "
                        f"got {type(t).__name__}")
    if t.device_mesh != x.device_mesh:
        raise ValueError(f"{name} must be on x's device mesh {x.device_mesh}, got {t.device_mesh}")
    if t.shape != x.shape:
        raise ValueError(f"{name} must have x's shape {tuple(x.shape)}, got {tuple(t.shape)}")
    if tuple(t.placements) != tuple(x.placements):
        raise ValueError(f"{name} must be placed like x {tuple(x.placements)}, got {tuple(t.placements)}")


def _check_param(name: str, param, mesh) -> None:
    """A DTensor weight / bias: Replicate on x's mesh (plain ones are taken as replicated)."""
    if not isinstance(param, DTensor):
        return  # None, a plain tensor, or something functional's checks name
    if param.device_mesh != mesh:
        raise ValueError(f"{name} must be on x's device mesh {mesh}, got {param.device_mesh}")
    if not all(isinstance(p, Replicate) for p in param.placements):
        raise ValueError(f"{name} must be Replicate on every mesh dimension (or a plain tensor), "
                         f"got {tuple(param.placements)}")


class _ReplicateGrad(torch.autograd.Function):
    """Identity on a DTensor; its gradient (Partial where x was sharded) is all-reduced to Replicate."""

    @staticmethod
    def forward(ctx, param):
        return param.view_as(param)

    @staticmethod
    def backward(ctx, grad):
        return grad.redistribute(grad.device_mesh, [Replicate()] * grad.device_mesh.ndim)


class _Waited(torch.autograd.Function):
    """Identity whose input and gradient reach the kernels as plain tensors: a DTensor's local tensor, or
    its gradient, is an AsyncCollectiveTensor while a collective that produced it is in flight (e.g. the
    reduce-scatter of a RowwiseParallel layer), which has no storage of its own to launch on."""

    @staticmethod
    def forward(ctx, local):
        return local.wait() if isinstance(local, AsyncCollectiveTensor) else local.view_as(local)

    @staticmethod
    def backward(ctx, grad):
        return grad.wait() if isinstance(grad, AsyncCollectiveTensor) else grad


def _local(t: Optional[DTensor]) -> Optional[Tensor]:
    return None if t is None else _Waited.apply(t.to_local())


def _local_param(param, x: DTensor):
    """The replicated parameter's local tensor; its local gradient is Partial where x is sharded."""
    if not isinstance(param, Tensor):
        return param
    if not isinstance(param, DTensor):  # a plain Parameter: replicated; from_local's backward hands it the grad
        param = DTensor.from_local(param, x.device_mesh, [Replicate()] * x.device_mesh.ndim, run_check=False)
    grad_placements = [Replicate() if isinstance(p, Replicate) else Partial() for p in x.placements]  # (check_x's)
    return _ReplicateGrad.apply(param).to_local(grad_placements=grad_placements)


def _global_stride(local: Tensor, shape) -> tuple:
    """The strides of a tensor of the global `shape` whose dimensions lie in memory in `local`'s order (an
    output is contiguous where x may not be: x's strides would misdescribe it, and a later
    `.contiguous()` that trusts them would keep a non-contiguous local tensor)."""
    stride, step = [0] * len(shape), 1
    for d in sorted(range(local.dim()), key=lambda d: (local.stride(d), -d)):  # innermost first
        stride[d], step = step, step * max(shape[d], 1)  # (torch.empty((0, N)).stride() is (N, 1))
    return tuple(stride)


def _to_dtensor(local: Tensor, x: DTensor) -> DTensor:
    return DTensor.from_local(_Waited.apply(local), x.device_mesh, x.placements, run_check=False, shape=x.shape,
                              stride=_global_stride(local, x.shape))


def apply(norm, x: DTensor, weight, bias, residual, gate, *options):
    """`norm(x, weight, bias, residual, *options, gate=gate)` (functional._apply) on a DTensor x: the
    checks above, then `norm` on each rank's local tensors, whose outputs come back placed like x."""
    if x.device_mesh.get_coordinate() is None:  # its local tensor is empty (0,) here, not rows of x
        rank = torch.distributed.get_rank()
        raise ValueError(f"x must be a DTensor on a device mesh that includes this rank ({rank}), got one on "
                         f"{x.device_mesh}; call the norm on that mesh's ranks")
    name, param = ("weight", weight) if isinstance(weight, Tensor) else ("bias", bias)
    param_ndim = param.dim() if isinstance(param, Tensor) else 1
    if param_ndim == 2 and tuple(x.shape[-2:]) != tuple(param.shape):  # (before check_x blames a shard of x)
        raise ValueError(f"{name} of shape {tuple(param.shape)} is a per-head (H, N) parameter and needs x of shape "
                         f"(..., {param.shape[0]}, {param.shape[1]}), got {tuple(x.shape)}")
    check_x(x, param_ndim)
    for name, t in (("residual", residual), ("gate", gate)):
        if t is not None:
            _check_like_x(name, t, x)
    _check_param("weight", weight, x.device_mesh)
    _check_param("bias", bias, x.device_mesh)
    outputs = norm(_local(x), _local_param(weight, x), _local_param(bias, x), _local(residual), *options,
                   gate=_local(gate))
    if isinstance(outputs, tuple):  # prenorm: (y, residual_out)
        return tuple(_to_dtensor(out, x) for out in outputs)
    return _to_dtensor(outputs, x)


def _require_dtensor(x) -> None:
    if not isinstance(x, DTensor):
        raise TypeError(f"x must be a DTensor (use normkit.rms_norm / layer_norm for plain tensors), "
                        f"got {type(x).__name__}")


def rms_norm(x: DTensor, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
             residual: Optional[DTensor] = None, *, prenorm: bool = False, **kwargs):
    """`normkit.rms_norm` for a DTensor x (which it now takes itself): a TypeError for a plain x."""
    _require_dtensor(x)
    return functional.rms_norm(x, weight, bias, residual, prenorm=prenorm, **kwargs)


def layer_norm(x: DTensor, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               residual: Optional[DTensor] = None, *, prenorm: bool = False, **kwargs):
    """`normkit.layer_norm` for a DTensor x; same conventions as `rms_norm` here."""
    _require_dtensor(x)
    return functional.layer_norm(x, weight, bias, residual, prenorm=prenorm, **kwargs)
