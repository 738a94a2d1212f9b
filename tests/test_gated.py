"""The gated RMSNorm, `normkit.rms_norm(x, weight, gate=g)`: y = u·silu(gate) with u = x̂·weight, as
Qwen3-Next's `Qwen3NextRMSNormGated` computes it.

Against a float64 autograd reference (y, dx, dweight, dgate) on every kernel path that takes a gate
(whole rows, prefetching and staged rows, column tiles, rows wider than one interpreter tile),
saved and recomputed statistics; against Hugging Face's modules (patched vs stock); autograd,
torch.func, torch.compile, launch plans; and the errors bad inputs get.
"""

import copy
import dataclasses
import importlib
import warnings

import pytest
import torch

import normkit
from normkit import config as cfg
from normkit import launchers, lowlevel, ops, variant
from tests.test_patch import _loss_and_grads, ran_normkit
from tests.utils import assert_matches, tiny_qwen3_next_config

BF16, F16, F32, F64 = torch.bfloat16, torch.float16, torch.float32, torch.float64
EPS = 1e-6


def _inputs(shape, dtype, device, seed=0, gate_dtype=None):
    """(x, weight, gate, dy): x ~ N(0, 1), weight ~ 1 + 0.25·N(0, 1), gate ~ 2·N(0, 1) (both sides of
    silu's bend), dy = 0.5·x + N(0, 1)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=F64)
    weight = 1 + 0.25 * torch.randn(shape[-1], generator=g, dtype=F64)
    gate = 2 * torch.randn(shape, generator=g, dtype=F64)
    dy = 0.5 * x + torch.randn(shape, generator=g, dtype=F64)
    cast = lambda t, dt=dtype: t.to(dtype=dt, device=device)  # noqa: E731
    return cast(x), cast(weight), cast(gate, gate_dtype or dtype), cast(dy)


def _through(t, dtype):
    """t rounded to `dtype` in the forward, the gradient passed through unchanged (as the kernels do)."""
    return t if dtype is None else t + (t.to(dtype).to(t.dtype) - t).detach()


def float64_reference(x, weight, gate, dy, casting_mode="fp32", eps=EPS):
    """(y, dx, dweight, dgate) by float64 autograd of HF's formula, rounding where casting_mode says."""
    x_hat_dtype = x.dtype if casting_mode == "llama" else None
    u_dtype = torch.promote_types(weight.dtype, x.dtype) if casting_mode == "llama" else None
    leaves = [t.detach().double().cpu().requires_grad_() for t in (x, weight, gate)]
    x64, w64, g64 = leaves
    x_hat = x64 * torch.rsqrt(x64.square().mean(-1, keepdim=True) + eps)
    y = _through(_through(x_hat, x_hat_dtype) * w64, u_dtype) * torch.nn.functional.silu(g64)
    return (y.detach(), *torch.autograd.grad(y, leaves, dy.double().cpu()))


def assert_all_match(got, want, dtype, gate_dtype=None):
    for name, a, b in zip(("y", "dx", "dweight", "dgate"), got, want):
        assert_matches(a, b, dtype if name != "dgate" else gate_dtype or dtype, name)


# ----------------------------------------------------------------------------- against float64
@pytest.mark.parametrize("dtype", [F32, BF16, F16, F64], ids=str)
@pytest.mark.parametrize("casting_mode", ["fp32", "llama"])
@pytest.mark.parametrize("n", [7, 130, 2048])
def test_matches_float64_with_saved_and_recomputed_rstd(dtype, casting_mode, n, device):
    x, weight, gate, dy = _inputs((6, n), dtype, device)
    want = float64_reference(x, weight, gate, dy, casting_mode)
    y, _, rstd = lowlevel.rms_norm_fwd(x, weight, gate=gate, eps=EPS, store_rstd=True, casting_mode=casting_mode)
    for saved in (rstd, None):
        dx, dweight, dbias, dresidual, dgate = lowlevel.rms_norm_bwd(x, weight, dy, saved, gate=gate, eps=EPS,
                                                                     casting_mode=casting_mode)
        assert dbias is None and dresidual is None and dgate.dtype == gate.dtype
        assert_all_match((y, dx, dweight, dgate), want, dtype)


