"""torch.compile around what the other compile tests leave out, against float64 torch: forward-mode AD
(torch.func.jvp, dual tensors) and the torch.func transforms traced inside the compiled function.

CPU: Dynamo + AOTAutograd (backend "aot_eager"), the kernels under Triton's interpreter; both compile
modes (the opaque custom ops and the traced Triton kernels, `normkit.ops.set_compile_ops`).
"""

import pytest
import torch
import torch.autograd.forward_ad as fwAD
import torch.nn.functional as F

import normkit
from normkit import ops

TOL = dict(rtol=1e-10, atol=1e-12)
N = 8


@pytest.fixture(params=["opaque", "triton"], autouse=True)
def compile_ops(request):
    torch._dynamo.reset()
    mode = ops.get_compile_ops()
    ops.set_compile_ops(request.param)
    yield request.param
    torch._dynamo.reset()
    ops.set_compile_ops(mode)


def _inputs(device, heads: int = 1):
    """x (3, N) or (3, heads, N), weight and bias ((N,) or per-head (heads, N)), a residual, and a tangent of each."""
    g = torch.Generator().manual_seed(5)
    rand = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64).to(device)  # noqa: E731
    param = (N,) if heads == 1 else (heads, N)
    rows = (3, N) if heads == 1 else (3, heads, N)
    primals = (rand(*rows), 1 + rand(*param), rand(*param), rand(*rows))
    return primals, tuple(rand(*t.shape) for t in primals)


def _torch_norm(norm: str, x, weight, bias, residual):
    """The float64 reference: torch's own norm over per-head rows (the parameters broadcast per head)."""
    h = x + residual
    if weight.dim() == 2:
        h = h.view(-1, *weight.shape)
    if norm == "rms":
        y = F.rms_norm(h, (N,), eps=1e-6) * weight + bias
    else:
        y = F.layer_norm(h, (N,), eps=1e-5) * weight + bias
    return y.reshape(x.shape), (x + residual)


def _normkit_norm(norm: str, x, weight, bias, residual):
    fn = normkit.rms_norm if norm == "rms" else normkit.layer_norm
    return fn(x, weight, bias, residual, prenorm=True)


@pytest.mark.parametrize("heads", [1, 2])
@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_jvp_inside_the_compiled_function(norm, heads, device):
    """torch.compile(torch.func.jvp(norm, ...)): Dynamo traces NormFunction's forward alone there, and the op
    inside it had no tangent — y's tangent came back zeros."""
    primals, tangents = _inputs(device, heads)
    jvp = lambda fn: lambda *p: torch.func.jvp(lambda *a: fn(norm, *a), p, tangents)  # noqa: E731
    got = torch.compile(jvp(_normkit_norm), backend="aot_eager", fullgraph=True)(*primals)
    torch.testing.assert_close(got, jvp(_torch_norm)(*primals), **TOL)


@pytest.mark.parametrize("inside", [True, False], ids=["dual-level-inside", "dual-inputs"])
def test_forward_ad_dual_tensors(inside, device):
    """Forward-mode AD through a compiled norm: dual_level inside the compiled function, or dual tensors
    passed to it. The tangent came back None (zeros)."""
    (x, weight, bias, residual), (tx, tweight, tbias, tresidual) = _inputs(device)

    def forward(x, weight, bias, residual):
        return normkit.rms_norm(fwAD.make_dual(x, tx), fwAD.make_dual(weight, tweight),
                                fwAD.make_dual(bias, tbias), fwAD.make_dual(residual, tresidual))

    expected = torch.func.jvp(lambda *a: _torch_norm("rms", *a)[0], (x, weight, bias, residual),
                              (tx, tweight, tbias, tresidual))[1]
    if inside:
        def tangent(*primals):
            with fwAD.dual_level():
                return fwAD.unpack_dual(forward(*primals)).tangent

        got = torch.compile(tangent, backend="aot_eager", fullgraph=True)(x, weight, bias, residual)
    else:
        compiled = torch.compile(lambda *a: normkit.rms_norm(*a), backend="aot_eager")
        with fwAD.dual_level():
            duals = [fwAD.make_dual(p, t) for p, t in zip((x, weight, bias, residual), (tx, tweight, tbias, tresidual))]
            got = fwAD.unpack_dual(compiled(*duals)).tangent
    assert got is not None
    torch.testing.assert_close(got, expected, **TOL)


