"""Call plans (normkit.calls, docs/design.md#launch-path): a `rms_norm` / `layer_norm` call whose
signature passed validation and launched before goes straight to its launch.

A hit gives bit for bit what the full path gives (plans off), forward and backward, with and without
autograd, for every feature; the outputs match float64. Whatever validation or the layers below read
is in the signature (a change is a miss); bad input after a hit keeps its errors; transforms, tracing,
subclasses and non-contiguous parameters are never planned; double backward after a hit is exact.
"""

import pytest
import torch

from utils import assert_matches, run_in_threads

import normkit
from normkit import launch as L
from normkit import ops, reference

pytest.importorskip("triton")
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
F32, BF16, F64 = torch.float32, torch.bfloat16, torch.float64


pytestmark = pytest.mark.usefixtures("plans_on")


def _calls() -> dict:
    return ops.plan_cache_info()["calls"]


def _rand(g, shape, dtype, shift=0.0):
    return (torch.randn(shape, generator=g, dtype=torch.float64) + shift).to(dtype=dtype, device=DEVICE)


CASES = {  # name: (norm, shape, dtype, options)
    "rms": ("rms", (6, 48), F32, {}),
    "rms_3d_bf16": ("rms", (2, 3, 40), BF16, {}),
    "rms_bias_offset": ("rms", (5, 40), F32, {"bias": True, "weight_offset": 1.0}),
    "rms_residual_prenorm": ("rms", (2, 3, 48), BF16, {"residual": True, "prenorm": True}),
    "rms_residual_fp32_out": ("rms", (6, 40), BF16, {"residual": True, "residual_dtype": F32, "out_dtype": F32}),
    "rms_llama": ("rms", (6, 48), BF16, {"casting_mode": "llama"}),
    "rms_gate": ("rms", (2, 3, 40), BF16, {"gate": True, "casting_mode": "llama"}),
    "rms_heads": ("rms", (3, 4, 16), F32, {"heads": 4}),
    "rms_strided": ("rms", (6, 48), F32, {"strided": True}),
    "rms_no_weight": ("rms", (6, 48), F32, {"weight": False}),
    "ln": ("ln", (6, 48), F32, {"bias": True}),
    "ln_bf16_residual_recompute": ("ln", (2, 3, 40), BF16, {"bias": True, "residual": True, "prenorm": True}),
    "f64": ("rms", (4, 32), F64, {"residual": True}),
}


def _inputs(shape, dtype, opts, grad, seed=0):
    g = torch.Generator().manual_seed(seed)
    n = shape[-1]
    if opts.get("strided"):
        x = _rand(g, (*shape[:-1], 2 * n), dtype, 1.0)[..., :n]
    else:
        x = _rand(g, shape, dtype, 1.0)
    heads = opts.get("heads", 1)
    pshape = (heads, n) if heads > 1 else (n,)
    tensors = {"x": x}
    if opts.get("weight", True):
        tensors["weight"] = (1 + 0.5 * _rand(g, pshape, F64)).to(dtype)
    if opts.get("bias"):
        tensors["bias"] = _rand(g, pshape, dtype)
    if opts.get("residual"):
        tensors["residual"] = _rand(g, shape, dtype)
    if opts.get("gate"):
        tensors["gate"] = _rand(g, shape, dtype)
    for t in tensors.values():
        t.requires_grad_(grad)
    return tensors, _rand(g, shape, dtype)


def _kwargs(norm, opts):
    keys = ("prenorm", "out_dtype", "residual_dtype", "casting_mode") + (("weight_offset",) if norm == "rms" else ())
    return {k: opts[k] for k in keys if k in opts}


def _run(case, grad, seed=0):
    """The call's outputs and, with grad, every input's gradient (dy on y, and on residual_out with prenorm)."""
    norm, shape, dtype, opts = CASES[case]
    tensors, dy = _inputs(shape, dtype, opts, grad, seed)
    fn = normkit.rms_norm if norm == "rms" else normkit.layer_norm
    out = fn(**tensors, **_kwargs(norm, opts))
    outs = list(out) if isinstance(out, tuple) else [out]
    if not grad:
        return outs, tensors
    grads = torch.autograd.grad(outs, list(tensors.values()), [dy.to(o.dtype) for o in outs])
    return [o.detach() for o in outs] + list(grads), tensors