@pytest.mark.parametrize("dtype", [F32, BF16], ids=str)
def test_rows_wider_than_one_interpreter_tile(dtype, device):
    """65 600 columns: column tiles in the interpreter (its tiles hold 65 536), both directions."""
    x, weight, gate, dy = _inputs((2, 65600), dtype, device)
    want = float64_reference(x, weight, gate, dy)
    y, _, rstd = lowlevel.rms_norm_fwd(x, weight, gate=gate, eps=EPS, store_rstd=True)
    for saved in (rstd, None):
        dx, dweight, _, _, dgate = lowlevel.rms_norm_bwd(x, weight, dy, saved, gate=gate, eps=EPS)
        assert_all_match((y, dx, dweight, dgate), want, dtype)


# Every path the gate takes, forced onto small problems: column tiles of 64 (four a row), whole rows of
# two, prefetching and staged (the interpreter runs the staged loop plainly) whole rows.
FORCED = {
    "columns": cfg.TileConfig(2, 64, False),
    "whole": cfg.TileConfig(2, 256, True),
    "prefetch": cfg.TileConfig(2, 256, True, prefetch=True),
    "staged": cfg.TileConfig(1, 256, True, async_stages=3),
}


def _launch(x, weight, gate, dy, config, x_hat_dtype=None, rstd=True):
    out = torch.empty_like(x)
    saved = torch.empty(x.shape[0], dtype=F64 if x.dtype == F64 else F32, device=x.device) if rstd else None
    forward_config = config if not (config.prefetch or config.async_stages) else None  # backward options
    ops.launch_fwd(x, out, weight=weight, gate=gate, rstd=saved, eps=EPS, x_hat_dtype=x_hat_dtype,
                   config=forward_config)
    dx, dweight = torch.empty_like(x), torch.empty_like(weight)
    dgate = torch.empty(x.shape, dtype=gate.dtype, device=x.device)  # row-major, as dx
    ops.launch_bwd(x, dy, dx, weight=weight, dweight=dweight, gate=gate, dgate=dgate, rstd=saved, eps=EPS,
                   x_hat_dtype=x_hat_dtype, config=config)
    return out, dx, dweight, dgate


@pytest.mark.parametrize("tile", FORCED)
@pytest.mark.parametrize("rstd", [True, False], ids=["saved", "recomputed"])
def test_every_tile_path(tile, rstd, device):
    for dtype, casting_mode in ((F32, "fp32"), (BF16, "llama")):
        x, weight, gate, dy = _inputs((5, 200), dtype, device)
        got = _launch(x, weight, gate, dy, FORCED[tile], dtype if casting_mode == "llama" else None, rstd)
        assert_all_match(got, float64_reference(x, weight, gate, dy, casting_mode), dtype)


def test_strided_gate_and_a_float32_gate_beside_bfloat16(device):
    """A gate that is a transposed view (its own strides), and one wider than x (dgate in its dtype)."""
    x, weight, _, dy = _inputs((7, 200), F32, device)
    gate = torch.randn(200, 7, dtype=F32, device=device).t()
    for tile in ("columns", "prefetch"):
        assert_all_match(_launch(x, weight, gate, dy, FORCED[tile]), float64_reference(x, weight, gate, dy), F32)
    x, weight, gate, dy = _inputs((7, 200), BF16, device, gate_dtype=F32)
    y, dx, dweight, dgate = _launch(x, weight, gate, dy, FORCED["whole"])
    assert dgate.dtype == F32
    assert_all_match((y, dx, dweight, dgate), float64_reference(x, weight, gate, dy), BF16, F32)


