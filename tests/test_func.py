"""torch.func and the other transforms over normkit, against torch's F.rms_norm / F.layer_norm in
float64: grad, vjp, jacrev, jacfwd, hessian, jvp, forward-mode AD (torch.autograd.forward_ad),
vmap (x, the residual, the parameters or several of them vmapped, also around grad), and
torch.jit.trace — on the kernels' path and on the plain-PyTorch CPU path.
"""

import pytest
import torch
import torch.autograd.forward_ad as fwAD

import normkit
from tests.autograd_cases import by_name, float64_inputs, normkit_norm, path, torch_norm  # noqa: F401
from tests.feature_cases import Case

SPECS = ["rms fp32 w", "ln fp32 w b", "rms fp32 w b res pre off", "ln fp32 w b res heads"]
TOL = dict(rtol=1e-10, atol=1e-12)


def _both(case, names):
    """(normkit, torch) as functions of the case's tensors, returning a tuple of outputs."""
    def make(norm):
        def fn(*tensors):
            given = by_name(names, tensors)
            out = norm(case, given["x"], given.get("weight"), given.get("bias"), given.get("residual"))
            return out if isinstance(out, tuple) else (out,)
        return fn
    return make(normkit_norm), make(torch_norm)


def _close(a, b, what):
    for i, (p, q) in enumerate(zip(torch.utils._pytree.tree_leaves(a), torch.utils._pytree.tree_leaves(b))):
        torch.testing.assert_close(p, q, **TOL, msg=f"{what} [{i}]")


def _detached(inputs):
    return tuple(t.detach() for t in inputs)


def _setup(spec, device):
    """(names, detached float64 inputs, normkit's function, torch's) for a feature spec."""
    case = Case.parse(spec)
    names, inputs = float64_inputs(case, device)
    return (names, _detached(inputs), *_both(case, names))


@pytest.mark.parametrize("spec", SPECS)
def test_grad_vjp_jacrev(spec, path):
    names, inputs, ours, theirs = _setup(spec, path)
    argnums = tuple(range(len(inputs)))
    loss = lambda fn: lambda *t: sum((o * o.sin()).sum() for o in fn(*t))  # noqa: E731
    _close(torch.func.grad(loss(ours), argnums)(*inputs), torch.func.grad(loss(theirs), argnums)(*inputs), "grad")
    cotangents = tuple(torch.randn_like(o) for o in theirs(*inputs))
    _close(torch.func.vjp(ours, *inputs)[1](cotangents), torch.func.vjp(theirs, *inputs)[1](cotangents), "vjp")
    _close(torch.func.jacrev(ours, argnums)(*inputs), torch.func.jacrev(theirs, argnums)(*inputs), "jacrev")


@pytest.mark.parametrize("spec", SPECS)
def test_jvp_and_forward_ad(spec, path):
    names, inputs, ours, theirs = _setup(spec, path)
    g = torch.Generator().manual_seed(7)
    tangents = tuple(torch.randn(t.shape, generator=g, dtype=t.dtype).to(path) for t in inputs)
    _close(torch.func.jvp(ours, inputs, tangents), torch.func.jvp(theirs, inputs, tangents), "jvp")
    with fwAD.dual_level():
        duals = [fwAD.make_dual(t, dt) for t, dt in zip(inputs, tangents)]
        got = [fwAD.unpack_dual(o).tangent for o in ours(*duals)]
    _close(got, torch.func.jvp(theirs, inputs, tangents)[1], "forward_ad")
    # a tangent for the weight only: ẏ = x̂·ẇ, and residual_out's tangent is zero
    only_weight = tuple(torch.zeros_like(t) if name != "weight" else dt for name, t, dt in zip(names, inputs, tangents))
    _close(torch.func.jvp(ours, inputs, only_weight)[1], torch.func.jvp(theirs, inputs, only_weight)[1], "jvp(ẇ)")


@pytest.mark.parametrize("spec", ["rms fp32 w", "ln fp32 w b res"])
def test_jacfwd_and_hessian(spec, path):
    names, inputs, ours, theirs = _setup(spec, path)
    loss = lambda fn: lambda *t: (fn(*t)[0].exp()).sum()  # noqa: E731
    _close(torch.func.jacfwd(ours)(*inputs), torch.func.jacfwd(theirs)(*inputs), "jacfwd")
    _close(torch.func.hessian(loss(ours))(*inputs), torch.func.hessian(loss(theirs))(*inputs), "hessian")


def test_gradcheck_forward_ad_and_batched_checks(path):
    """torch.autograd.gradcheck's forward-mode and batched (vmapped) checks, and gradgradcheck's
    forward-over-reverse: they batch gradients with torch's older vmap, which torch.func does not see."""
    names, inputs = float64_inputs(Case.parse("ln fp32 w b res pre"), path)
    fn = lambda x, w, b, r: normkit.layer_norm(x, w, b, r, prenorm=True)  # noqa: E731
    assert torch.autograd.gradcheck(fn, inputs, check_forward_ad=True, check_batched_grad=True,
                                    check_batched_forward_grad=True)
    assert torch.autograd.gradgradcheck(fn, inputs, check_fwd_over_rev=True, check_batched_grad=True,
                                        fast_mode=True)