def _reference(case, tensors):
    norm, _, dtype, opts = CASES[case]
    get = lambda k: None if k not in tensors else tensors[k].detach().double().cpu()  # noqa: E731
    heads = opts.get("heads", 1)
    x = get("x")
    if heads > 1:
        x = x.reshape(-1, heads, x.shape[-1])
    y, h, _, _ = reference.norm_fwd(x, get("weight"), get("bias"), get("residual"), eps=1e-6 if norm == "rms" else 1e-5,
                                    is_rms_norm=norm == "rms", weight_offset=opts.get("weight_offset", 0.0),
                                    gate=get("gate"))
    return [y.reshape(tensors["x"].shape)] + ([h] if opts.get("prenorm") else [])


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("case", list(CASES))
def test_hit_is_bitwise_the_full_path(case, grad):
    L.set_mode("off")
    full, _ = _run(case, grad)
    L.set_mode("on")
    miss, tensors = _run(case, grad)
    assert _calls()["size"] == 1 and _calls()["hits"] == 0
    hit, _ = _run(case, grad)
    again, _ = _run(case, grad, seed=1)  # other values, the same signature
    assert _calls()["hits"] == 2 and _calls()["size"] == 1
    for result in (miss, hit):
        assert len(result) == len(full)
        for a, b in zip(full, result):
            assert a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b)
    L.set_mode("off")
    other, _ = _run(case, grad, seed=1)
    assert all(torch.equal(a, b) for a, b in zip(other, again))
    dtype = CASES[case][2]
    for out, ref in zip(hit, _reference(case, tensors)):  # (the outputs; gradients: test_functional's)
        assert_matches(out, ref.reshape(out.shape), BF16 if dtype == BF16 or case == "rms_gate" else dtype)


def test_backward_keeps_a_plan_per_gradient_signature():
    x = _rand(torch.Generator().manual_seed(0), (6, 48), F32).requires_grad_()
    w = torch.ones(48, device=DEVICE, requires_grad=True)
    dy = torch.ones(6, 48, device=DEVICE)
    L.set_mode("off")
    expected = [torch.autograd.grad(normkit.rms_norm(x, w).sum(), (x, w)),
                torch.autograd.grad(normkit.rms_norm(x, w), (x, w), dy)]
    L.set_mode("on")
    for _ in range(3):  # a sum's gradient: dout expanded (strides 0), then a row-major one
        got = torch.autograd.grad(normkit.rms_norm(x, w).sum(), (x, w))
        assert all(torch.equal(a, b) for a, b in zip(expected[0], got))
        got = torch.autograd.grad(normkit.rms_norm(x, w), (x, w), dy)
        assert all(torch.equal(a, b) for a, b in zip(expected[1], got))
    (call,) = ops.CALLS._plans.values()
    assert len(call.bwd) == 2


def test_what_the_full_path_reads_is_in_the_signature():
    g = torch.Generator().manual_seed(0)
    x, w = _rand(g, (6, 48), F32), _rand(g, (48,), F32)
    base = dict(eps=1e-6)
    variants = [
        lambda: normkit.rms_norm(x, w, **base),
        lambda: normkit.rms_norm(x, w, eps=1e-5),
        lambda: normkit.rms_norm(x, w, eps=1e-6, weight_offset=1.0),
        lambda: normkit.rms_norm(x, w, eps=1e-6, out_dtype=BF16),
        lambda: normkit.rms_norm(x, w, eps=1e-6, casting_mode="llama"),
        lambda: normkit.rms_norm(x.to(F64), w.to(F64), eps=1e-6),
        lambda: normkit.rms_norm(x[:5], w, eps=1e-6),
        lambda: normkit.rms_norm(x.view(2, 3, 48), w, eps=1e-6),
        lambda: normkit.rms_norm(x.requires_grad_(False).clone().requires_grad_(), w, eps=1e-6),
        lambda: normkit.layer_norm(x, w, eps=1e-6),
        lambda: normkit.rms_norm(torch.empty(6, 49, device=DEVICE)[:, 1:].copy_(x), w, eps=1e-6),  # row stride 49
        lambda: normkit.rms_norm(torch.empty(6 * 48 + 1, device=DEVICE)[1:].view(6, 48).copy_(x), w, eps=1e-6),
    ]
    for v in variants:
        v()
    assert _calls()["size"] == len(variants) and _calls()["hits"] == 0
    with torch.no_grad():
        variants[-4]()  # grad mode: another signature
    assert _calls()["size"] == len(variants) + 1 and _calls()["hits"] == 0
    for v in variants:
        v()
    assert _calls()["hits"] == len(variants)