def test_split_rows_are_never_picked_with_a_gate():
    """The heuristics split the widest rows on a GPU (H200: 132 SMs); with a gate the launchers ask them
    with 0 SMs, so they pick whole rows or column tiles instead. A forced split config is refused."""
    ungated_splits = 0
    for n in (16384, 32768, 65536, 131072, 262144):
        for backward in (False, True):
            for scenario in (dict(element_size=2), dict(element_size=4, residual=True), dict(element_size=2,
                                                                                            recompute=True)):
                if not backward:
                    scenario.pop("recompute", None)
                ungated_splits += cfg.tile_config(n, backward, False, multiprocessors=132, **scenario).split
                picked = cfg.tile_config(n, backward, False, multiprocessors=variant.sms_for_tiles(object(), 132),
                                         **scenario)
                assert not picked.split, (n, backward, scenario, picked)
    assert ungated_splits >= 10 and variant.sms_for_tiles(None, 132) == 132
    # whole rows hold a third input row (the gate): half the rows a tile (variant.gated_backward_tile)
    assert variant.gated_backward_tile(cfg.TileConfig(16, 128, True, async_stages=3)) == cfg.TileConfig(
        8, 128, True, async_stages=3)
    assert variant.gated_backward_tile(cfg.TileConfig(1, 8192, True)).block_m == 1
    assert variant.gated_backward_tile(cfg.TileConfig(2, 4096, False)).block_m == 2  # (column tiles: as picked)
    x = torch.randn(4, 64, device="cuda" if torch.cuda.is_available() else "cpu")  # (a launch, not the CPU path)
    split = cfg.TileConfig(1, 32, True, split=True)
    with pytest.raises(ValueError, match="not split rows"):
        ops.launch_bwd(x, x, torch.empty_like(x), gate=x, dgate=torch.empty_like(x), eps=EPS, config=split)
    with pytest.raises(ValueError, match="not split rows"):
        ops.launch_fwd(x, torch.empty_like(x), gate=x, eps=EPS, config=split)


# ----------------------------------------------------------------------------- autograd and friends
def test_autograd_with_residual_and_per_head_weights(device):
    """rms_norm(gate=) through the autograd Function: a 3-D x with a residual (prenorm), and per-head
    (H, N) weights, against float64 autograd."""
    x, weight, gate, dy = _inputs((3, 4, 48), F32, device)
    residual = torch.randn_like(x)
    leaves = [t.clone().requires_grad_() for t in (x, residual, weight, gate)]
    y, h = normkit.rms_norm(leaves[0], leaves[2], residual=leaves[1], gate=leaves[3], eps=EPS, prenorm=True)
    got = torch.autograd.grad(y, leaves, dy)
    ref = [t.detach().double().cpu().requires_grad_() for t in (x, residual, weight, gate)]
    h64 = ref[0] + ref[1]
    y64 = h64 * torch.rsqrt(h64.square().mean(-1, keepdim=True) + EPS) * ref[2] * torch.nn.functional.silu(ref[3])
    assert_matches(y, y64, F32, "y")
    assert_matches(h, h64, F32, "residual_out")
    for name, a, b in zip(("dx", "dresidual", "dweight", "dgate"), got, torch.autograd.grad(y64, ref, dy.double().cpu())):
        assert_matches(a, b, F32, name)
    only_gate = gate.clone().requires_grad_()  # the gate alone requiring grad still goes through autograd
    dgate = torch.autograd.grad(normkit.rms_norm(x, weight, gate=only_gate, eps=EPS), only_gate, dy)[0]
    assert_matches(dgate, float64_reference(x, weight, gate, dy)[3], F32, "dgate alone")
    heads = torch.randn(4, 48, dtype=F32, device=device) + 1
    y = normkit.rms_norm(x, heads, gate=gate, eps=EPS)
    assert_matches(y, float64_reference(x, heads, gate, dy)[0], F32, "per-head y")


