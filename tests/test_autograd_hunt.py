"""Autograd paths off the usual road, against float64 autograd: saved tensors that come back through
saved-tensor hooks (offloading: `torch.autograd.graph.save_on_cpu`, or a hook's own copy) in another
layout than the forward saved them, on a call signature whose backward ran before (`normkit.calls`
keeps its launch plan)."""

import pytest
import torch
import torch.nn.functional as F

import normkit
from normkit import launchers

M, N = 4, 8


def _reference_grads(x, weight, gate, dy):
    """d(Σ y·dy)/d(x, weight, gate) in float64 for y = rms_norm(x)·weight·silu(gate) (gate optional)."""
    leaves = [None if t is None else t.detach().double().requires_grad_() for t in (x, weight, gate)]
    x64, w64, g64 = leaves
    y = F.rms_norm(x64, (x.shape[-1],), w64, eps=1e-6)
    if g64 is not None:
        y = y * F.silu(g64)
    return torch.autograd.grad(y, [t for t in leaves if t is not None], dy.double())


def _contiguous_copies():
    return torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach().contiguous(), lambda t: t)


def _misaligned_copies():
    """Unpacks each saved tensor as a copy with its strides, 4 bytes into a fresh buffer: another
    16-byte alignment, which Triton specialises a launch on."""
    def unpack(t):
        span = 1 + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
        buffer = torch.empty(span + 1, dtype=t.dtype, device=t.device)[1:]
        return buffer.as_strided(t.shape, t.stride()).copy_(t)
    return torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), unpack)


HOOKS = {"contiguous copies": _contiguous_copies, "misaligned copies": _misaligned_copies,
         "save_on_cpu": lambda: torch.autograd.graph.save_on_cpu(pin_memory=True)}


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("hooks", list(HOOKS))
def test_saved_tensors_in_another_layout_on_a_planned_call(hooks, gated, device, plans_on, monkeypatch):
    """x and gate are column slices of wider tensors (q of a fused qkv projection); the second call
    has the first's signature and saves through hooks that return them in another layout: its
    backward must not launch the plan bound to the first's layout."""
    planned = []
    launch_plan = launchers.launch_bwd_plan
    monkeypatch.setattr(launchers, "launch_bwd_plan", lambda *a: planned.append(1) or launch_plan(*a))
    g = torch.Generator().manual_seed(0)
    wide = torch.randn(M, 3 * N, generator=g).to(device).requires_grad_()
    gates = torch.randn(M, 2 * N, generator=g).to(device).requires_grad_() if gated else None
    weight = torch.randn(N, generator=g).to(device).requires_grad_()
    dy = torch.randn(M, N, generator=g).to(device)
    gate = None if gates is None else gates[:, N:]
    want = _reference_grads(wide[:, N:2 * N], weight, gate, dy)
    leaves = [t for t in (wide, weight, gates) if t is not None]
    for context in (None, HOOKS[hooks]):
        if context is None:
            y = normkit.rms_norm(wide[:, N:2 * N], weight, gate=gate)
        else:
            with context():
                y = normkit.rms_norm(wide[:, N:2 * N], weight, gate=gate)
        got = torch.autograd.grad(y, leaves, dy)
        assert not planned, "a backward plan bound to another layout of the saved tensors was launched"
        grads = dict(zip(("wide", "weight", "gates"), got))
        dx = grads["wide"][:, N:2 * N]
        assert torch.equal(grads["wide"][:, :N], torch.zeros_like(dx)), "x's gradient written outside x"
        torch.testing.assert_close(dx.double(), want[0], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(grads["weight"].double(), want[1], rtol=1e-5, atol=1e-5)
        if gated:
            torch.testing.assert_close(grads["gates"][:, N:].double(), want[2], rtol=1e-5, atol=1e-5)