@pytest.mark.parametrize("bad, error, match", [
    ({"eps": -1.0}, ValueError, "eps must be a finite number >= 0"),
    ({"eps": float("nan")}, ValueError, "eps must be a finite number"),
    ({"eps": True}, TypeError, "eps must be a float"),
    ({"prenorm": 1}, TypeError, "prenorm must be a bool"),
    ({"casting_mode": "gemma"}, ValueError, "casting_mode must be one of"),
    ({"out_dtype": torch.int32}, TypeError, "out_dtype must be None or one of"),
    ({"weight_offset": float("inf")}, ValueError, "weight_offset must be a finite number"),
])
def test_bad_input_after_a_hit_keeps_its_errors(bad, error, match):
    g = torch.Generator().manual_seed(0)
    x, w = _rand(g, (6, 48), F32), _rand(g, (48,), F32)
    for _ in range(2):
        normkit.rms_norm(x, w, eps=1e-6)
    assert _calls()["hits"] == 1
    with pytest.raises(error, match=match):
        normkit.rms_norm(x, w, **dict(dict(eps=1e-6), **bad))
    for wrong, match in ((w[:47], r"weight must have shape \(48,\)"),
                         (w.to(torch.int32), "weight must have a floating"),
                         (w.to(F64), "unsupported dtype combination")):
        with pytest.raises((ValueError, TypeError), match=match):
            normkit.rms_norm(x, wrong, eps=1e-6)


def test_what_is_never_planned():
    g = torch.Generator().manual_seed(0)
    x, w = _rand(g, (6, 48), F32), _rand(g, (48,), F32)
    w_strided = _rand(g, (96,), F32)[::2]
    normkit.rms_norm(x, w_strided)  # non-contiguous parameter: copied on the full path each call
    normkit.rms_norm(x[:0], w)  # M = 0: nothing launched
    torch.func.grad(lambda t: normkit.rms_norm(t, w).sum())(x)
    torch.func.vmap(lambda t: normkit.rms_norm(t, w))(x.view(2, 3, 48))
    torch.jit.trace(lambda t: normkit.rms_norm(t, w), (x,), check_trace=False)
    import torch.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        normkit.rms_norm(fwAD.make_dual(x, torch.ones_like(x)), w)

    class Sub(torch.Tensor):
        pass

    normkit.rms_norm(x.as_subclass(Sub), w)
    L.set_mode("off")
    normkit.rms_norm(x, w)
    assert _calls()["size"] == 0


def test_double_backward_after_a_hit():
    g = torch.Generator().manual_seed(0)
    x = _rand(g, (4, 16), F64).requires_grad_()
    w = (1 + 0.1 * _rand(g, (16,), F64)).requires_grad_()
    for _ in range(2):
        normkit.rms_norm(x, w)
    assert _calls()["size"] == 1
    assert torch.autograd.gradgradcheck(lambda a, b: normkit.rms_norm(a, b), (x, w))
    assert _calls()["hits"] >= 1


def test_threads_share_the_call_plans():
    cases = ["rms", "rms_3d_bf16", "ln", "rms_residual_prenorm"]
    L.set_mode("off")
    expected = {c: _run(c, True)[0] for c in cases}
    L.set_mode("on")
    errors = []

    def work(i):
        try:
            for j in range(3):
                c = cases[(i + j) % len(cases)]
                assert all(torch.equal(a, b) for a, b in zip(expected[c], _run(c, True)[0]))
        except Exception as exc:  # pragma: no cover
            errors.append(exc)

    run_in_threads(work, 4, fast_switch=True)
    assert not errors, errors[0]
    assert _calls()["size"] == len(cases)