def test_gradcheck_double_backward_and_forward_ad():
    x, weight, gate, _ = _inputs((3, 16), F64, "cpu")
    inputs = [t.requires_grad_() for t in (x, weight, gate)]
    fn = lambda x, w, g: normkit.rms_norm(x, w, gate=g, eps=EPS)  # noqa: E731
    assert torch.autograd.gradcheck(fn, inputs, check_forward_ad=True, check_batched_grad=True)
    assert torch.autograd.gradgradcheck(fn, inputs)


def test_torch_func_grad_jvp_vmap():
    x, weight, gate, _ = _inputs((3, 16), F64, "cpu")
    fn = lambda x, w, g: normkit.rms_norm(x, w, gate=g, eps=EPS, casting_mode="llama")  # noqa: E731
    dgate = torch.func.grad(lambda g: fn(x, weight, g).square().sum())(gate)
    y = float64_reference(x, weight, gate, torch.zeros_like(x))[0]
    torch.testing.assert_close(dgate, float64_reference(x, weight, gate, 2 * y)[3])  # d Σy² = 2y
    tangents = [torch.randn_like(t) for t in (x, weight, gate)]
    _, y_t = torch.func.jvp(fn, (x, weight, gate), tuple(tangents))
    step = 1e-6
    ahead = fn(*(t + step * d for t, d in zip((x, weight, gate), tangents)))
    behind = fn(*(t - step * d for t, d in zip((x, weight, gate), tangents)))
    torch.testing.assert_close(y_t, (ahead - behind) / (2 * step), rtol=1e-6, atol=1e-7)
    xs, gates, weights = torch.randn(4, 3, 16, dtype=F64), torch.randn(4, 3, 16, dtype=F64), torch.randn(4, 16,
                                                                                                          dtype=F64)
    for in_dims, args in (((0, None, 0), (xs, weight, gates)), ((0, 0, 0), (xs, weights, gates)),
                          ((None, None, 0), (x, weight, gates))):
        batched = torch.func.vmap(fn, in_dims=in_dims)(*args)
        for i in range(4):
            one = [a if d is None else a[i] for a, d in zip(args, in_dims)]
            assert torch.equal(batched[i], fn(*one))


def test_torch_compile_fullgraph(device):
    x, weight, gate, dy = _inputs((8, 64), BF16, device)

    def f(x, w, g):
        return normkit.rms_norm(x * 2.0, w, gate=g, eps=EPS, casting_mode="llama")

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    a = [t.clone().requires_grad_() for t in (x, weight, gate)]
    b = [t.clone().requires_grad_() for t in (x, weight, gate)]
    y_c, y_e = compiled(*a), f(*b)
    assert torch.equal(y_c, y_e)
    grads_c, grads_e = torch.autograd.grad(y_c, a, dy), torch.autograd.grad(y_e, b, dy)
    for g_c, g_e in zip(grads_c, grads_e):
        assert torch.equal(g_c, g_e)


def test_custom_ops_pass_opcheck(device):
    x, weight, gate, dy = _inputs((4, 48), F32, device)
    fwd, bwd = torch.ops.normkit.norm_fwd.default, torch.ops.normkit.norm_bwd.default
    rstd = lowlevel.rms_norm_fwd(x, weight, gate=gate, store_rstd=True)[2]
    torch.library.opcheck(fwd, (x, weight, None, None, EPS, 0.0, True, True, None, None, None, gate))
    torch.library.opcheck(fwd, (x, weight, None, None, EPS, 0.0, True, False, BF16, None, BF16, gate.to(BF16)))
    torch.library.opcheck(bwd, (x, weight, dy, None, rstd, None, None, None, EPS, 0.0, True, None, gate))
    torch.library.opcheck(bwd, (x, None, dy, None, None, dy, None, None, EPS, 0.0, True, BF16, gate.to(BF16)))


