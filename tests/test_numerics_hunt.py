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


@pytest.mark.parametrize("rms", [True, False])
@pytest.mark.parametrize("dtype,residual_dtype", [
    (torch.float32, torch.bfloat16), (torch.float32, torch.float16), (torch.float64, torch.float32),
    (torch.bfloat16, torch.float32)])
def test_residual_dtype_without_a_residual_keeps_gradients_exact(device, rms, dtype, residual_dtype):
    """Without a residual h is x, and residual_out (h in residual_dtype) is never returned: prenorm needs a
    residual. The gradients are x's, in x's precision: not those of x rounded to residual_dtype (they
    were, differentiated from that unreturned copy: fp32 x's dx 1.6e-3 off with residual_dtype=bfloat16)."""
    g = torch.Generator().manual_seed(1)
    x, dy = (torch.randn(4, 24, generator=g, dtype=torch.float64).to(device, dtype) for _ in range(2))
    weight = (1 + 0.5 * torch.randn(24, generator=g, dtype=torch.float64)).to(device, dtype)
    x64, w64 = (t.detach().double().requires_grad_() for t in (x, weight))
    y64 = F.rms_norm(x64, (24,), w64, 1e-6) if rms else F.layer_norm(x64, (24,), w64, None, 1e-5)
    y64.backward(dy.double())
    leaves = [t.clone().requires_grad_() for t in (x, weight)]
    norm = normkit.rms_norm if rms else normkit.layer_norm
    for _ in range(2):  # the first call and a planned one
        for leaf in leaves:
            leaf.grad = None
        y = norm(leaves[0], leaves[1], residual_dtype=residual_dtype)
        y.backward(dy)
        assert y.dtype == dtype
        assert_matches(y, y64, dtype, "y")
        assert_matches(leaves[0].grad, x64.grad, dtype, "dx")
        assert_matches(leaves[1].grad, w64.grad, dtype, "dweight")


_RSTD_PTX = r"""
import re, sys
sys.path.insert(0, "tools")
import compile_check as cc
picked = re.compile(r"^(fwd (bf16|fp64) (one_tile|split rms|reload)|fwd fp16 one_tile|bwd (bf16|fp16|fp64) "
                    r"(one_tile|split rms).*recompute=True)")
for name, kernel, dtype, pointers, constexprs, warps in cc.cases():
    if picked.match(name):
        ptx = cc.compile_ptx(kernel, dtype, pointers, constexprs, warps)
        print(name, "|", sorted(set(re.findall(r"sqrt\.(?:rn|approx)[.a-z0-9]*", ptx))))
"""


def test_rstd_square_root_keeps_subnormal_variances():
    """rstd = 1/sqrt(var + eps) takes the IEEE square root (sqrt.rn), not Triton's tl.sqrt (on NVIDIA GPUs
    sqrt.approx.ftz.f32, which flushes a subnormal var + eps to 0): with eps = 0 a row of |h| ≲ 1e-19
    got rstd = inf and y = ±inf on an H100 where torch's F.rms_norm gives the normalised row (the
    interpreter keeps subnormals: only the compiled PTX shows it). Every tiling that computes rstd,
    forward and recomputing backward, float32 and float64, compiled for sm_90 on the CPU."""
    import pathlib
    import subprocess
    import sys

    from tests.test_gpu_compile import _compiler_env

    root = pathlib.Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", _RSTD_PTX], cwd=root, env=_compiler_env(), capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 14, out.stdout
    for line in lines:
        name, roots = line.split(" | ")
        assert roots == ("['sqrt.rn.f64']" if "fp64" in name else "['sqrt.rn.f32']"), line


@pytest.mark.parametrize("rms", [True, False])
@pytest.mark.parametrize("scale", [7e-20, 4e-20])
def test_eps_zero_rows_with_a_subnormal_variance(device, rms, scale):
    """eps = 0 and |x| ~ 5e-20: Σx²/N is below float32's normal range (1.2e-38), rstd ~ 2e19 is not.
    y and dx are the normalised row and its gradient, as float64 torch gives them (and float32 torch)."""
    g = torch.Generator().manual_seed(2)
    x = (torch.randn(3, 40, generator=g, dtype=torch.float64) * scale).float().to(device)
    dy = torch.randn(3, 40, generator=g).to(device)
    x64 = x.detach().double().requires_grad_()
    y64 = F.rms_norm(x64, (40,), None, 0.0) if rms else F.layer_norm(x64, (40,), None, None, 0.0)
    y64.backward(dy.double())
    leaf = x.clone().requires_grad_()
    y = normkit.rms_norm(leaf, eps=0.0) if rms else normkit.layer_norm(leaf, eps=0.0)
    y.backward(dy)
    assert_matches(y, y64, torch.float32, "y")
    assert_matches(leaf.grad, x64.grad, torch.float32, "dx")
    _, _, rstd = normkit.rms_norm_fwd(x, eps=0.0, store_rstd=True)
    dx, _, _, _ = normkit.rms_norm_bwd(x, None, dy, None, eps=0.0)  # rstd recomputed in the kernel
    if rms:
        assert_matches(dx, x64.grad, torch.float32, "dx (recomputed rstd)")
    assert_matches(rstd, x.double().square().mean(-1).rsqrt(), torch.float32, "rstd")
