"""The Hugging Face `kernels` hub layers (normkit/integrations/hub.py), loaded the way a user's
mapping loads them: from the layer repository in hub/normkit, through `kernels.kernelize`.

Compared with stock transformers (a tiny Llama's and a tiny Qwen3-Next's loss and gradients), with
`normkit.patch` (bitwise: the same recipe) and with the stock module run in float64; the gated
layer also under torch.compile(fullgraph=True), on sigmoid gates, without a gate and on bad gates.
"""

import copy
import json
from pathlib import Path

import pytest
import torch

kernels = pytest.importorskip("kernels")
transformers = pytest.importorskip("transformers")

import normkit  # noqa: E402
from normkit import functional  # noqa: E402
from normkit.integrations import hub  # noqa: E402
from tests.test_gated import GATED_CLASSES, _gated_class, _randomised, assert_all_match, float64_reference  # noqa: E402
from tests.test_gated import _inputs as gated_inputs  # noqa: E402
from tests.test_patch import _hf_loss, _hf_model, _loss_and_grads, _randomise, assert_trains_like  # noqa: E402
from tests.utils import assert_matches, tiny_qwen3_next_config  # noqa: E402

from kernels import KernelizeFallback, LocalLayerRepository, Mode, kernelize, use_kernel_mapping  # noqa: E402

HUB_REPO = Path(__file__).resolve().parents[1] / "hub" / "normkit"
MODE = Mode.TRAINING | Mode.TORCH_COMPILE
LLAMA_NORM = transformers.models.llama.modeling_llama.LlamaRMSNorm
GATED_NORM = transformers.models.qwen3_next.modeling_qwen3_next.Qwen3NextRMSNormGated
BF16, F16, F32 = torch.bfloat16, torch.float16, torch.float32


def _kernelize(model, device, mode=MODE):
    """kernelize through the local repository, for the layer names transformers gives its norms (each
    layer is named after the name it maps)."""
    mapping = {name: {device: {MODE: LocalLayerRepository(repo_path=HUB_REPO, layer_name=name)}}
               for name in hub.__all__}
    with use_kernel_mapping(mapping, inherit_mapping=False):
        # raise if the layer cannot load or lacks the device or mode; unmapped names (rotary_pos_emb) stay stock
        return kernelize(model, mode=mode, device=device, use_fallback=KernelizeFallback.NO_LAYER)


@pytest.fixture
def normkit_calls(monkeypatch):
    """How many times `normkit.functional.rms_norm` ran (the hub layers call it through the module)."""
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    original = functional.rms_norm
    monkeypatch.setattr(functional, "rms_norm", counted)
    return calls


def test_repository_loads_normkits_own_classes():
    assert hub.__all__ == ["RMSNorm", "RMSNormZeroCentered", "RMSNormGated"]
    for name in hub.__all__:
        layer = LocalLayerRepository(repo_path=HUB_REPO, layer_name=name).load()
        assert layer is getattr(hub, name)  # a re-export: no second copy of the code
        assert layer.has_backward and layer.can_torch_compile
    variants = sorted((HUB_REPO / "build").iterdir())
    assert [v.name for v in variants] == ["torch-cpu", "torch-cuda"]
    for variant in variants:  # the variants differ only in their backend (and so their unique id)
        metadata = json.loads((variant / "metadata.json").read_text())
        backend = variant.name.removeprefix("torch-")
        assert metadata["backend"] == {"type": backend} and metadata["id"] == f"_normkit_hub_{backend}"
        for file in ("__init__.py", "layers.py"):
            assert (variant / file).read_text() == (variants[0] / file).read_text()


@pytest.mark.parametrize("mode", [Mode.TRAINING, MODE, Mode.INFERENCE, Mode.INFERENCE | Mode.TORCH_COMPILE])
def test_one_training_compile_entry_serves_every_mode(mode, device):
    """kernels falls back from any mode to TRAINING | TORCH_COMPILE: the one entry docs/hub.md shows."""
    module = _kernelize(LLAMA_NORM(8).to(device), device, mode)
    assert module.forward.__func__ is hub.RMSNorm.forward


def test_tiny_llama_kernelized_matches_stock(device, normkit_calls):
    model = _hf_model("Llama").to(device)
    reference = copy.deepcopy(model)
    keys = list(model.state_dict())
    _kernelize(model, device)
    norms = [m for m in model.modules() if isinstance(m, LLAMA_NORM)]
    assert len(norms) == 5 and all(m.forward.__func__ is hub.RMSNorm.forward for m in norms)
    assert list(model.state_dict()) == keys
    def every_norm_ran_on_normkit():  # none fell back to the stock forward
        assert len(normkit_calls) == 5

    assert_trains_like(model, reference, device, before_reference=every_norm_ran_on_normkit)


@pytest.mark.parametrize("model_type,class_name,center", [("llama", "LlamaRMSNorm", 1.0),
                                                         ("qwen3_5", "Qwen3_5RMSNorm", 0.1)])