def test_gate_is_part_of_the_launch_signature(device):
    """None-ness, dtype, strides and alignment of the gate each give a plan of their own; a plan's
    launch equals the full path's."""
    from normkit import launch

    g = torch.Generator().manual_seed(3)
    base = torch.randn(9, 64, generator=g).to(device)
    weight = torch.randn(64, generator=g).to(device)

    def forward(gate):
        out = torch.empty(8, 64, device=device)
        ops.launch_fwd(base[:8], out, weight=weight, gate=gate, eps=EPS)
        return out

    variants = {"none": None, "gate": base[1:9], "bf16": base[1:9].to(BF16), "strided": base.t().contiguous().t()[:8],
                "misaligned": base.view(-1)[1:8 * 64 + 1].view(8, 64)}
    launch.set_mode("off")
    try:
        full = {name: forward(gate) for name, gate in variants.items()}
    finally:
        launch.set_mode("on")
    for name, gate in variants.items():
        assert torch.equal(forward(gate), full[name]), name
        assert torch.equal(forward(gate), full[name]), name
    assert ops.plan_cache_info()["size"] == len(variants) and ops.plan_cache_info()["hits"] == len(variants)


def test_cpu_path_without_the_interpreter(monkeypatch):
    """Without the interpreter CPU tensors take reference.py, with the same semantics."""
    monkeypatch.setattr(launchers, "uses_triton", lambda device: False)
    x, weight, gate, dy = _inputs((5, 96), BF16, "cpu")
    leaves = [t.clone().requires_grad_() for t in (x, weight, gate)]
    y = normkit.rms_norm(*leaves[:2], gate=leaves[2], eps=EPS, casting_mode="llama")
    got = (y, *torch.autograd.grad(y, leaves, dy))
    assert_all_match(got, float64_reference(x, weight, gate, dy, "llama"), BF16)


# ----------------------------------------------------------------------------- bad inputs
def test_bad_gates_get_clear_errors():
    x, weight, gate, dy = _inputs((4, 32), F32, "cpu")
    cases = [
        (gate[:, :16], ValueError, r"gate must have shape \(4, 32\), got \(4, 16\)"),
        (gate.to(torch.int64), TypeError, "gate must have a floating dtype"),
        (gate.to("meta"), ValueError, r"gate must be on x's device \(cpu\), got meta"),
        (gate.double(), TypeError, "x is torch.float32 but gate is torch.float64"),
        ("a gate", TypeError, "gate must be a torch.Tensor or None, got str"),
    ]
    for bad, error, message in cases:
        for call in (lambda: normkit.rms_norm(x, weight, gate=bad),
                     lambda: lowlevel.rms_norm_fwd(x, weight, gate=bad),
                     lambda: lowlevel.rms_norm_bwd(x, weight, dy, gate=bad)):
            with pytest.raises(error, match=message):
                call()
    with pytest.raises(ValueError, match="gate .* takes no bias"):
        normkit.rms_norm(x, weight, weight, gate=gate)
    with pytest.raises(ValueError, match="has_bias=True asks for dbias, but a gated norm takes no bias"):
        lowlevel.rms_norm_bwd(x, weight, dy, gate=gate, has_bias=True)
    with pytest.raises(TypeError, match="gate"):  # LayerNorm has no gated form
        normkit.layer_norm(x, weight, gate=gate)
    with pytest.raises(ValueError, match="dgate must be given exactly when gate is"):
        ops.launch_bwd(x, dy, torch.empty_like(x), gate=gate, eps=EPS)


# ----------------------------------------------------------------------------- Hugging Face
GATED_CLASSES = [  # (transformers.models.<module>, class): "llama" rounding (weight * x̂.to(dtype)), then fp32
    ("qwen3_next", "Qwen3NextRMSNormGated"), ("qwen3_5", "Qwen3_5RMSNormGated"),
    ("qwen3_5_moe", "Qwen3_5MoeRMSNormGated"), ("olmo_hybrid", "OlmoHybridRMSNormGated"),
    ("lara_mini", "LaraMiniRMSNormGated"),
]


