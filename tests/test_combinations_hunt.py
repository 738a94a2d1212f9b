"""Feature combinations of the gated RMSNorm that tests/test_gated.py and tests/feature_cases.py do not
combine: a gate with a residual (prenorm, residual_dtype), per-head (H, N) weights, weight_offset,
casting_mode="llama", out_dtype, mixed dtypes (a float32 weight or gate beside 16-bit x), non-contiguous
x and gate (transposed, sliced, stride-0 rows) and the gate aliasing x or the residual.

Against float64 autograd of y = u·silu(gate), u = x̂·(weight + weight_offset), x̂ = h·rsqrt(mean(h²) + eps),
h = x + residual (rounded where "llama" says: x̂ to x's dtype, u to promote(weight, x)); the second call
of a signature (its call plan, normkit.calls) must repeat the first bit for bit.
"""

import pytest
import torch

import normkit
from normkit import ops
from tests.test_gated import FORCED, _through
from tests.utils import assert_matches

BF16, F16, F32, F64 = torch.bfloat16, torch.float16, torch.float32, torch.float64
EPS = 1e-6
_FINEST_FIRST = [F64, F32, F16, BF16]


def _coarsest(*dtypes):
    return max((d for d in dtypes if d is not None), key=_FINEST_FIRST.index)


def reference(x, weight, gate, residual, dy, dresidual_out, weight_offset, casting_mode):
    """(y, h, [dx, dweight, dgate, dresidual]) in float64; x, gate, residual (..., N), weight (N,) or (H, N)."""
    leaves = [None if t is None else t.detach().double().requires_grad_() for t in (x, weight, gate, residual)]
    x64, w64, g64, r64 = leaves
    h = x64 if r64 is None else x64 + r64
    x_hat = h * torch.rsqrt(h.square().mean(-1, keepdim=True) + EPS)
    llama = casting_mode == "llama"
    x_hat = _through(x_hat, x.dtype if llama else None)
    u = _through(x_hat * (w64 + weight_offset), torch.promote_types(weight.dtype, x.dtype) if llama else None)
    y = u * torch.nn.functional.silu(g64)
    outputs, grads = [y], [dy.double()]
    if dresidual_out is not None:
        outputs.append(h)
        grads.append(dresidual_out.double())
    torch.autograd.backward(outputs, grads)
    return y.detach(), h.detach(), [None if t is None else t.grad for t in leaves]


def _layout(t, layout):
    """t (..., M', N) as a view of that layout, same values: transposed storage, a slice of wider rows,
    or its first row repeated with stride 0 (then the values are the first row's)."""
    if layout == "transposed":
        return t.mT.contiguous().mT
    if layout == "sliced":
        wide = torch.zeros(*t.shape[:-1], t.shape[-1] + 5, dtype=t.dtype)
        wide[..., 2:-3] = t
        return wide[..., 2:-3]
    if layout == "stride0":
        return t[..., :1, :].expand(t.shape)
    return t


