"""Shared by the double-backward and torch.func tests: the two CPU paths, normkit called for a
feature `Case` (tests/feature_cases.py), and the same normalisation through torch's own
differentiable-to-any-order `F.rms_norm` / `F.layer_norm`, the reference."""

import pytest
import torch
import torch.nn.functional as F

import normkit
from normkit import launchers
from tests.feature_cases import DTYPES, Case, _make_case_inputs

NAMES = ("x", "weight", "bias", "residual")


@pytest.fixture(params=["kernels", "reference"])
def path(request, monkeypatch, device) -> str:
    """Where normkit computes — its kernels (Triton's interpreter on CPU) or the plain-PyTorch CPU
    path (`normkit.reference`, what CPU tensors take without TRITON_INTERPRET); returns the device."""
    if request.param == "reference":
        monkeypatch.setattr(launchers, "uses_triton", lambda device: False)
        return "cpu"
    return device


def offset(case: Case) -> float:
    return 1.0 if case.offset else 0.0


def normkit_norm(case: Case, x, weight=None, bias=None, residual=None, *, eps=1e-5, **kwargs):
    """normkit's rms_norm / layer_norm for `case` (prenorm, weight_offset, out and residual dtypes)."""
    if case.out:
        kwargs["out_dtype"] = DTYPES[case.out]
    if case.rd:
        kwargs["residual_dtype"] = DTYPES[case.rd]
    if case.norm == "rms":
        return normkit.rms_norm(x, weight, bias, residual, eps=eps, prenorm=case.prenorm,
                                weight_offset=offset(case), **kwargs)
    return normkit.layer_norm(x, weight, bias, residual, eps=eps, prenorm=case.prenorm, **kwargs)


def torch_norm(case: Case, x, weight=None, bias=None, residual=None, *, eps=1e-5):
    """The same through torch.nn.functional: y, or (y, h) with prenorm."""
    h = x if residual is None else x + residual
    norm = F.rms_norm if case.norm == "rms" else F.layer_norm
    y = norm(h, (x.shape[-1],), eps=eps)
    if weight is not None:
        y = y * (weight + offset(case))
    if bias is not None:
        y = y + bias
    return (y, h) if case.prenorm else y


def float64_inputs(case: Case, device, *, seed=0, rows=2, n=4):
    """(names, tensors): the case's x, weight, bias, residual in float64, requiring grad; x of
    shape (rows, n), or (rows, 2, n) with per-head parameters (2, n)."""
    shape = (rows, 2, n) if case.heads else (rows, n)
    tensors = _make_case_inputs(case, shape, device, seed)[:4]
    given = [(name, t.double().requires_grad_()) for name, t in zip(NAMES, tensors) if t is not None]
    return tuple(name for name, _ in given), tuple(t for _, t in given)


def by_name(names, tensors) -> dict:
    return dict(zip(names, tensors))
