"""normkit under `torch.distributed`: DTensor (sequence / data parallel) inputs to the norms.

DDP and FSDP2 (`fully_shard`) need nothing from normkit: the norms see plain local tensors and
the wrappers reduce the parameter gradients like any other. This module is for DTensor inputs,
e.g. the activations of sequence parallelism, sharded as Shard(0) or Shard(1) of (B, S, N):

    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    x = distribute_tensor(x, mesh, [Shard(1)])            # (B, S, N), the sequence split
    weight = distribute_tensor(weight, mesh, [Replicate()])
    y = normkit.distributed.rms_norm(x, weight)           # a DTensor placed like x

Each rank normalises its own rows (every row lies whole on one rank, so the statistics are
exact and nothing is gathered); the kernels are the single-device ones and hold no collectives.
The gradient of a replicated weight / bias is a sum over all rows, so each rank's local sum is
a Partial placement on every mesh dimension along which x is sharded; it is all-reduced
(redistributed to Replicate) before it reaches `weight.grad`. dx comes back placed like x.

Supported: x (and residual) placed Replicate or Shard(d) on each mesh dimension, with d not
one of the dimensions the weight spans (the last, or the last two for a per-head (H, N)
weight); weight and bias Replicate DTensors on x's mesh. Anything else raises, in particular a
shard of the normalised dimension (the statistics would be those of a fraction of each row)
and Partial inputs (a norm is not linear in its input).
"""

from typing import Optional

import torch
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard

from . import functional

Tensor = torch.Tensor


def _check_input(name: str, t: Tensor, param_ndim: int, mesh=None) -> None:
    """x / residual: a DTensor, no Partial, no Shard of the dimensions the norm reduces over."""
    if not isinstance(t, DTensor):
        raise TypeError(f"{name} must be a DTensor (use normkit.rms_norm for plain tensors), got {type(t).__name__}")
    if mesh is not None and t.device_mesh != mesh:
        raise ValueError(f"{name} must be on x's device mesh {mesh}, got {t.device_mesh}")
    normalised = range(t.dim() - param_ndim, t.dim())
    for mesh_dim, placement in enumerate(t.placements):
        if isinstance(placement, Partial):
            raise ValueError(f"{name} must not be Partial (mesh dim {mesh_dim}): a norm is not linear in "
                             f"its input; redistribute it to Replicate or Shard first")
        if isinstance(placement, Shard) and placement.dim % t.dim() in normalised:
            raise ValueError(
                f"{name} of shape {tuple(t.shape)} is sharded along dimension {placement.dim} "
                f"(mesh dim {mesh_dim}), which the norm reduces over; shard a leading dimension "
                f"(e.g. Shard(0) or Shard(1) of (B, S, N)) or redistribute it to Replicate")


def _check_param(name: str, param: Optional[Tensor], mesh) -> None:
    if param is None:
        return
    if not isinstance(param, DTensor):
        raise TypeError(f"{name} must be a DTensor replicated on x's mesh (distribute_tensor(p, mesh, "
                        f"[Replicate()])) or None, got {type(param).__name__}")
    if param.device_mesh != mesh:
        raise ValueError(f"{name} must be on x's device mesh {mesh}, got {param.device_mesh}")
    if not all(isinstance(p, Replicate) for p in param.placements):
        raise ValueError(f"{name} must be Replicate on every mesh dimension, got {tuple(param.placements)}")


class _ReplicateGrad(torch.autograd.Function):
    """Identity on a DTensor; its gradient (Partial where x was sharded) is all-reduced to Replicate."""

    @staticmethod
    def forward(ctx, param):
        return param.view_as(param)

    @staticmethod
    def backward(ctx, grad):
        return grad.redistribute(grad.device_mesh, [Replicate()] * grad.device_mesh.ndim)


def _local_param(param: Optional[Tensor], x: DTensor) -> Optional[Tensor]:
    """The replicated parameter's local tensor; its local gradient is Partial where x is sharded."""
    if param is None:
        return None
    grad_placements = [Partial() if isinstance(p, Shard) else Replicate() for p in x.placements]
    return _ReplicateGrad.apply(param).to_local(grad_placements=grad_placements)


def _to_dtensor(local: Tensor, x: DTensor) -> DTensor:
    return DTensor.from_local(local, x.device_mesh, x.placements, run_check=False, shape=x.shape,
                              stride=x.stride())


def _apply(norm, x, weight, bias, residual, prenorm, **kwargs):
    param = weight if weight is not None else bias
    param_ndim = param.dim() if param is not None else 1
    _check_input("x", x, param_ndim)
    if residual is not None:
        _check_input("residual", residual, param_ndim, x.device_mesh)
        if tuple(residual.placements) != tuple(x.placements):
            raise ValueError(f"residual must be placed like x ({tuple(x.placements)}), "
                             f"got {tuple(residual.placements)}")
    _check_param("weight", weight, x.device_mesh)
    _check_param("bias", bias, x.device_mesh)
    outputs = norm(x.to_local(), _local_param(weight, x), _local_param(bias, x),
                   None if residual is None else residual.to_local(), prenorm=prenorm, **kwargs)
    if prenorm:
        return _to_dtensor(outputs[0], x), _to_dtensor(outputs[1], x)
    return _to_dtensor(outputs, x)


def rms_norm(x: DTensor, weight: Optional[DTensor] = None, bias: Optional[DTensor] = None,
             residual: Optional[DTensor] = None, *, prenorm: bool = False, **kwargs):
    """`normkit.rms_norm` on DTensors (see the module docstring for the supported placements).

    Returns a DTensor placed like x (or (y, residual_out) with prenorm=True); keyword arguments
    (eps, weight_offset, out_dtype, residual_dtype, casting_mode) are `normkit.rms_norm`'s.
    """
    return _apply(functional.rms_norm, x, weight, bias, residual, prenorm, **kwargs)


def layer_norm(x: DTensor, weight: Optional[DTensor] = None, bias: Optional[DTensor] = None,
               residual: Optional[DTensor] = None, *, prenorm: bool = False, **kwargs):
    """`normkit.layer_norm` on DTensors; same conventions as `rms_norm` here."""
    return _apply(functional.layer_norm, x, weight, bias, residual, prenorm, **kwargs)
