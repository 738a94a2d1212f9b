"""DTensor corner cases of normkit.distributed: 2 processes through tests/test_distributed.py's harness (one
spawn per backend), in float64 against the same computation on the full plain tensors in one process:
  strided    x placed _StridedShard, as reshaping a Shard(1) (B, S, N) DTensor to (B·S, N) leaves it: each
             rank's weight gradient is a partial sum, all-reduced like a Shard's; a _StridedShard of the
             normalised dimension raises as a Shard of it does
  layout     the outputs' DTensor strides describe their local tensors (x transposed: y is not laid out as
             x, and y.transpose(...).contiguous().view(...) must see that)
  outside_mesh  x on a mesh without this rank: a clear ValueError there
  per_head   a per-head (H, N) weight beside an x that does not end in (H, N): the mismatch is named
"""

import pytest
import torch

from test_distributed import outcomes  # noqa: F401 (the fixture: one spawn per backend runs SCENARIOS below)
from test_distributed_modules import TOL, _full, _randn


def _strided_case(mesh, weight_kind):
    """rms_norm of x (B, S, N) Shard(1) reshaped to (B·S, N), against the same on the full tensors."""
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    import normkit

    device = mesh.device_type
    x, weight, dy = _randn(2, 6, 16, seed=0, device=device), _randn(16, seed=1, device=device), \
        _randn(2, 6, 16, seed=2, device=device)
    leaves = [t.clone().requires_grad_() for t in (x, weight)]
    expected = normkit.rms_norm(leaves[0].reshape(12, 16), leaves[1])
    expected.backward(dy.reshape(12, 16))

    x_d = distribute_tensor(x, mesh, [Shard(1)]).requires_grad_()
    weight_d = (distribute_tensor(weight, mesh, [Replicate()]) if weight_kind == "dtensor"
                else torch.nn.Parameter(weight.clone())).requires_grad_()
    flat = x_d.reshape(12, 16)
    assert type(flat.placements[0]).__name__ == "_StridedShard", flat.placements  # (not a Shard subclass)
    y = normkit.rms_norm(flat, weight_d)
    assert tuple(y.placements) == tuple(flat.placements)
    y.backward(distribute_tensor(dy, mesh, [Shard(1)]).reshape(12, 16))
    torch.testing.assert_close(y.full_tensor(), expected.detach(), **TOL)
    torch.testing.assert_close(x_d.grad.full_tensor(), leaves[0].grad, **TOL)
    torch.testing.assert_close(_full(weight_d.grad), leaves[1].grad, **TOL)  # was each rank's partial sum


def scenario_strided(rank, mesh):
    from torch.distributed.tensor import Shard, distribute_tensor

    import normkit

    for weight_kind in ("dtensor", "plain"):
        _strided_case(mesh, weight_kind)
    x = distribute_tensor(_randn(2, 8, 4, seed=3, device=mesh.device_type), mesh, [Shard(2)]).reshape(2, 32)
    assert type(x.placements[0]).__name__ == "_StridedShard", x.placements
    with pytest.raises(ValueError, match=r"x of shape \(2, 32\) is sharded along dimension 1 .*reduces over"):
        normkit.rms_norm(x)  # each rank held 16 of a row's 32 values: its statistics were wrong


def scenario_layout(rank, mesh):
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    import normkit

    device = mesh.device_type
    x, residual = (_randn(6, 4, 16, seed=i, device=device) for i in range(2))
    weight = _randn(16, seed=2, device=device)
    y_ref, h_ref = normkit.rms_norm(x, weight, None, residual, prenorm=True)  # (S, B, N)
    weight_d = distribute_tensor(weight, mesh, [Replicate()])
    x_d, residual_d = (distribute_tensor(t, mesh, [Shard(0)]).transpose(0, 1) for t in (x, residual))  # (B, S, N)
    for out, ref in zip(normkit.rms_norm(x_d, weight_d, None, residual_d, prenorm=True), (y_ref, h_ref)):
        assert out.is_contiguous() == out.to_local().is_contiguous(), (out.stride(), out.to_local().stride())
        back = out.transpose(0, 1).contiguous()  # (S, B, N) again: contiguous only if DTensor knows the layout
        torch.testing.assert_close(back.view(24, 16).full_tensor(), ref.view(24, 16), **TOL)


def scenario_outside_mesh(rank, mesh):
    """x on a mesh of rank 0 alone: rank 1 holds an empty (0,) local tensor, which the checks took for x itself
    ("x's last dimension N must be >= 1, got shape (0,)"); rank 0 normalises all of x."""
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.tensor import Shard, distribute_tensor

    import normkit

    x = _randn(3, 16, seed=0, device=mesh.device_type)
    x_d = distribute_tensor(x, DeviceMesh(mesh.device_type, [0]), [Shard(0)])
    if rank == 0:
        torch.testing.assert_close(normkit.rms_norm(x_d).full_tensor(), normkit.rms_norm(x), **TOL)
    else:
        with pytest.raises(ValueError, match=r"x must be a DTensor on a device mesh that includes this rank \(1\), "
                                             r"got one on DeviceMesh.*; call the norm on that mesh's ranks"):
            normkit.rms_norm(x_d)


def scenario_per_head(rank, mesh):
    """A per-head (H, N) weight beside x (B, S, N) sharded along S: the shape mismatch is named (the message
    was "x ... is sharded along dimension 1, which the norm reduces over"); x (B, S, H, N) works."""
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    import normkit

    device = mesh.device_type
    weight = _randn(4, 8, seed=1, device=device)
    with pytest.raises(ValueError, match=r"weight of shape \(4, 8\) is a per-head \(H, N\) parameter and needs x of "
                                         r"shape \(\.\.\., 4, 8\), got \(2, 6, 8\)"):
        normkit.rms_norm(distribute_tensor(_randn(2, 6, 8, seed=0, device=device), mesh, [Shard(1)]), weight)
    x = _randn(2, 5, 4, 8, seed=2, device=device)
    y = normkit.rms_norm(distribute_tensor(x, mesh, [Shard(1)]), distribute_tensor(weight, mesh, [Replicate()]))
    torch.testing.assert_close(y.full_tensor(), normkit.rms_norm(x, weight), **TOL)


SCENARIOS = {"strided": scenario_strided, "layout": scenario_layout, "outside_mesh": scenario_outside_mesh,
             "per_head": scenario_per_head}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_matches_single_process(outcomes, name):
    for rank, results in enumerate(outcomes):
        assert results.get(name) == "ok", f"rank {rank}, {name}:\n{results.get(name)}"
