"""`normkit.patch` on inputs and usage paths the other patch tests do not reach, each against the stock
module or model: float64 models (Hugging Face's forwards round to float32 inside)."""

import copy

import pytest
import torch

import normkit
from normkit import modules
from normkit.integrations import decoder
from tests.test_patch import GemmaRMSNorm, LlamaRMSNorm, Olmo2RMSNorm, _inputs, _randomise

F64 = torch.float64


def _stock_and_patched(module):
    patched = copy.deepcopy(module)
    assert normkit.patch(patched) == 1
    return module, patched


def _outputs_and_grads(module, inputs, dy):
    leaves = [t.detach().clone().requires_grad_() for t in inputs]
    y = module(*leaves)
    grads = torch.autograd.grad(y, leaves + list(module.parameters()), dy)
    return y, grads


@pytest.mark.parametrize("cls,center", [(LlamaRMSNorm, 1.0), (GemmaRMSNorm, 0.1), (Olmo2RMSNorm, 1.0)])
def test_float64_models_compute_what_stock_computes(cls, center, device):
    """Hugging Face's forwards compute x̂ in float32 (`.to(torch.float32)`, `.float()`), also for a
    float64 x: a patched float64 model gives stock's numbers, not a more precise float64 norm."""
    stock, patched = _stock_and_patched(_randomise(cls(64, eps=1e-6), center).to(device=device, dtype=F64))
    x, dy = _inputs((6, 64), F64, device)
    y_stock, grads_stock = _outputs_and_grads(stock, [x], dy.to(device))
    y, grads = _outputs_and_grads(patched, [x], dy.to(device))
    assert y.dtype == F64
    torch.testing.assert_close(y, y_stock, rtol=1e-12, atol=1e-12)
    for a, b in zip(grads, grads_stock):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_float64_fused_pair_and_gated_norm_compute_what_stock_computes(device):
    transformers = pytest.importorskip("transformers")
    norm = _randomise(LlamaRMSNorm(64, eps=1e-6)).to(device=device, dtype=F64)
    patched = copy.deepcopy(norm)
    normkit.patch(patched)
    x, residual = (torch.randn(6, 64, dtype=F64, generator=torch.Generator().manual_seed(s)).to(device) for s in (1, 2))
    y, h = decoder.add_norm(patched, x, residual)
    torch.testing.assert_close(h, residual + x, rtol=0, atol=0)
    torch.testing.assert_close(y, norm(residual + x), rtol=1e-12, atol=1e-12)

    gated = transformers.models.qwen3_next.modeling_qwen3_next.Qwen3NextRMSNormGated
    stock, patched = _stock_and_patched(_randomise(gated(64, eps=1e-6)).to(device=device, dtype=F64))
    gate = torch.randn(6, 64, dtype=F64, generator=torch.Generator().manual_seed(3)).to(device)
    y_stock, grads_stock = _outputs_and_grads(stock, [x, gate], x)
    y, grads = _outputs_and_grads(patched, [x, gate], x)
    torch.testing.assert_close(y, y_stock, rtol=1e-12, atol=1e-12)
    for a, b in zip(grads, grads_stock):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_decoder_layer_with_renamed_arguments_is_not_fused(device):
    """Recognition ignores local names, but callers pass a layer's arguments by keyword: a layer whose
    code is Llama's with `attention_mask` called `mask` must not run the fused forward (which would
    take `mask=` into **kwargs and attend without the mask)."""
    transformers = pytest.importorskip("transformers")
    from tests.test_fuse_residual import _model

    class RenamedDecoderLayer(transformers.models.llama.modeling_llama.LlamaDecoderLayer):
        def forward(self, hidden_states, mask=None, position_ids=None, cache=None, use_cache=False,
                    position_embeddings=None, **kwargs):
            residual = hidden_states
            hidden_states = self.input_layernorm(hidden_states)
            hidden_states, _ = self.self_attn(
                hidden_states=hidden_states, attention_mask=mask, position_ids=position_ids, cache=cache,
                use_cache=use_cache, position_embeddings=position_embeddings, **kwargs)
            hidden_states = residual + hidden_states
            residual = hidden_states
            hidden_states = self.post_attention_layernorm(hidden_states)
            hidden_states = self.mlp(hidden_states)
            hidden_states = residual + hidden_states
            return hidden_states

    model = _model("Llama", device=device)
    model.model.layers[0].__class__ = RenamedDecoderLayer
    stock = copy.deepcopy(model)
    with pytest.warns(UserWarning, match="RenamedDecoderLayer at 'model.layers.0'"):
        report = normkit.patch(model, fuse_residual=True)
    assert report.fused == {"LlamaDecoderLayer": ["model.layers.1"]}
    hidden_states = torch.randn(1, 6, 64, generator=torch.Generator().manual_seed(4)).to(device)
    position_embeddings = model.model.rotary_emb(hidden_states, position_ids=torch.arange(6, device=device)[None])
    mask = torch.full((6, 6), float("-inf"), device=device).triu(1)[None, None]
    with torch.no_grad():
        y, y_stock = (m.model.layers[0](hidden_states, mask=mask, position_embeddings=position_embeddings)
                      for m in (model, stock))
    torch.testing.assert_close(y, y_stock, rtol=1e-5, atol=1e-5)