def _gated_class(module_name, *class_names):
    """The first of class_names the transformers module has (the names change between releases)."""
    pytest.importorskip("transformers")
    try:
        module = importlib.import_module(f"transformers.models.{module_name}.modeling_{module_name}")
    except ImportError:
        pytest.skip(f"transformers has no {module_name}")
    for name in class_names:
        if hasattr(module, name):
            return getattr(module, name)
    pytest.skip(f"transformers' {module_name} has none of {class_names}")


def _randomised(cls, n, dtype, device):
    module = cls(n, eps=1e-6)
    with torch.no_grad():
        module.weight.copy_(1 + 0.25 * torch.randn(n, generator=torch.Generator().manual_seed(5)))
    return module.to(device=device, dtype=dtype)


@pytest.mark.parametrize("module_name,class_name", GATED_CLASSES)
def test_hugging_face_gated_classes_are_reproduced(module_name, class_name, device):
    """Patched vs stock: y in bf16 and fp16 within one ulp and ≥ 99.9 % bit-identical (bitwise where
    normkit's rstd and silu agree with torch's to the last bit: the row sums' order and exp may differ
    by an ulp of float32); float32 within rounding; the gradients of x, weight and gate; the patched
    module under torch.compile(fullgraph=True) as eager."""
    cls = _gated_class(module_name, class_name)
    for dtype, n in ((BF16, 128), (BF16, 1000), (F16, 256), (F32, 256)):
        stock = _randomised(cls, n, dtype, device)
        patched = copy.deepcopy(stock)
        assert normkit.patch(patched) == 1
        x, _, gate, dy = _inputs((64, n), dtype, device, seed=n)
        a = [t.clone().requires_grad_() for t in (x, gate)]
        b = [t.clone().requires_grad_() for t in (x, gate)]
        y_patched, y_stock = patched(*a), stock(*b)
        assert ran_normkit(y_patched) and y_patched.dtype == y_stock.dtype == dtype
        if dtype != F32:
            ulp = torch.finfo(dtype).eps * torch.exp2(torch.floor(torch.log2(y_stock.detach().float().abs())))
            assert ((y_patched - y_stock).detach().float().abs() <= ulp).all()
            assert (y_patched == y_stock).float().mean().item() >= 0.999
            tol = dict(rtol=2e-2, atol=5e-2)
        else:
            torch.testing.assert_close(y_patched, y_stock, rtol=1e-5, atol=1e-5)
            tol = dict(rtol=1e-4, atol=1e-4)
        y_patched.backward(dy)
        y_stock.backward(dy)
        for name, p, s in (("x", a[0], b[0]), ("gate", a[1], b[1]), ("weight", patched.weight, stock.weight)):
            torch.testing.assert_close(p.grad, s.grad, **tol, msg=name)
    compiled = torch.compile(patched, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(x, gate), patched(x, gate))


def test_hugging_face_gated_norms_left_alone_and_without_a_gate():
    """A sigmoid gate (Kimi Linear) and a gate before the norm (Mamba2) are left alone and named; a
    patched norm called without a gate runs the stock forward, errors included."""
    kimi = _gated_class("kimi_linear", "KimiLinearRMSNormGated")
    mamba2 = _gated_class("mamba2", "Mamba2RMSNormGated", "MambaRMSNormGated")  # (5.25, 5.17)
    qwen = _gated_class("qwen3_next", "Qwen3NextRMSNormGated")
    model = torch.nn.ModuleDict(dict(kimi=kimi(32), mamba=mamba2(32, 16), qwen=qwen(32)))
    with pytest.warns(UserWarning, match="left 2 module"):
        report = normkit.patch(model)
    assert report.switched == {"Qwen3NextRMSNormGated": ["qwen"]}
    assert report.left_alone == {
        ("KimiLinearRMSNormGated", "gate activation 'sigmoid' (normkit's gate is silu)"): ["kimi"],
        (mamba2.__name__, "forward not recognised"): ["mamba"]}
    x = torch.randn(2, 32)
    with pytest.raises(AttributeError):  # transformers' forward needs a gate
        model["qwen"](x)
    assert not ran_normkit(model["qwen"](x.requires_grad_(), torch.randn(2, 32, dtype=F64)))  # (float64 gate: stock)


