"""Double backward: `torch.autograd.grad(y, x, dy, create_graph=True)` through normkit gives a
gradient that is itself differentiable, with the statistics' dependence on h inside its graph.

* gradgradcheck in float64 over the features (RMSNorm / LayerNorm, weight, bias, residual with and
  without prenorm, weight offset, per-head parameters, casting_mode "llama", the modules), on the
  kernels' path (Triton's interpreter on CPU) and on the plain-PyTorch CPU path;
* a gradient-penalty loss y·c + ‖∂y/∂x·dy‖² differentiated against torch's own F.rms_norm /
  F.layer_norm: equal to float64 rounding in float64, close in bfloat16 (with out/residual dtype
  mixes);
* a first-order backward still runs the backward op (the kernels), create_graph=True does not.
"""

import pytest
import torch

import normkit
from normkit import graphs, ops
from tests.autograd_cases import by_name, float64_inputs, normkit_norm, path, torch_norm  # noqa: F401
from tests.feature_cases import DTYPES, Case, _make_case_inputs
from tests.utils import assert_matches

SPECS = ["rms fp32", "rms fp32 w", "rms fp32 w b", "rms fp32 w res", "rms fp32 w b res pre",
         "rms fp32 w res pre off", "rms fp32 w b res pre heads", "rms fp32 b heads", "ln fp32", "ln fp32 w b",
         "ln fp32 w b res", "ln fp32 b res pre", "ln fp32 w b res pre heads"]


def _gradgradcheck(fn, inputs, path_device, request):
    # Every perturbation runs a forward; in Triton's interpreter gradgradcheck's full Jacobian
    # takes seconds a case, so there it checks random projections of it (fast_mode).
    interpreted = path_device == "cpu" and "kernels" in request.node.name
    assert torch.autograd.gradgradcheck(fn, inputs, fast_mode=interpreted)


@pytest.mark.parametrize("spec", SPECS)
def test_gradgradcheck_float64(spec, path, request):
    case = Case.parse(spec)
    names, inputs = float64_inputs(case, path)

    def fn(*tensors):
        given = by_name(names, tensors)
        return normkit_norm(case, given["x"], given.get("weight"), given.get("bias"), given.get("residual"))

    _gradgradcheck(fn, inputs, path, request)


def test_gradgradcheck_llama_casting_float64(path, request):
    names, inputs = float64_inputs(Case.parse("rms fp32 w res"), path)
    _gradgradcheck(lambda x, w, r: normkit.rms_norm(x, w, residual=r, casting_mode="llama"), inputs, path, request)


@pytest.mark.parametrize("module", ["RMSNorm", "LayerNorm", "FusedAddRMSNorm"])
def test_gradgradcheck_modules_float64(module, path, request):
    g = torch.Generator().manual_seed(3)
    rand = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64).to(path).requires_grad_()  # noqa: E731
    if module == "FusedAddRMSNorm":
        norm = normkit.FusedAddRMSNorm(4, weight_offset=1.0, device=path, dtype=torch.float64)
        inputs = (rand(2, 4), rand(2, 4), rand(4))
        fn = lambda x, r, w: torch.func.functional_call(norm, {"weight": w}, (x, r))  # noqa: E731
    else:
        norm = getattr(normkit, module)((2, 2), device=path, dtype=torch.float64)
        params = dict(norm.named_parameters())
        inputs = (rand(2, 2, 2), *(rand(*p.shape) for p in params.values()))
        fn = lambda x, *p: torch.func.functional_call(norm, dict(zip(params, p)), (x,))  # noqa: E731
    _gradgradcheck(fn, inputs, path, request)


def _penalty_grads(norm, x, weight, bias, residual, dy, c):
    """d/d(x, weight, bias, residual) of Σ y·c + ‖∂(Σ y·dy)/∂x‖²: a gradient penalty, whose
    second-order term is lost when the first gradient has no graph."""
    y = norm(x, weight, bias, residual)
    y = y[0] if isinstance(y, tuple) else y
    (dx,) = torch.autograd.grad(y, x, dy, create_graph=True)
    loss = (y.double() * c).sum() + dx.double().square().sum()
    leaves = [t for t in (x, weight, bias, residual) if t is not None]
    return torch.autograd.grad(loss, leaves)


@pytest.mark.parametrize("spec", ["rms fp32 w", "ln fp32 w b", "rms fp32 w b res pre off", "ln fp32 w b res heads"])
def test_penalty_matches_torch_float64(spec, path):
    case = Case.parse(spec)
    names, inputs = float64_inputs(case, path, rows=3, n=8)
    given = by_name(names, inputs)
    args = (given["x"], given.get("weight"), given.get("bias"), given.get("residual"))
    g = torch.Generator().manual_seed(1)
    dy, c = (torch.randn(args[0].shape, generator=g, dtype=torch.float64).to(path) for _ in range(2))
    ours = _penalty_grads(lambda *a: normkit_norm(case, *a), *args, dy, c)
    theirs = _penalty_grads(lambda *a: torch_norm(case, *a), *args, dy, c)
    second = _penalty_grads(lambda *a: torch_norm(case, *a), *args, dy, 0 * c)
    for name, a, b, s in zip(names, ours, theirs, second):
        assert name == "bias" or s.abs().max() > 1e-2, f"{name}: the test needs a second-order term"
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12, msg=f"{name}")