@pytest.mark.filterwarnings("ignore:normkit.patch left")
def test_hub_layers_run_the_class_recipe_or_its_own_forward(device):
    """`kernels.use_kernel_forward_from_hub("RMSNorm")` is public: a model's own norm may carry the name
    with another forward. The hub layer runs what `normkit.patch` recognises in the class (Olmo2's
    rounding: a bf16 output beside a float32 weight), and an unknown forward as it is."""
    kernels = pytest.importorskip("kernels")
    pytest.importorskip("transformers")
    from tests.test_hub import _kernelize

    @kernels.use_kernel_forward_from_hub("RMSNorm")
    class HubOlmo2RMSNorm(Olmo2RMSNorm):
        pass

    @kernels.use_kernel_forward_from_hub("RMSNorm")
    class HubDoubledRMSNorm(LlamaRMSNorm):
        def forward(self, hidden_states):
            return 2 * super().forward(hidden_states)

    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(5)).to(device=device, dtype=torch.bfloat16)
    for cls in (HubOlmo2RMSNorm, HubDoubledRMSNorm):
        stock = _randomise(cls(64, eps=1e-6)).to(device)
        kernelized, patched = _kernelize(copy.deepcopy(stock), device), copy.deepcopy(stock)
        normkit.patch(patched)
        y, y_patched, y_stock = kernelized(x), patched(x), stock(x)
        assert y.dtype == y_stock.dtype and torch.equal(y, y_patched)
        if cls is HubDoubledRMSNorm:  # left alone by patch too
            assert torch.equal(y, y_stock)
        else:
            assert y.dtype == torch.bfloat16


@pytest.mark.parametrize("make", [lambda: torch.nn.LayerNorm(64), lambda: torch.nn.RMSNorm(64)], ids=["layer", "rms"])
def test_torch_norms_under_autocast_compute_what_stock_computes(make, device):
    """Under torch.autocast torch runs layer_norm and rms_norm in float32 on a GPU (its "fp32" ops: a
    bf16 x gives a float32 y; on the CPU, bf16): the patched module gives y in stock's dtype, and y
    and the gradients as close to a float64 reference as that dtype allows."""
    stock, patched = _stock_and_patched(_randomise(make()).to(device))
    x, dy = _inputs((6, 64), torch.bfloat16, device)
    dy = dy.to(device)
    with torch.autocast(device, dtype=torch.bfloat16):
        y_stock, _ = _outputs_and_grads(stock, [x], dy)
        y, grads = _outputs_and_grads(patched, [x], dy)
    y_ref, grads_ref = _outputs_and_grads(copy.deepcopy(stock).double(), [x.double()], dy.double())
    assert y.dtype == y_stock.dtype
    # float32 only where both the computation (y's dtype) and the result are: dx is bf16, as x
    tol = lambda t: 1e-5 if t.dtype == y.dtype == torch.float32 else 2e-2  # noqa: E731
    torch.testing.assert_close(y.double(), y_ref, rtol=tol(y), atol=tol(y))
    for a, b in zip(grads, grads_ref):
        torch.testing.assert_close(a.double(), b, rtol=tol(a), atol=tol(a))


def test_patched_torch_norms_compile_fullgraph_under_autocast():
    """The dispatcher question is answered outside Dynamo's trace: no graph break under autocast."""
    model = torch.nn.Sequential(torch.nn.RMSNorm(8), torch.nn.LayerNorm(8))
    stock = copy.deepcopy(model)
    normkit.patch(model)
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    x = torch.randn(3, 8, dtype=torch.bfloat16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y, y_stock = compiled(x), stock(x)
    assert y.dtype == y_stock.dtype
    torch.testing.assert_close(y.double(), y_stock.double(), rtol=2e-2, atol=2e-2)
