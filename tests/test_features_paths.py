"""The feature paths beyond the flag matrix: fp64 gradcheck, the LayerNorm and FusedAddRMSNorm
modules, the low-level entry points, per-head weights, torch.compile and determinism — each against
float64 autograd of the plain formula (`tests.feature_cases._reference`)."""

import pytest
import torch

import normkit
from tests.feature_cases import Case, _assert_rounded_sum, _coarsest, _make_case_inputs, _reference
from tests.utils import assert_matches


# ----------------------------------------------------------------------------- gradcheck (float64)
def _f64(*shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64)


def test_gradcheck_layer_norm_weight_bias(device):
    x, w, b = (_f64(*s, seed=i).to(device).requires_grad_() for i, s in enumerate([(3, 7), (7,), (7,)]))
    assert torch.autograd.gradcheck(lambda *a: normkit.layer_norm(*a, eps=1e-5), (x, w, b))


def test_gradcheck_rms_norm_residual_prenorm(device):
    """Both outputs (y and residual_out) and all four inputs, with a weight offset."""
    x, w, b, r = (_f64(*s, seed=10 + i).to(device).requires_grad_()
                  for i, s in enumerate([(3, 7), (7,), (7,), (3, 7)]))
    assert torch.autograd.gradcheck(
        lambda *a: normkit.rms_norm(*a, eps=1e-5, prenorm=True, weight_offset=0.5), (x, w, b, r))


def test_gradcheck_layer_norm_residual(device):
    x, w, b, r = (_f64(*s, seed=20 + i).to(device).requires_grad_()
                  for i, s in enumerate([(3, 7), (7,), (7,), (3, 7)]))
    assert torch.autograd.gradcheck(lambda *a: normkit.layer_norm(*a, eps=1e-5), (x, w, b, r))


def test_gradcheck_per_head(device):
    x, w, b = (_f64(*s, seed=30 + i).to(device).requires_grad_() for i, s in enumerate([(2, 2, 4), (2, 4), (2, 4)]))
    assert torch.autograd.gradcheck(lambda *a: normkit.layer_norm(*a, eps=1e-5), (x, w, b))