TRANSFORMS = {  # name: transform of a loss of (x, weight, bias, residual)
    "grad": lambda loss: torch.func.grad(loss, argnums=(0, 1, 2, 3)),
    "jacrev": lambda loss: torch.func.jacrev(loss, argnums=(0, 1)),
    "hessian": lambda loss: torch.func.hessian(loss, argnums=0),
}


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_func_transforms_inside_the_compiled_function(norm, transform, device):
    """torch.compile(torch.func.grad / jacrev / hessian(loss)): Dynamo handed the op grad-tracking tensors,
    which it refused ("RuntimeError when making fake tensor call"). Now torch's float64 values."""
    primals, _ = _inputs(device)

    def loss(fn):
        return lambda *a: sum((t.sin() * t).sum() for t in fn(norm, *a))

    got = torch.compile(TRANSFORMS[transform](loss(_normkit_norm)), backend="aot_eager", fullgraph=True)(*primals)
    torch.testing.assert_close(got, TRANSFORMS[transform](loss(_torch_norm))(*primals), **TOL)


@pytest.mark.parametrize("compiled_forward", [False, True], ids=["eager-forward", "compiled-forward"])
@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_compiled_autograd(norm, compiled_forward, device):
    """Compiled autograd (Dynamo traces the backward): with an eager forward it traced the backward of the
    forward's call plan into its launch, with the traced kernels into Triton's interpreter (both failed on fake
    tensors). Gradients as torch's in float64."""
    primals, (dy, *_) = _inputs(device)
    forward = torch.compile(_normkit_norm, backend="aot_eager") if compiled_forward else _normkit_norm

    def gradients(fn, *tensors) -> tuple:
        leaves = [t.clone().requires_grad_() for t in tensors]
        y, h = fn(norm, *leaves)
        return torch.autograd.grad((y * dy).sum() + (h * h).sum(), leaves)

    forward(norm, *primals)  # (an eager forward records its call plan: the second call takes it)
    with torch._dynamo.compiled_autograd._enable(torch.compile(backend="aot_eager")):
        got = gradients(forward, *primals)
    torch.testing.assert_close(got, gradients(_torch_norm, *primals), **TOL)


@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_gradient_penalty_traced_by_dynamo(norm, device, monkeypatch):
    """trace_autograd_ops (what Dynamo's error for torch.autograd.grad in a compiled function suggests) traces a
    gradient penalty into one graph: an autograd.Function's backward there is no longer differentiated (a torch
    limit), and the second-order gradients of x, weight and the residual came back wrong without an error."""
    monkeypatch.setattr(torch._dynamo.config, "trace_autograd_ops", True)
    primals, (dy, *_) = _inputs(device)

    def penalty(fn):
        def loss(x, weight, bias, residual):
            y, _ = fn(norm, x, weight, bias, residual)
            dx, dweight = torch.autograd.grad(y, (x, weight), dy, create_graph=True)
            return (y * y).sum() + (dx * dx).sum() + (dweight * dweight).sum()
        return loss

    def gradients(loss) -> tuple:
        leaves = [t.clone().requires_grad_() for t in primals]
        return torch.autograd.grad(loss(*leaves), leaves)

    got = gradients(torch.compile(penalty(_normkit_norm), backend="aot_eager", fullgraph=True))
    torch.testing.assert_close(got, gradients(penalty(_torch_norm)), **TOL)


@pytest.mark.parametrize("heads", [1, 3])
def test_two_rows_marked_dynamic(heads, device):
    """mark_dynamic on 2 rows (a head): the traced tile's guards bounded M by the power of two it falls below,
    (1, 2], one value, and Dynamo refused ("specialized it to be a constant (2)"). Without heads one graph serves
    2 to 4 rows (the per-head forward fits its tile to all 3·rows)."""
    from torch._dynamo.testing import CompileCounterWithBackend

    g = torch.Generator().manual_seed(6)
    weight = torch.randn(heads, N, generator=g, dtype=torch.float64).to(device).squeeze(0)
    counter = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(lambda x: normkit.rms_norm(x, weight), backend=counter, fullgraph=True)
    for rows in (2, 3, 4):
        x = torch.randn(rows, heads, N, generator=g, dtype=torch.float64).to(device).squeeze(1)
        dy = torch.randn(x.shape, generator=g, dtype=torch.float64).to(device)
        leaves = [x.clone().requires_grad_() for _ in range(2)]
        torch._dynamo.mark_dynamic(leaves[0], 0)
        got = compiled(leaves[0])
        expected = (F.rms_norm(leaves[1].view(rows, heads, N), (N,), eps=1e-6) * weight).view(x.shape)
        torch.testing.assert_close(got, expected, **TOL)
        gradients = [torch.autograd.grad(y, leaf, dy) for y, leaf in zip((got, expected), leaves)]
        torch.testing.assert_close(*gradients, **TOL)
    assert heads > 1 or counter.frame_count == 1