@pytest.mark.parametrize("spec,casting_mode", [
    ("rms bf16 w", "fp32"), ("rms bf16 w", "llama"), ("ln bf16 w b", "fp32"),
    ("rms bf16 w res32 pre out=fp32 rd=fp32", "fp32"), ("ln bf16 w b res pre mixed rd=fp32", "fp32"),
    ("rms fp16 w res pre off out=bf16", "fp32")])
def test_penalty_low_precision_close_to_float64(spec, casting_mode, path):
    """16-bit inputs: the second-order gradient (computed in fp32 from the saved h) within the
    dtype's tolerance of float64 autograd through torch's norms on the same values."""
    case = Case.parse(spec)
    x, weight, bias, residual, _, _ = _make_case_inputs(case, (16, 64), path, seed=5)
    g = torch.Generator().manual_seed(6)
    dy = torch.randn(16, 64, generator=g).to(path, DTYPES[case.out or case.dtype])
    c = torch.randn(16, 64, generator=g, dtype=torch.float64).to(path)
    leaves = [t.requires_grad_() for t in (x, weight, bias, residual) if t is not None]
    ours = _penalty_grads(lambda *a: normkit_norm(case, *a, casting_mode=casting_mode),
                          x, weight, bias, residual, dy, c)
    up = [None if t is None else t.detach().double().requires_grad_() for t in (x, weight, bias, residual)]
    theirs = _penalty_grads(lambda *a: torch_norm(case, *a), *up, dy.double(), c)
    for leaf, a, b in zip(leaves, ours, theirs):
        assert a.dtype == leaf.dtype
        assert_matches(a, b, torch.bfloat16, "second-order gradient")


def test_first_order_backward_keeps_the_backward_op(path, monkeypatch):
    """Plain backward: the backward op (kernels), no graph. create_graph=True: the graph, not the op."""
    calls = []
    outputs, graph = ops._bwd_outputs, graphs.backward_graph  # (every kernel backward allocates with it)
    monkeypatch.setattr(ops, "_bwd_outputs", lambda *a, **k: calls.append("op") or outputs(*a, **k))
    monkeypatch.setattr(graphs, "backward_graph", lambda *a: calls.append("graph") or graph(*a))
    names, (x, w, b, r) = float64_inputs(Case.parse("ln fp32 w b res pre"), path)
    y, h = normkit.layer_norm(x, w, b, r, prenorm=True)
    dx = torch.autograd.grad((y, h), x, (torch.ones_like(y), torch.ones_like(h)), retain_graph=True)[0]
    assert calls == ["op"] and dx.grad_fn is None
    dx = torch.autograd.grad((y, h), x, (torch.ones_like(y), torch.ones_like(h)), create_graph=True)[0]
    assert calls == ["op", "graph"] and dx.grad_fn is not None


def test_unused_outputs_get_no_gradient_work(path):
    """prenorm with only residual_out used: dx = dresidual_out, no weight gradient; y only: the
    usual gradients, and residual gets dx too."""
    names, (x, w, r) = float64_inputs(Case.parse("rms fp32 w res pre"), path)
    y, h = normkit.rms_norm(x, w, residual=r, prenorm=True)
    dh = torch.randn_like(h)
    dx, dw, dr = torch.autograd.grad(h, (x, w, r), dh, allow_unused=True, retain_graph=True)
    assert torch.equal(dx, dh) and torch.equal(dr, dh) and dw is None
    dy = torch.randn_like(y)
    dx, dw, dr = torch.autograd.grad(y, (x, w, r), dy)
    ref = torch.autograd.grad(torch_norm(Case.parse("rms fp32 w res"), x, w, None, r, eps=1e-6), (x, w, r), dy)
    for a, b in zip((dx, dw, dr), ref):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_torch_compile_backward_calls_the_backward_op(device):
    """Under torch.compile the traced backward is the backward op (the kernels), not the torch-op form."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    graphs = []

    def capture(graph_module, example_inputs):
        graphs.append(graph_module.code)
        return make_boxed_func(graph_module.forward)

    case = Case.parse("ln fp32 w b res pre")
    names, (x, w, b, r) = float64_inputs(case, device)
    compiled = torch.compile(lambda *a: normkit_norm(case, *a), fullgraph=True,
                             backend=aot_autograd(fw_compiler=capture, bw_compiler=capture))
    loss = lambda y, h: (y * y).sum() + h.sum()  # noqa: E731
    grads = torch.autograd.grad(loss(*compiled(x, w, b, r)), (x, w, b, r))
    want = torch.autograd.grad(loss(*torch_norm(case, x, w, b, r)), (x, w, b, r))
    for a, c in zip(grads, want):
        torch.testing.assert_close(a, c, rtol=1e-10, atol=1e-12)
    forward, backward = graphs
    # the opaque ops, or their kernels where NORMKIT_COMPILE_OPS=triton traces them (normkit.compiled)
    assert any(op in forward for op in ("normkit.norm_fwd", "triton_kernel_wrapper"))
    assert any(op in backward for op in ("normkit.norm_bwd", "triton_kernel_wrapper")) and "rsqrt" not in backward