# x, weight, gate and residual dtypes; per-head; weight_offset; casting; prenorm; out_dtype; residual_dtype; layout
CASES = [
    (BF16, F32, F32, F32, True, 1.0, "llama", True, F32, BF16, "transposed"),
    (BF16, BF16, F32, BF16, False, 0.0, "llama", True, None, F32, "sliced"),
    (F16, F32, BF16, F32, True, 1.0, "fp32", True, BF16, None, "stride0"),
    (F16, F16, F16, None, True, 1.0, "llama", False, F32, None, "transposed"),
    (F32, F32, BF16, F32, True, 0.0, "llama", False, BF16, None, "sliced"),
    (F32, BF16, F32, BF16, False, 1.0, "fp32", True, F16, F32, "stride0"),
    (F64, F64, F64, F64, True, 1.0, "llama", True, None, None, "transposed"),
    (BF16, F32, BF16, F32, True, 1.0, "llama", True, None, None, "contiguous"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(str(v).replace("torch.", "") for v in c))
@pytest.mark.parametrize("shape", [(2, 3, 40), (1, 1, 48), (2, 2, 3, 7)], ids=str)
def test_gate_with_residual_heads_offset_and_layouts(case, shape):
    xd, wd, gd, rd_in, heads, offset, casting, prenorm, out, rd, layout = case
    g = torch.Generator().manual_seed(sum(shape))
    rand = lambda *s: torch.randn(*s, generator=g, dtype=F64)  # noqa: E731
    x = _layout(rand(*shape).to(xd), layout)
    gate = _layout((2 * rand(*shape)).to(gd), layout)
    weight = ((1.0 - offset) + 0.25 * rand(*(shape[-2:] if heads else shape[-1:]))).to(wd)
    residual = None if rd_in is None else rand(*shape).to(rd_in)
    prenorm = prenorm and residual is not None
    dy = (0.5 * x.double() + rand(*shape)).to(out or xd)
    h_dtype = rd or (residual.dtype if residual is not None else xd)
    dresidual_out = rand(*shape).to(h_dtype) if prenorm else None
    leaves = [None if t is None else t.detach().requires_grad_() for t in (x, weight, gate, residual)]
    assert leaves[0].stride() == x.stride() and leaves[2].stride() == gate.stride()  # the layout reaches normkit
    want_y, want_h, want_grads = reference(x, weight, gate, residual, dy, dresidual_out, offset, casting)
    tol = _coarsest(xd, wd, gd, rd_in, out, rd)
    runs = []
    for _ in range(2):  # the second call takes the first's call plan
        for leaf in leaves:
            if leaf is not None:
                leaf.grad = None
        result = normkit.rms_norm(leaves[0], leaves[1], None, leaves[3], eps=EPS, prenorm=prenorm,
                                  weight_offset=offset, out_dtype=out, residual_dtype=rd,
                                  casting_mode=casting, gate=leaves[2])
        y, h = result if prenorm else (result, None)
        torch.autograd.backward([y, h] if prenorm else [y], [dy, dresidual_out] if prenorm else [dy])
        runs.append([y.detach(), h] + [None if t is None else t.grad for t in leaves])
    assert runs[0][0].dtype == (out or xd) and runs[0][0].shape == shape
    assert_matches(runs[0][0], want_y, tol, "y")
    if prenorm:
        assert runs[0][1].dtype == h_dtype
        assert_matches(runs[0][1], want_h, _coarsest(h_dtype, F32), "residual_out")
    for name, leaf, got, want in zip(("dx", "dweight", "dgate", "dresidual"), leaves, runs[0][2:], want_grads):
        if leaf is not None:
            assert got.dtype == leaf.dtype and got.shape == leaf.shape, name
            assert_matches(got, want, _coarsest(tol, leaf.dtype), name)
    for first, second in zip(runs[0], runs[1]):
        assert first is None or torch.equal(first, second), "the planned call differs from the first"


@pytest.mark.parametrize("tile", FORCED)
@pytest.mark.parametrize("rstd", [True, False], ids=["saved", "recomputed"])
def test_every_tile_path_with_residual_heads_and_offset(tile, rstd):
    """The gated kernels on each forced tile with everything else on: residual (h in float32),
    dresidual_out, per-head weights (3 heads), weight_offset=1, Llama rounding, transposed x and gate."""
    g = torch.Generator().manual_seed(7)
    rand = lambda *s: torch.randn(*s, generator=g, dtype=F64)  # noqa: E731
    m, n, heads = 6, 200, 3
    x, gate = (rand(n, m).to(BF16).t() for _ in range(2))
    residual, dy, dresidual_out = rand(m, n).float(), rand(m, n).to(BF16), rand(m, n).float()
    weight = 0.25 * rand(heads, n).float()
    config = FORCED[tile]
    forward_config = config if not (config.prefetch or config.async_stages) else None  # backward options
    out, h, saved = torch.empty(m, n, dtype=BF16), torch.empty(m, n), torch.empty(m)
    ops.launch_fwd(x, out, weight=weight, residual=residual, residual_out=h, rstd=saved, gate=gate, eps=EPS,
                   weight_offset=1.0, x_hat_dtype=BF16, config=forward_config)
    dx, dweight, dgate = torch.empty(m, n), torch.empty_like(weight), torch.empty(m, n, dtype=BF16)
    ops.launch_bwd(h, dy, dx, weight=weight, dweight=dweight, dresidual_out=dresidual_out,
                   rstd=saved if rstd else None, gate=gate, dgate=dgate, eps=EPS, weight_offset=1.0,
                   x_hat_dtype=BF16, config=config)
    by_head = lambda t: t.reshape(m // heads, heads, n)  # noqa: E731
    want_y, _, (want_dx, want_dweight, want_dgate, _) = reference(
        by_head(x), weight, by_head(gate), by_head(residual), by_head(dy), by_head(dresidual_out), 1.0, "llama")
    for name, got, want in (("y", out, want_y), ("dx", dx, want_dx), ("dweight", dweight, want_dweight),
                            ("dgate", dgate, want_dgate)):
        assert_matches(got, want.reshape(got.shape), BF16, name)


@pytest.mark.parametrize("dtype", [F32, BF16], ids=str)
def test_gate_aliasing_x_or_the_residual(dtype):
    """gate=x (y = norm(x)·silu(x)) and gate=residual with prenorm: both gradients reach the one tensor."""
    g = torch.Generator().manual_seed(3)
    rand = lambda *s: torch.randn(*s, generator=g, dtype=F64).to(dtype)  # noqa: E731
    x, residual, weight = rand(3, 4, 16), rand(3, 4, 16), 1 + 0.25 * rand(4, 16).float()
    dy, dh = rand(3, 4, 16), rand(3, 4, 16)
    for alias in ("x", "residual"):
        leaves = [t.clone().requires_grad_() for t in (x, weight, residual)]
        gate = leaves[0] if alias == "x" else leaves[2]
        y, h = normkit.rms_norm(leaves[0], leaves[1], None, leaves[2], eps=EPS, prenorm=True, weight_offset=1.0,
                                gate=gate)
        torch.autograd.backward([y, h], [dy, dh])
        refs = [t.double().requires_grad_() for t in (x, weight, residual)]
        x64, w64, r64 = refs
        h64 = x64 + r64
        y64 = h64 * torch.rsqrt(h64.square().mean(-1, keepdim=True) + EPS) * (w64 + 1.0) * torch.nn.functional.silu(
            x64 if alias == "x" else r64)
        torch.autograd.backward([y64, h64], [dy.double(), dh.double()])
        assert_matches(y, y64, dtype, f"y (gate={alias})")
        for name, leaf, ref in zip(("dx", "dweight", "dresidual"), leaves, refs):
            assert_matches(leaf.grad, ref.grad, dtype, f"{name} (gate={alias})")
