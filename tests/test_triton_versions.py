"""Tritons older than normkit's kernels support (`_runtime.MIN_TRITON`: compiled 3.3, interpreter 3.4) take the
plain-PyTorch path with one warning naming both versions, never a compile error deep in a kernel. The kernels
themselves are compiled under Triton 3.3 and interpreted under 3.4 by .ci/check_triton_floor.sh."""

import pytest
import torch
import triton

import normkit
from normkit import _runtime, ops


@pytest.fixture
def triton_version(monkeypatch):
    """Set the version Triton reports; `triton_supported` forgets its answers before and after."""
    def set_version(version: str) -> None:
        monkeypatch.setattr(triton, "__version__", version)
        _runtime.triton_supported.cache_clear()
        ops.clear_plans()  # a planned call skips the backend choice

    yield set_version
    monkeypatch.undo()
    _runtime.triton_supported.cache_clear()
    ops.clear_plans()


@pytest.mark.parametrize("version, compiled, interpreted", [
    ("3.2.0", False, False), ("3.3.1", True, False), ("3.4.0", True, True), ("3.6.0", True, True),
    ("3.10.0+git1234abcd", True, True)])
def test_the_oldest_triton_each_way_takes(triton_version, version, compiled, interpreted):
    triton_version(version)
    for way, supported in (("compiled", compiled), ("interpreter", interpreted)):
        if supported:
            assert _runtime.triton_supported(way)
        else:
            oldest = ".".join(map(str, _runtime.MIN_TRITON[way]))
            with pytest.warns(RuntimeWarning, match=rf"{way} kernels need Triton >= {oldest}, found {version}"):
                assert not _runtime.triton_supported(way)
    assert _runtime.uses_triton(torch.device("cuda")) == compiled  # (no GPU touched: the version decides)
    assert normkit.lowlevel.backend("cpu") == ("interpreter" if interpreted else "reference")


def test_an_old_triton_still_gives_right_answers(triton_version):
    triton_version("3.3.1")
    x = torch.randn(6, 40, dtype=torch.float64, requires_grad=True)
    w = torch.rand(40, dtype=torch.float64, requires_grad=True)
    with pytest.warns(RuntimeWarning, match="plain-PyTorch path"):
        y = normkit.rms_norm(x, w, eps=1e-6)
    xr, wr = x.detach().requires_grad_(), w.detach().requires_grad_()
    ref = xr * torch.rsqrt(xr.pow(2).mean(-1, keepdim=True) + 1e-6) * wr
    torch.testing.assert_close(y, ref, rtol=1e-12, atol=1e-12)
    dy = torch.randn_like(y)
    torch.testing.assert_close(torch.autograd.grad(y, (x, w), dy), torch.autograd.grad(ref, (xr, wr), dy),
                               rtol=1e-10, atol=1e-12)
