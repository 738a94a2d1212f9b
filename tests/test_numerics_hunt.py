"""Numerics found by a red-team hunt against float64 torch: gradients autograd hands the backward in
unusual forms, and the inputs whose results torch's own norms define."""

import pytest
import torch
import torch.nn.functional as F

import normkit
from tests.utils import assert_matches


def _reference_grads(x, weight, residual, dy, dresidual_out, *, rms):
    """Float64 gradients of (y, residual_out) for h = x + residual through torch's own norms."""
    x64, w64, r64 = (t.detach().double().requires_grad_() for t in (x, weight, residual))
    h = x64 + r64
    n = x.shape[-1]
    y = F.rms_norm(h, (n,), w64, 1e-6) if rms else F.layer_norm(h, (n,), w64, None, 1e-5)
    torch.autograd.backward([y, h], [dy.double(), dresidual_out.double()])
    return x64.grad, w64.grad, r64.grad


@pytest.mark.parametrize("rms", [True, False])
@pytest.mark.parametrize("plans", [False, True])
def test_negative_view_gradients_are_read_as_their_values(device, rms, plans, request):
    """Autograd hands the backward a negative view (`z.conj().imag`'s gradient, torch._neg_view) as
    it was given: its memory holds the negated values. The kernels read memory; the gradients must
    be those of the values the view shows (it was read as its memory: every gradient's sign flipped),
    on the first call and on a planned one."""
    if plans:
        request.getfixturevalue("plans_on")
    g = torch.Generator().manual_seed(0)
    x, residual, dy, dresidual_out = (torch.randn(4, 16, generator=g).to(device) for _ in range(4))
    weight = torch.randn(16, generator=g).to(device)
    expected = _reference_grads(x, weight, residual, dy, dresidual_out, rms=rms)
    norm = normkit.rms_norm if rms else normkit.layer_norm
    for negated in (False, True, True):  # plain first: the call and its backward are planned
        leaves = [t.clone().requires_grad_() for t in (x, weight, residual)]
        y, residual_out = norm(leaves[0], leaves[1], residual=leaves[2], prenorm=True)
        grads = (torch._neg_view(-dy), torch._neg_view(-dresidual_out)) if negated else (dy, dresidual_out)
        assert all(t.is_neg() == negated for t in grads)
        torch.autograd.backward([y, residual_out], list(grads))
        for name, leaf, ref in zip(("dx", "dweight", "dresidual"), leaves, expected):
            assert_matches(leaf.grad, ref, torch.float32, f"{name} (negative-view gradients: {negated})")