def test_autograd_functional_vectorized(path):
    names, inputs, ours, theirs = _setup("rms fp32 w res", path)
    first = lambda fn: lambda *t: fn(*t)[0]  # noqa: E731
    loss = lambda fn: lambda *t: fn(*t)[0].exp().sum()  # noqa: E731
    jacobian, hessian = torch.autograd.functional.jacobian, torch.autograd.functional.hessian
    _close(jacobian(first(ours), inputs, vectorize=True), jacobian(first(theirs), inputs, vectorize=True),
           "jacobian(vectorize)")
    _close(hessian(loss(ours), inputs, vectorize=True), hessian(loss(theirs), inputs, vectorize=True),
           "hessian(vectorize)")


VMAPS = [  # (spec, in_dims over the case's tensors)
    ("rms fp32 w", (0, None)),
    ("rms fp32 w", (1, None)),  # the vmapped dimension is not the leading one
    ("rms fp32 w", (0, 0)),  # B weights: folded into B per-head weights
    ("rms fp32 w", (None, 0)),  # x shared, weight vmapped
    ("ln fp32 w b", (0, None, 0)),  # bias vmapped, weight shared
    ("rms fp32 w b heads", (0, 0, 0)),  # per-head (H, N) parameters, vmapped
    ("rms fp32 w res pre", (None, None, 0)),  # only the residual vmapped
    ("ln fp32 w b res pre heads", (0, None, None, 0)),
]


@pytest.mark.parametrize("spec,in_dims", VMAPS)
def test_vmap(spec, in_dims, path):
    case = Case.parse(spec)
    names, inputs = float64_inputs(case, path)
    batch = 3
    g = torch.Generator().manual_seed(11)
    batched = tuple(t.detach() if dim is None else
                    torch.randn(*t.shape[:dim], batch, *t.shape[dim:], generator=g, dtype=t.dtype).to(path)
                    for t, dim in zip(inputs, in_dims))
    ours, theirs = _both(case, names)
    got = torch.vmap(ours, in_dims=in_dims)(*batched)
    want = [torch.stack(outs) for outs in zip(*(
        theirs(*(t if dim is None else t.select(dim, i) for t, dim in zip(batched, in_dims))) for i in range(batch)))]
    _close(got, want, "vmap")


def test_vmap_of_grad_per_sample_gradients(path):
    """Per-sample weight gradients, the usual vmap(grad) pattern: x vmapped, the weight shared."""
    case = Case.parse("rms fp32 w b")
    names, (x, weight, bias) = float64_inputs(case, path)
    x = torch.randn(5, *x.shape, dtype=x.dtype).to(path)
    ours, theirs = _both(case, names)
    per_sample = lambda fn: torch.func.vmap(  # noqa: E731
        torch.func.grad(lambda xs, w, b: fn(xs, w, b)[0].square().sum(), argnums=(1, 2)), in_dims=(0, None, None))
    _close(per_sample(ours)(x, weight.detach(), bias.detach()),
           per_sample(theirs)(x, weight.detach(), bias.detach()), "vmap(grad)")


def test_modules_under_functional_call_and_grad(path):
    torch.manual_seed(0)
    ours = normkit.RMSNorm(8, eps=1e-6, device=path, dtype=torch.float64)
    theirs = torch.nn.RMSNorm(8, eps=1e-6, device=path, dtype=torch.float64)
    weight = {"weight": torch.randn(8, dtype=torch.float64).to(path)}
    x = torch.randn(2, 3, 8, dtype=torch.float64).to(path)
    grad = lambda m: torch.func.grad(  # noqa: E731
        lambda p, t: torch.func.functional_call(m, p, (t,)).square().sum(), argnums=(0, 1))(weight, x)
    _close(grad(ours), grad(theirs), "functional_call grad")


@pytest.mark.filterwarnings("ignore::torch.jit.TracerWarning", "ignore:`torch.jit.trace` is deprecated")
@pytest.mark.parametrize("prenorm", [False, True])
def test_jit_trace(prenorm, path):
    """The traced function runs normkit's Function again on new inputs: same values and gradients.
    (On the kernels' path the launch used to see the tracer's sizes, tensors.)"""
    case = Case.parse("ln fp32 w b res" + (" pre" if prenorm else ""))
    names, inputs = float64_inputs(case, path, rows=3, n=8)
    ours, theirs = _both(case, names)
    traced = torch.jit.trace(ours, _detached(inputs), check_trace=False)
    _, fresh = float64_inputs(case, path, seed=1, rows=3, n=8)
    got, want = traced(*fresh), theirs(*fresh)
    _close(got, want, "traced forward")
    dy = [torch.randn_like(o) for o in want]
    _close(torch.autograd.grad(got, fresh, dy), torch.autograd.grad(want, fresh, dy), "traced backward")
