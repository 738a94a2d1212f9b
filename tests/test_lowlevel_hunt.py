"""Red-team checks of the low-level API (rms_norm_fwd/bwd, layer_norm_fwd/bwd) and of the float64
reference the tests grade with: unbatched shapes, saved statistics in any layout, inputs never written."""

import pytest
import torch
import torch.nn.functional as F

import normkit
from normkit import reference
from tests.utils import assert_matches


def _stock_grads(x, weight, bias, dy, *, rms, eps):
    """(dx, dweight, dbias) of torch's own norm in float64, weight/bias applied per element (so a
    per-head (H, N) weight on x of shape (H, N) is an elementwise product)."""
    x, weight, bias = (t.detach().double().cpu().requires_grad_() for t in (x, weight, bias))
    n = x.shape[-1]
    x_hat = F.rms_norm(x, (n,), eps=eps) if rms else F.layer_norm(x, (n,), eps=eps)
    return torch.autograd.grad(x_hat * weight + bias, (x, weight, bias), dy.double().cpu())


@pytest.mark.parametrize("rms", [True, False])
@pytest.mark.parametrize("x_shape,param_shape", [((8,), (8,)), ((3, 8), (3, 8))], ids=["1d", "per-head-2d"])
def test_reference_parameter_gradients_of_unbatched_x(rms, x_shape, param_shape):
    """reference.norm_bwd summed over `range(x.dim() - param_ndim)`: for an unbatched x (1-D x with an (N,)
    weight, or (H, N) x with a per-head (H, N) weight) that range is empty, and torch's sum(dim=()) reduces
    every dimension: dweight and dbias came back as 0-d totals instead of dy·x̂ and dy."""
    g = torch.Generator().manual_seed(0)
    x, dy = torch.randn(x_shape, generator=g, dtype=torch.float64), torch.randn(x_shape, generator=g, dtype=torch.float64)
    w = 1 + 0.3 * torch.randn(param_shape, generator=g, dtype=torch.float64)
    b = torch.randn(param_shape, generator=g, dtype=torch.float64)
    eps = 1e-6
    dx, dw, db = reference.norm_bwd(x, w, dy, eps=eps, is_rms_norm=rms, bias_dtype=torch.float64)
    for got, ref, what in zip((dx, dw, db), _stock_grads(x, w, b, dy, rms=rms, eps=eps), ("dx", "dweight", "dbias")):
        assert_matches(got, ref, torch.float64, what)


@pytest.mark.parametrize("rms", [True, False])
def test_per_head_weight_on_a_2d_x(device, rms):
    """x of shape (H, N) with a per-head (H, N) weight and bias: one row per head, nothing summed."""
    g = torch.Generator().manual_seed(1)
    x, dy = torch.randn(3, 40, generator=g), torch.randn(3, 40, generator=g)
    w, b = 1 + 0.3 * torch.randn(3, 40, generator=g), torch.randn(3, 40, generator=g)
    x, dy, w, b = (t.to(device) for t in (x, dy, w, b))
    eps = 1e-6 if rms else 1e-5
    if rms:
        out, _, rstd = normkit.rms_norm_fwd(x, w, b, eps=eps, store_rstd=True)
        grads = normkit.rms_norm_bwd(x, w, dy, rstd, has_bias=True, eps=eps)
    else:
        out, _, mean, rstd = normkit.layer_norm_fwd(x, w, b, eps=eps, store_rstd=True)
        grads = normkit.layer_norm_bwd(x, w, dy, mean, rstd, has_bias=True, eps=eps)
    x64 = x.double().cpu()
    x_hat = F.rms_norm(x64, (40,), eps=eps) if rms else F.layer_norm(x64, (40,), eps=eps)
    assert_matches(out, x_hat * w.double().cpu() + b.double().cpu(), torch.float32, "out")
    for got, ref, what in zip(grads[:3], _stock_grads(x, w, b, dy, rms=rms, eps=eps), ("dx", "dweight", "dbias")):
        assert_matches(got, ref, torch.float32, what)
    assert grads[3] is None


def _layouts(stats):
    """The same statistics as a strided view and (for equal rows) a stride-0 view."""
    strided = torch.stack([stats, torch.full_like(stats, float("nan"))], 1)[:, 0]
    return {"strided": strided, "stride0": stats[:1].expand(stats.shape[0])}