def test_tiny_qwen3_next_model_trains_like_stock(device):
    """A 4-layer Qwen3-Next (three linear-attention layers, one full) from its config: every norm
    runs on normkit (the gated ones among them), loss and gradients as stock."""
    transformers = pytest.importorskip("transformers")
    config = tiny_qwen3_next_config()
    torch.manual_seed(0)
    stock = transformers.Qwen3NextForCausalLM(config).to(device)
    for module in stock.modules():  # away from the initial ones / zeros, so the weight path is exercised
        if type(module).__name__.endswith(("RMSNorm", "RMSNormGated")):
            with torch.no_grad():  # the gated norms scale by w, the others by 1 + w
                module.weight.normal_(1.0 if type(module).__name__.endswith("Gated") else 0.1, 0.2)
    model = copy.deepcopy(stock)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every norm is recognised
        report = normkit.patch(model)
    assert len(report.switched["Qwen3NextRMSNormGated"]) == 3
    tokens = torch.randint(128, (2, 16), generator=torch.Generator().manual_seed(1)).to(device)
    loss_fn = lambda m, t: m(input_ids=t, labels=t).loss  # noqa: E731
    loss, grads = _loss_and_grads(model, loss_fn, tokens)
    loss_ref, grads_ref = _loss_and_grads(stock, loss_fn, tokens)
    torch.testing.assert_close(loss, loss_ref, rtol=1e-5, atol=1e-6)
    for (name, _), a, b in zip(model.named_parameters(), grads, grads_ref):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=name)


def test_a_gate_never_takes_split_rows_even_when_the_device_would_split():
    """The gated norm asks the heuristics with 0 multiprocessors so no row splits; a device record
    must not replace that 0 with its SM count (an H200 split gated bf16 4096×16384's backward, which
    the gated kernels refuse)."""
    from normkit import config as cfg

    h200 = cfg.KNOWN_DEVICES["sm90"]
    pick = getattr(cfg.tile_config, "__wrapped__", cfg.tile_config)
    ungated = pick(16384, True, False, device=h200, element_size=2)
    gated = pick(16384, True, False, multiprocessors=0, device=h200, element_size=2)
    assert ungated.split and not gated.split


def test_the_gated_backward_takes_a_row_of_16384_then_column_tiles():
    """Rows of 8193-16384 in the gated backward take one whole-row tile of 16 warps (GATED_ROW_BACKWARD; H100 bf16
    4096×16384: 325.5 µs against the column tiles' 388.2), wider rows column tiles; narrower whole rows take
    half the rows (three input rows a tile); the forward holds the rows the ungated one re-reads."""
    from normkit import config as cfg

    pick = getattr(cfg.tile_config, "__wrapped__", cfg.tile_config)
    for n in (12288, 16384):
        row = variant.gated_backward_tile(pick(n, True, False, multiprocessors=0, element_size=2))
        assert row == variant.GATED_ROW_BACKWARD and row.block_n >= n
    wide = variant.gated_backward_tile(pick(32768, True, False, multiprocessors=0, element_size=2))
    assert not wide.one_tile and not wide.split and wide == variant.GATED_WIDE_BACKWARD
    for n, held in ((8192, True), (16384, True), (32768, False)):
        ungated = pick(n, False, False, multiprocessors=0, element_size=2)
        gated = variant.gated_forward_tile(ungated)
        assert ungated.reload and gated.reload is not held and (gated.max_registers == 0 or not held)
        assert dataclasses.replace(gated, reload=ungated.reload, max_registers=ungated.max_registers) == ungated
    narrow = pick(128, True, False, multiprocessors=0, element_size=2)
    assert variant.gated_backward_tile(narrow).block_m == max(1, narrow.block_m // 2)