# ----------------------------------------------------------------------------- modules
@pytest.mark.parametrize("normalized_shape", [64, (4, 16)], ids=["int", "tuple"])
@pytest.mark.parametrize("affine,bias", [(True, True), (True, False), (False, False)],
                         ids=["affine", "no_bias", "no_affine"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_layer_norm_module_matches_torch(normalized_shape, affine, bias, dtype, device):
    """normkit.LayerNorm against torch.nn.LayerNorm run in float64 on the same parameters."""
    torch.manual_seed(0)
    ours = normkit.LayerNorm(normalized_shape, eps=1e-5, elementwise_affine=affine, bias=bias,
                             device=device, dtype=dtype)
    assert isinstance(ours, torch.nn.LayerNorm)
    with torch.no_grad():
        for p in ours.parameters():
            p.copy_(1.0 + 0.5 * torch.randn_like(p))
    theirs = torch.nn.LayerNorm(normalized_shape, eps=1e-5, elementwise_affine=affine, bias=bias,
                                dtype=torch.float64)
    theirs.load_state_dict({k: v.double().cpu() for k, v in ours.state_dict().items()})
    tail = (normalized_shape,) if isinstance(normalized_shape, int) else normalized_shape
    x = torch.randn(3, 5, *tail, device=device, dtype=dtype)
    dy = torch.randn_like(x)
    xa, xb = x.clone().requires_grad_(), x.double().cpu().requires_grad_()
    ya, yb = ours(xa), theirs(xb)
    ya.backward(dy)
    yb.backward(dy.double().cpu())
    assert ya.dtype == dtype and ya.shape == x.shape
    assert_matches(ya, yb, dtype, "y")
    assert_matches(xa.grad, xb.grad, dtype, "dx")
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        assert p.grad.dtype == dtype
        assert_matches(p.grad, q.grad, dtype, f"d{name}")
    assert len(list(ours.parameters())) == (1 + bias if affine else 0)


@pytest.mark.parametrize("weight_offset", [0.0, 1.0])
@pytest.mark.parametrize("dtype,residual_dtype", [(torch.float32, torch.float32), (torch.bfloat16, torch.bfloat16),
                                                  (torch.bfloat16, torch.float32)])
def test_fused_add_rms_norm_module(weight_offset, dtype, residual_dtype, device):
    norm = normkit.FusedAddRMSNorm(96, eps=1e-6, weight_offset=weight_offset, device=device, dtype=dtype)
    init = torch.zeros if weight_offset else torch.ones  # (1 + w) starts at w = 0: the identity scale
    assert torch.equal(norm.weight.detach(), init(96, device=device, dtype=dtype))
    assert f"weight_offset={weight_offset}" in repr(norm)
    with torch.no_grad():
        norm.weight.add_(0.5 * torch.randn(96, device=device, dtype=dtype))
    g = torch.Generator().manual_seed(4)
    x = torch.randn(4, 6, 96, generator=g).to(device=device, dtype=dtype).requires_grad_()
    residual = torch.randn(4, 6, 96, generator=g).to(device=device, dtype=residual_dtype).requires_grad_()
    dy = torch.randn(4, 6, 96, generator=g).to(device=device, dtype=dtype)
    dresidual_out = torch.randn(4, 6, 96, generator=g).to(device=device, dtype=residual_dtype)
    y, residual_out = norm(x, residual)
    torch.autograd.backward([y, residual_out], [dy, dresidual_out])
    y_ref, _, _, (dx_ref, dw_ref, _, dres_ref) = _reference(
        x, norm.weight, None, residual, dy, dresidual_out, rms=True, eps=1e-6, weight_offset=weight_offset)
    assert y.dtype == dtype and residual_out.dtype == residual_dtype
    _assert_rounded_sum(residual_out, x, residual, residual_dtype)
    assert_matches(y, y_ref, dtype, "y")
    assert_matches(x.grad, dx_ref, _coarsest(residual_dtype, dtype), "dx")
    assert_matches(residual.grad, dres_ref, _coarsest(residual_dtype, dtype), "dresidual")
    assert_matches(norm.weight.grad, dw_ref, _coarsest(residual_dtype, dtype), "dweight")


# ----------------------------------------------------------------------------- low-level entry points
def _lowlevel(rms):
    return (normkit.rms_norm_fwd, normkit.rms_norm_bwd) if rms else (normkit.layer_norm_fwd, normkit.layer_norm_bwd)


def _stats_args(fwd_outputs, rms):
    """The saved statistics as the backward takes them: (rstd,) or (mean, rstd)."""
    return (fwd_outputs[2],) if rms else tuple(fwd_outputs[2:])


@pytest.mark.parametrize("rms", [True, False], ids=["rms", "ln"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("saved", [True, False], ids=["saved", "recompute"])
def test_lowlevel_backward_with_residual_and_bias(rms, dtype, saved, device):
    """bwd(residual_out, …, dresidual_out): dx includes dresidual_out, dresidual IS dx, dbias = Σ dy."""
    fwd, bwd = _lowlevel(rms)
    g = torch.Generator().manual_seed(5)
    x, residual, dy, dresidual_out = (torch.randn(16, 100, generator=g).to(device, dtype) for _ in range(4))
    weight, bias = (torch.randn(100, generator=g).to(device, dtype) for _ in range(2))
    outputs = fwd(x, weight, bias, residual, store_rstd=saved)
    out, residual_out = outputs[:2]
    _assert_rounded_sum(residual_out, x, residual, dtype)
    stats = _stats_args(outputs, rms) if saved else ()
    dx, dweight, dbias, dresidual = bwd(residual_out, weight, dy, *stats, dresidual_out=dresidual_out,
                                        has_bias=True, has_residual=True)
    assert dresidual is dx
    assert dx.dtype == dtype and dweight.dtype == dtype and dbias.dtype == dtype
    # The backward's input is residual_out itself: the reference differentiates at that point.
    y_ref, _, _, (dh_ref, dw_ref, db_ref, _) = _reference(residual_out, weight, bias, None, dy, rms=rms,
                                                          eps=1e-6 if rms else 1e-5)
    assert_matches(out, _reference(x, weight, bias, residual, dy, rms=rms, eps=1e-6 if rms else 1e-5)[0],
                   dtype, "y")
    assert_matches(dx, dh_ref + dresidual_out.double().cpu(), dtype, "dx")
    assert_matches(dweight, dw_ref, dtype, "dweight")
    assert_matches(dbias, dy.double().sum(0), dtype, "dbias = Σ dy")
    # Without has_residual / dresidual_out: no dresidual, and dx is the norm's gradient alone.
    dx2, _, dbias2, dresidual2 = bwd(residual_out, weight, dy, *stats)
    assert dresidual2 is None and dbias2 is None
    assert_matches(dx2, dh_ref, dtype, "dx without dresidual_out")


@pytest.mark.parametrize("rms", [True, False], ids=["rms", "ln"])
@pytest.mark.parametrize("n", [100, 70000])
def test_lowlevel_saved_and_recomputed_statistics_agree(rms, n, device):
    fwd, bwd = _lowlevel(rms)
    m = 2 if n > 65536 else 24
    g = torch.Generator().manual_seed(6)
    x, dy = (3.0 + torch.randn(m, n, generator=g).to(device) for _ in range(2))  # a non-zero mean
    weight, bias = (torch.randn(n, generator=g).to(device) for _ in range(2))
    stats = _stats_args(fwd(x, weight, bias, store_rstd=True), rms)
    assert all(s.shape == (m,) and s.dtype == torch.float32 for s in stats)
    assert fwd(x, weight)[2] is None  # nothing stored without store_rstd
    saved = bwd(x, weight, dy, *stats, has_bias=True)
    recomputed = bwd(x, weight, dy, has_bias=True)
    for a, b in zip(saved[:3], recomputed[:3]):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    # The saved statistics are really used: a different rstd gives a different dx.
    doubled = stats[:-1] + (stats[-1] * 2,)
    assert not torch.allclose(bwd(x, weight, dy, *doubled)[0], saved[0])


def test_lowlevel_residual_dtype_without_residual(device):
    x = torch.randn(4, 32, device=device, dtype=torch.bfloat16)
    out, residual_out, _ = normkit.rms_norm_fwd(x, residual_dtype=torch.float32, out_dtype=torch.float32)
    assert out.dtype == torch.float32 and residual_out.dtype == torch.float32
    assert torch.equal(residual_out, x.float())
    assert normkit.rms_norm_fwd(x)[1] is x
    out, residual_out, mean, rstd = normkit.layer_norm_fwd(x)
    assert residual_out is x and mean is None and rstd is None


def test_lowlevel_weight_offset(device):
    """rms_norm_bwd(weight_offset=1): dx uses w + 1, dweight is bitwise the one without the offset."""
    g = torch.Generator().manual_seed(7)
    x, dy = (torch.randn(12, 80, generator=g).to(device) for _ in range(2))
    weight = 0.5 * torch.randn(80, generator=g).to(device)
    out, _, rstd = normkit.rms_norm_fwd(x, weight, store_rstd=True, weight_offset=1.0)
    y_ref, _, _, (dx_ref, dw_ref, _, _) = _reference(x, weight, None, None, dy, rms=True, eps=1e-6,
                                                     weight_offset=1.0)
    assert_matches(out, y_ref, torch.float32, "y")
    dx, dweight, _, _ = normkit.rms_norm_bwd(x, weight, dy, rstd, weight_offset=1.0)
    assert_matches(dx, dx_ref, torch.float32, "dx")
    assert_matches(dweight, dw_ref, torch.float32, "dweight")
    assert torch.equal(dweight, normkit.rms_norm_bwd(x, weight, dy, rstd)[1])


# ----------------------------------------------------------------------------- per-head weights
def _per_head_reference(x, weight, bias, rms, eps):
    """Each head h normalised on its own and scaled by weight[h] (+ bias[h]), head by head."""
    heads = []
    for h in range(x.shape[-2]):
        xh = x[..., h, :].double().cpu()
        centered = xh if rms else xh - xh.mean(-1, keepdim=True)
        yh = centered * torch.rsqrt(centered.square().mean(-1, keepdim=True) + eps) * weight[h].double().cpu()
        heads.append(yh if bias is None else yh + bias[h].double().cpu())
    return torch.stack(heads, dim=-2)


@pytest.mark.parametrize("rms", [True, False], ids=["rms", "ln"])
def test_per_head_weights(rms, device):
    B, S, H, D = 2, 3, 4, 64
    g = torch.Generator().manual_seed(8)
    x = torch.randn(B, S, H, D, generator=g).to(device).requires_grad_()
    weight = (torch.arange(1, H + 1, dtype=torch.float32)[:, None] + torch.randn(H, D, generator=g)).to(device)
    bias = None if rms else torch.randn(H, D, generator=g).to(device).requires_grad_()
    weight.requires_grad_()
    dy = torch.randn(B, S, H, D, generator=g).to(device)
    eps = 1e-6 if rms else 1e-5
    fn = normkit.rms_norm if rms else normkit.layer_norm
    y = fn(x, weight, bias, eps=eps)
    y.backward(dy)
    assert_matches(y, _per_head_reference(x, weight, bias, rms, eps), torch.float32, "y")
    _, _, _, (dx_ref, dw_ref, db_ref, _) = _reference(x, weight, bias, None, dy, rms=rms, eps=eps)
    assert weight.grad.shape == (H, D)
    assert_matches(x.grad, dx_ref, torch.float32, "dx")
    assert_matches(weight.grad, dw_ref, torch.float32, "dweight")
    if not rms:
        assert bias.grad.shape == (H, D)
        assert_matches(bias.grad, dy.double().sum((0, 1)), torch.float32, "dbias")
    # The same through the low-level entry points.
    fwd, bwd = _lowlevel(rms)
    outputs = fwd(x.detach(), weight.detach(), None if bias is None else bias.detach(), store_rstd=True)
    assert torch.equal(outputs[0], y.detach())
    dx, dweight, dbias, _ = bwd(x.detach(), weight.detach(), dy, *_stats_args(outputs, rms), has_bias=not rms)
    assert dweight.shape == (H, D)
    assert_matches(dx, dx_ref, torch.float32, "low-level dx")
    assert_matches(dweight, dw_ref, torch.float32, "low-level dweight")
    if not rms:
        assert_matches(dbias, db_ref, torch.float32, "low-level dbias")


def test_torch_compile_fullgraph_with_new_arguments(device):
    """Residual, prenorm, bias, weight offset, out/residual dtypes and per-head weights under
    torch.compile(fullgraph=True): no graph break, same values as eager, forward and backward."""
    backend = "inductor" if device == "cuda" else "aot_eager"  # CPU: no C++ build needed
    case = Case.parse("rms bf16 w b res pre off mixed out=fp32 rd=fp32 heads")
    x, weight, bias, residual, dy, dresidual_out = _make_case_inputs(case, (2, 3, 4, 64), device, seed=9)

    def f(x, weight, bias, residual):
        y, h = normkit.rms_norm(x * 2.0, weight, bias, residual, eps=1e-6, prenorm=True, weight_offset=1.0,
                                out_dtype=torch.float32, residual_dtype=torch.float32)
        return y * 3.0, h

    compiled = torch.compile(f, fullgraph=True, backend=backend)
    runs = []
    for fn in (compiled, f):
        leaves = [t.clone().requires_grad_() for t in (x, weight, bias, residual)]
        y, h = fn(*leaves)
        torch.autograd.backward([y, h], [dy, dresidual_out])
        runs.append([y, h] + [t.grad for t in leaves])
    for name, a, b in zip(["y", "residual_out", "dx", "dweight", "dbias", "dresidual"], *runs):
        assert a.dtype == b.dtype, name
        torch.testing.assert_close(a, b, msg=name)
    assert runs[0][3].shape == (4, 64)


# ----------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("kind", ["ln_bias", "per_head"])
def test_parameter_gradients_are_bitwise_deterministic(kind, device):
    """Several backward programs own rows here (row blocks > 1 per head); their partial sums are
    reduced in a fixed order, so dweight and dbias repeat bit for bit."""
    g = torch.Generator().manual_seed(10)
    if kind == "ln_bias":
        shape, param_shape, fn = (300, 1000), (1000,), normkit.layer_norm
    else:
        shape, param_shape, fn = (3, 50, 2, 1000), (2, 1000), normkit.rms_norm
    x = torch.randn(*shape, generator=g).to(device=device, dtype=torch.bfloat16)
    residual = torch.randn(*shape, generator=g).to(device=device, dtype=torch.bfloat16)
    weight, bias = (torch.randn(*param_shape, generator=g).to(device) for _ in range(2))
    dy = torch.randn(*shape, generator=g).to(device=device, dtype=torch.bfloat16)
    runs = []
    for _ in range(3):
        leaves = [t.clone().requires_grad_() for t in (x, weight, bias, residual)]
        fn(*leaves).backward(dy)
        runs.append([t.grad for t in leaves])
    for again in runs[1:]:
        for name, a, b in zip(["dx", "dweight", "dbias", "dresidual"], runs[0], again):
            assert torch.equal(a, b), f"{name} differs between runs"