@pytest.mark.parametrize("rms", [True, False])
def test_saved_statistics_in_any_layout(device, rms):
    """Saved mean/rstd as strided or stride-0 views give what their contiguous copies give, and saved
    statistics give what recomputed ones give (close to the float64 reference)."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(5, 48, generator=g).to(device)
    x[1:] = x[0]  # equal rows: a stride-0 view of row 0's statistics is right for every row
    w, dy = (1 + 0.3 * torch.randn(48, generator=g)).to(device), torch.randn(5, 48, generator=g).to(device)
    if rms:
        _, _, rstd = normkit.rms_norm_fwd(x, w, store_rstd=True)
        bwd = lambda mean, rstd: normkit.rms_norm_bwd(x, w, dy, rstd, has_bias=True)  # noqa: E731
        mean = None
    else:
        _, _, mean, rstd = normkit.layer_norm_fwd(x, w, store_rstd=True)
        bwd = lambda mean, rstd: normkit.layer_norm_bwd(x, w, dy, mean, rstd, has_bias=True)  # noqa: E731
    saved = bwd(mean, rstd)
    for layout in ("strided", "stride0"):
        views = [None if s is None else _layouts(s)[layout] for s in (mean, rstd)]
        copies = [None if v is None else v.contiguous() for v in views]
        for got, want in zip(bwd(*views)[:3], bwd(*copies)[:3]):
            assert torch.equal(got, want), layout
    ref = _stock_grads(x, w, torch.zeros_like(w), dy, rms=rms, eps=1e-6 if rms else 1e-5)
    for got_saved, got_recomputed, want, what in zip(saved[:3], bwd(None, None)[:3], ref, ("dx", "dw", "db")):
        assert_matches(got_saved, want, torch.float32, what + " (saved)")
        assert_matches(got_recomputed, want, torch.float32, what + " (recomputed)")


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
def test_no_input_is_written_and_tuples_match_the_readme(device, dtype):
    """Every argument of the four calls at once: no input tensor changes, and the tuples have the
    README's lengths, None positions and aliasing (dresidual is dx; residual_out is x without a residual)."""
    g = torch.Generator().manual_seed(3)
    make = lambda *shape: torch.randn(*shape, generator=g).to(device=device, dtype=dtype)  # noqa: E731
    x, res, dy, dres, gate = (make(2, 3, 32) for _ in range(5))
    w, b = 1 + 0.3 * make(32), make(32)
    inputs = (x, res, dy, dres, gate, w, b)
    before = [t.clone() for t in inputs]

    out, h, rstd = normkit.rms_norm_fwd(x, w, b, res, store_rstd=True, weight_offset=0.5)
    assert normkit.rms_norm_fwd(x, w)[1] is x and rstd.shape == (6,)
    ln = normkit.layer_norm_fwd(x, w, b, res, store_rstd=True)
    assert len(ln) == 4 and ln[2].shape == ln[3].shape == (6,)
    assert normkit.layer_norm_fwd(x, w)[2:] == (None, None)
    saved = [rstd, ln[2], ln[3]]
    before += [t.clone() for t in saved]

    dx, dw, db, dr = normkit.rms_norm_bwd(h, w, dy, rstd, dres, has_bias=True, has_residual=True, weight_offset=0.5)
    assert dr is dx and dw.shape == db.shape == w.shape
    grads = normkit.layer_norm_bwd(ln[1], w, dy, ln[2], ln[3], dres, has_bias=True)
    assert len(grads) == 4 and grads[3] is None
    grads = normkit.rms_norm_bwd(x, None, dy, None, dres)
    assert len(grads) == 4 and grads[1:] == (None, None, None)
    _, _, rstd_g = normkit.rms_norm_fwd(x, w, gate=gate, store_rstd=True)
    grads = normkit.rms_norm_bwd(x, w, dy, rstd_g, dres, gate=gate)
    assert len(grads) == 5 and grads[2:4] == (None, None) and grads[4].shape == gate.shape
    for t, copy in zip((*inputs, *saved), before):
        assert torch.equal(t, copy)


@pytest.mark.parametrize("rms", [True, False])
def test_bias_without_weight_keeps_its_shape_and_dtype(device, rms):
    """weight=None with a per-head float32 bias on bf16 x of shape (B, H, N): has_bias alone gave an (N,)
    dbias in x's dtype, the heads summed together; passing the forward's bias gives (H, N) in float32."""
    g = torch.Generator().manual_seed(2)
    x, dy = (torch.randn(5, 3, 48, generator=g).to(device, torch.bfloat16) for _ in range(2))
    b = torch.randn(3, 48, generator=g).to(device)
    eps = 1e-6 if rms else 1e-5
    bwd = normkit.rms_norm_bwd if rms else normkit.layer_norm_bwd
    dx, dw, db, dres = bwd(x, None, dy, bias=b, eps=eps)
    assert dw is None and dres is None
    assert db.shape == b.shape and db.dtype == torch.float32
    ref = _stock_grads(x, torch.ones_like(b), b, dy, rms=rms, eps=eps)
    assert_matches(dx, ref[0], torch.bfloat16, "dx")
    assert_matches(db, ref[2], torch.float32, "dbias")
    # has_bias alone keeps its documented meaning: (N,) in x's dtype, summed over every row.
    db_n = bwd(x, None, dy, has_bias=True, eps=eps)[2]
    assert db_n.shape == (48,) and db_n.dtype == torch.bfloat16
    assert_matches(db_n, ref[2].sum(0), torch.bfloat16, "dbias (N,)")


@pytest.mark.parametrize("bias", [torch.zeros(47), torch.zeros(4, 48), "b"], ids=["width", "heads", "str"])
def test_backward_bias_argument_is_checked(bias):
    x = torch.randn(5, 3, 48)
    with pytest.raises((ValueError, TypeError), match="bias"):
        normkit.rms_norm_bwd(x, None, torch.randn_like(x), bias=bias)