@pytest.mark.parametrize("dtype,weight_dtype", [(torch.bfloat16, torch.bfloat16), (torch.bfloat16, torch.float32),
                                                (torch.float16, torch.float16), (torch.float32, torch.float32)])
def test_layers_compute_what_patch_does(model_type, class_name, center, dtype, weight_dtype, device, normkit_calls):
    """Bitwise equal to `normkit.patch` (the same recipe), output dtype as stock, close to float64."""
    cls = getattr(pytest.importorskip(f"transformers.models.{model_type}.modeling_{model_type}"), class_name)
    stock = _randomise(cls(64, eps=1e-5), center).to(device=device, dtype=weight_dtype)
    kernelized, patched = _kernelize(copy.deepcopy(stock), device), copy.deepcopy(stock)
    assert normkit.patch(patched) == 1
    g = torch.Generator().manual_seed(1)
    x, dy = (torch.randn(2, 6, 64, generator=g).to(device=device, dtype=dtype) for _ in range(2))
    outputs = []
    for module, x_dtype in ((kernelized, dtype), (patched, dtype), (stock.double(), torch.float64)):
        xi = x.to(x_dtype, copy=True).requires_grad_()
        y = module(xi)
        y.backward(dy.to(y.dtype))
        outputs.append((y, xi.grad, module.weight.grad))
    assert len(normkit_calls) == 2  # the kernelized and the patched module
    (y, dx, dweight), patched_out, (y64, dx64, dweight64) = outputs
    assert y.dtype == (torch.promote_types(dtype, weight_dtype) if cls is LLAMA_NORM else dtype)
    for got, want in zip((y, dx, dweight), patched_out):
        assert got.dtype == want.dtype and torch.equal(got, want)
    for got, want, what in zip((y, dx, dweight), (y64, dx64, dweight64), ("y", "dx", "dweight")):
        assert_matches(got, want, dtype, what)  # x's precision bounds all three (Llama rounds x̂ to it)


def test_inputs_normkit_does_not_take_run_the_stock_forward(device, normkit_calls):
    module = _kernelize(_randomise(LLAMA_NORM(16)).to(device), device)
    x = torch.randn(3, 16, dtype=torch.float64, device=device)  # float64 beside a float32 weight
    y = module(x)
    assert normkit_calls == [] and torch.equal(y, LLAMA_NORM.forward(module, x))


# ----------------------------------------------------------------------------- the gated layer
def test_tiny_qwen3_next_kernelized_matches_stock(device, normkit_calls):
    """A 4-layer Qwen3-Next from its config: its three "RMSNormGated" norms (one a linear-attention layer)
    run on normkit, loss and gradients as stock (its other norms have no hub name in transformers 5.25)."""
    config = tiny_qwen3_next_config()
    torch.manual_seed(0)
    reference = transformers.Qwen3NextForCausalLM(config).to(device)
    for module in reference.modules():
        if isinstance(module, GATED_NORM):  # away from the initial ones, so the weight path is exercised
            with torch.no_grad():
                module.weight.normal_(1.0, 0.2)
    model = _kernelize(copy.deepcopy(reference), device)
    gated = [m for m in model.modules() if isinstance(m, GATED_NORM)]
    assert len(gated) == 3 and all(m.forward.__func__ is hub.RMSNormGated.forward for m in gated)
    tokens = torch.randint(128, (2, 16), generator=torch.Generator().manual_seed(1)).to(device)
    loss, grads = _loss_and_grads(model, _hf_loss, tokens)
    assert len(normkit_calls) == 3
    loss_ref, grads_ref = _loss_and_grads(reference, _hf_loss, tokens)
    torch.testing.assert_close(loss, loss_ref, rtol=1e-5, atol=1e-6)
    for (name, _), a, b in zip(model.named_parameters(), grads, grads_ref):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=name)


def _gated_step(module, x, gate, dy):
    """(y, dx, dweight, dgate) of one forward and backward."""
    module.zero_grad(set_to_none=True)
    x, gate = x.clone().requires_grad_(), gate.clone().requires_grad_()
    y = module(x, gate)
    y.backward(dy)
    return y, x.grad, module.weight.grad, gate.grad


