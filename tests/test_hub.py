"""The Hugging Face `kernels` hub layers (normkit/integrations/hub.py), loaded the way a user's
mapping loads them: from the layer repository in hub/normkit, through `kernels.kernelize`.

Compared with stock transformers (a tiny Llama's loss and gradients, eager and compiled), with
`normkit.patch` (bitwise: the same recipe) and with the stock module run in float64.
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
from tests.test_patch import _hf_model, _randomise, assert_trains_like  # noqa: E402
from tests.utils import assert_matches  # noqa: E402

from kernels import KernelizeFallback, LocalLayerRepository, Mode, kernelize, use_kernel_mapping  # noqa: E402

HUB_REPO = Path(__file__).resolve().parents[1] / "hub" / "normkit"
MODE = Mode.TRAINING | Mode.TORCH_COMPILE
LLAMA_NORM = transformers.models.llama.modeling_llama.LlamaRMSNorm


def _kernelize(model, device, mode=MODE):
    """kernelize through the local repository, for the layer names transformers gives its norms."""
    mapping = {name: {device: {MODE: LocalLayerRepository(repo_path=HUB_REPO, layer_name=name)}}
               for name in ("RMSNorm", "RMSNormZeroCentered")}
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
    for name in ("RMSNorm", "RMSNormZeroCentered"):
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