@pytest.mark.parametrize("module_name,class_name", GATED_CLASSES)
@pytest.mark.parametrize("dtype,gate_dtype,n", [(BF16, BF16, 128), (BF16, F32, 1000), (F16, F16, 256), (F32, F32, 256)])
def test_gated_layer_computes_what_patch_does(module_name, class_name, dtype, gate_dtype, n, device, normkit_calls):
    """Bitwise equal to `normkit.patch` (the same recipe, whichever rounding the class has); against
    stock as tests/test_gated.py measures patch: 16-bit y within one ulp and ≥ 99.9 % bit-identical,
    float32 within rounding, the gradients where it compares them; all four close to float64."""
    cls = _gated_class(module_name, class_name)
    stock = _randomised(cls, n, dtype, device)
    kernelized, patched = _kernelize(copy.deepcopy(stock), device), copy.deepcopy(stock)
    assert normkit.patch(patched) == 1
    x, _, gate, dy = gated_inputs((64, n), dtype, device, seed=n, gate_dtype=gate_dtype)
    got, from_patch, from_stock = (_gated_step(m, x, gate, dy) for m in (kernelized, patched, stock))
    assert len(normkit_calls) == 2  # the kernelized and the patched module
    for a, b in zip(got, from_patch):
        assert a.dtype == b.dtype and torch.equal(a, b)
    y, y_stock = got[0].detach(), from_stock[0].detach()
    if dtype == F32:
        torch.testing.assert_close(y, y_stock, rtol=1e-5, atol=1e-5)
    else:
        ulp = torch.finfo(dtype).eps * torch.exp2(torch.floor(torch.log2(y_stock.float().abs())))
        assert ((y - y_stock).float().abs() <= ulp).all() and (y == y_stock).float().mean().item() >= 0.999
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == F32 else dict(rtol=2e-2, atol=5e-2)
    for name, a, b in zip(("dx", "dweight", "dgate"), got[1:], from_stock[1:]):
        if gate_dtype == dtype:  # beside a float32 gate stock's bf16 dweight is 9 % off float64 (0.879 vs 0.808)
            torch.testing.assert_close(a, b, **tol, msg=name)
    casting_mode = normkit.integrations.hf.recipe_for_class(cls).casting_mode
    assert_all_match(got, float64_reference(x, stock.weight, gate, dy, casting_mode), dtype, gate_dtype)


def test_gated_layer_under_torch_compile_fullgraph(device, normkit_calls):
    """The class's recipe is looked up outside the traced code: no graph break, normkit in the graph,
    y and the gradients equal to eager's."""
    kernelized = _kernelize(_randomised(GATED_NORM, 128, BF16, device), device)
    x, _, gate, dy = gated_inputs((16, 128), BF16, device)
    eager = _gated_step(kernelized, x, gate, dy)
    compiled = torch.compile(kernelized, fullgraph=True, backend="inductor" if device == "cuda" else "aot_eager")
    calls = len(normkit_calls)
    for a, b in zip(_gated_step(compiled, x, gate, dy), eager):
        assert torch.equal(a, b)
    assert len(normkit_calls) > calls  # traced into the graph, not the stock forward


def test_sigmoid_gates_and_calls_without_a_gate_run_the_stock_forward(device, normkit_calls):
    """"RMSNormGated" also names sigmoid gates (Kimi Linear): those run their own forward. Without a
    gate, each class does what stock does (transformers 5.25's forwards all need one)."""
    kimi, lara = (_gated_class(*names) for names in (("kimi_linear", "KimiLinearRMSNormGated"),
                                                     ("lara_mini", "LaraMiniRMSNormGated")))
    stock = torch.nn.ModuleDict({name: _randomised(cls, 32, F32, device)
                                 for name, cls in (("kimi", kimi), ("lara", lara), ("qwen", GATED_NORM))})
    kernelized = _kernelize(copy.deepcopy(stock), device)
    assert all(m.forward.__func__ is hub.RMSNormGated.forward for m in kernelized.values())
    x, _, gate, _ = gated_inputs((4, 32), F32, device)
    assert torch.equal(kernelized["kimi"](x, gate), stock["kimi"](x, gate)) and normkit_calls == []
    for name in ("kimi", "lara", "qwen"):
        for module in (kernelized[name], stock[name]):
            with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'to'"):
                module(x, None)
    for module in (kernelized["lara"], stock["lara"]):  # its forward defaults gate to None
        with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'to'"):
            module(x)
    assert normkit_calls == []


def test_bad_gates_get_what_stock_gets_and_a_bad_epsilon_normkits_error(device, normkit_calls):
    """A drop-in, as `normkit.patch`: a gate normkit does not take runs the stock forward, so a gate
    that broadcasts gives stock's answer and one of another shape or device stock's error. A negative
    epsilon, which stock turns into NaN, gets normkit's error."""
    stock = _randomised(GATED_NORM, 32, F32, device)
    kernelized = _kernelize(copy.deepcopy(stock), device)
    x, _, gate, _ = gated_inputs((4, 32), F32, device)
    for broadcast in (gate[:1], gate.double()):
        assert torch.equal(kernelized(x, broadcast), stock(x, broadcast))
    for bad, message in ((gate[:, :16], r"size of tensor a \(32\) must match the size of tensor b \(16\)"),
                         (gate.to("meta"), "Tensor on device meta is not on the expected device")):
        for module in (kernelized, stock):
            with pytest.raises(RuntimeError, match=message):
                module(x, bad)
    assert normkit_calls == []
    kernelized.variance_epsilon = -1.0
    with pytest.raises(ValueError, match="eps must be a finite number >= 0, got -1.0"):
        kernelized(x, gate)
