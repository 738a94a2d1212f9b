"""`normkit.patch(model, fuse_residual=True)`: decoder layers whose residual add runs inside the next
norm (normkit/integrations/decoder.py), compared with stock transformers on tiny models from configs.

Each family is checked in eager mode (loss and every gradient equal to stock within test_patch's
bounds) with the fused calls counted; one family per template also under torch.compile(fullgraph=True).
"""

import copy
import functools
import importlib
import io
import logging
import warnings

import pytest
import torch

import normkit
from normkit import functional
from normkit.integrations import decoder
from tests.test_patch import ULPS, _hf_loss, _hf_model, _loss_and_grads, assert_trains_like

transformers = pytest.importorskip("transformers")

# family: (norms switched, layers fused). Two layers; one fused pair a layer (OLMo2, post-norm: none)
FAMILIES = {"Llama": (5, 2), "Mistral": (5, 2), "Qwen2": (5, 2), "Qwen3": (9, 2), "Gemma": (5, 2),
            "Gemma2": (9, 2), "Gemma3": (13, 2), "Phi3": (5, 2), "Olmo2": (9, 0)}
COMPILED = ["Llama", "Phi3", "Gemma3"]  # one per fused template (pre_norm, phi3, sandwich)

# _hf_model looks these names up on transformers: Gemma3's text model takes the text config, and
# Phi3's default pad token (32000) does not fit the tiny vocabulary
_CONFIGS = {"Gemma3": {"Gemma3Config": lambda t: t.Gemma3TextConfig},
            "Phi3": {"Phi3Config": lambda t: functools.partial(t.Phi3Config, pad_token_id=None)}}


def _model(family, dtype=torch.float32, device="cpu"):
    module = pytest.importorskip("transformers")  # the module object _hf_model will read
    with pytest.MonkeyPatch.context() as patcher:
        for name, value in _CONFIGS.get(family, {}).items():
            patcher.setattr(module, name, value(module))
        return _hf_model(family, dtype).to(device)


@pytest.fixture
def fused_calls(monkeypatch):
    """Calls of normkit.rms_norm with a residual (the fused add + norm), through run_recipe."""
    calls = []

    def counted(*args, **kwargs):
        if kwargs.get("residual") is not None:
            calls.append(kwargs["residual"].shape)
        return original(*args, **kwargs)

    original = functional.rms_norm
    monkeypatch.setattr(functional, "rms_norm", counted)
    return calls


def _patched(family, dtype=torch.float32, device="cpu"):
    model = _model(family, dtype, device)
    reference = copy.deepcopy(model)
    norms, layers = FAMILIES[family]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every norm and layer of these models is recognised
        report = normkit.patch(model, fuse_residual=True)
    assert report == norms and sum(map(len, report.fused.values())) == layers and report.left_alone == {}
    return model, reference


def _assert_eager_like(model, reference, tokens):
    """test_patch's bounds for patched fp32 models (assert_trains_like without the compiled step)."""
    loss, grads = _loss_and_grads(model, _hf_loss, tokens)
    loss_ref, grads_ref = _loss_and_grads(reference, _hf_loss, tokens)
    torch.testing.assert_close(loss, loss_ref, rtol=1e-5, atol=1e-6)
    for (name, _), a, b in zip(model.named_parameters(), grads, grads_ref):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=name)


def _tokens(device):
    return torch.randint(128, (2, 8), generator=torch.Generator().manual_seed(1)).to(device)


@pytest.mark.parametrize("family", FAMILIES)
def test_fused_layers_train_like_stock(family, device, fused_calls):
    model, reference = _patched(family, device=device)
    layer = model.model.layers[0]
    assert isinstance(layer, type(reference.model.layers[0])) and type(layer).__name__.endswith("DecoderLayer")
    _assert_eager_like(model, reference, _tokens(device))
    assert len(fused_calls) == FAMILIES[family][1]  # one fused add + norm a layer, one forward


@pytest.mark.parametrize("compile_ops", ["opaque", "triton"])
@pytest.mark.parametrize("family", COMPILED)
def test_fused_layers_under_torch_compile_fullgraph(family, compile_ops, device, fused_calls):
    """Trains as stock, compiled, with the norms traced as the opaque ops or as their kernels (normkit.compiled)."""
    from normkit import ops

    mode = ops.get_compile_ops()
    ops.set_compile_ops(compile_ops)
    torch._dynamo.reset()
    try:
        model, reference = _patched(family, device=device)
        counted = []
        assert_trains_like(model, reference, device, before_reference=lambda: counted.append(len(fused_calls)))
        assert counted == [FAMILIES[family][1]]
    finally:
        ops.set_compile_ops(mode)
        torch._dynamo.reset()


@pytest.mark.parametrize("family", ["Llama", "Gemma2"])
def test_fused_layers_in_bf16(family, device, fused_calls):
    """h = x + residual stays fp32 inside the norm (stock rounds it to bf16 first): test_patch's bf16 bound."""
    model, reference = _patched(family, torch.bfloat16, device)
    loss, grads = _loss_and_grads(model, _hf_loss, _tokens(device))
    loss_ref, _ = _loss_and_grads(reference, _hf_loss, _tokens(device))
    torch.testing.assert_close(loss, loss_ref, rtol=2e-2, atol=2e-2)
    assert len(fused_calls) == 2 and all(g.dtype == torch.bfloat16 and g.isfinite().all() for g in grads)


@pytest.mark.parametrize("module_name,class_name,center", [
    ("llama", "LlamaRMSNorm", 1.0), ("olmo2", "Olmo2RMSNorm", 1.0), ("gemma", "GemmaRMSNorm", 0.1)])
def test_add_norm_matches_float64(module_name, class_name, center, device):
    """One fused pair against the stock add + norm in float64: h and y within 16-bit rounding, and
    the gradients of x, residual and weight (through both outputs, as in a layer)."""
    cls = getattr(importlib.import_module(f"transformers.models.{module_name}.modeling_{module_name}"), class_name)
    norm = cls(64, eps=1e-6)
    with torch.no_grad():
        norm.weight.normal_(center, 0.2, generator=torch.Generator().manual_seed(0))
    reference = copy.deepcopy(norm).double().to(device)
    norm = norm.to(device=device, dtype=torch.bfloat16)
    assert normkit.patch(norm) == 1
    g = torch.Generator().manual_seed(2)
    x, residual, dy, dh = (torch.randn(6, 64, generator=g, dtype=torch.float64).to(device) for _ in range(4))
    inputs = [t.to(torch.bfloat16).requires_grad_() for t in (x, residual)]
    y, h = decoder.add_norm(norm, *inputs)
    inputs_ref = [t.detach().double().requires_grad_() for t in inputs]
    h_ref = inputs_ref[1] + inputs_ref[0]
    y_ref = reference(h_ref)
    assert (y.dtype, h.dtype) == (torch.bfloat16, torch.bfloat16)
    ulp = 2.0 ** -7  # bf16's relative spacing; y is rounded twice in Llama's recipe, truncated on CPU (ULPS)
    for out, ref in ((h, h_ref), (y, y_ref)):
        torch.testing.assert_close(out.double(), ref.detach(), rtol=(ULPS[device] + 1) * ulp, atol=1e-6)
    torch.autograd.backward((y, h), (dy.to(torch.bfloat16), dh.to(torch.bfloat16)))
    torch.autograd.backward((y_ref, h_ref), (dy, dh))
    for a, b in ((inputs[0], inputs_ref[0]), (inputs[1], inputs_ref[1]), (norm.weight, reference.weight)):
        torch.testing.assert_close(a.grad.double(), b.grad, rtol=2e-2, atol=5e-2)


class ChangedDecoderLayer(transformers.models.llama.modeling_llama.LlamaDecoderLayer):
    """A subclass with its own forward: not recognised."""

    def forward(self, hidden_states, **kwargs):
        return 0.5 * super().forward(hidden_states, **kwargs)


def test_unknown_decoder_layers_are_left_alone_and_named(device, fused_calls, caplog):
    model = _model("Llama", device=device)
    model.model.layers[1].__class__ = ChangedDecoderLayer
    reference = copy.deepcopy(model)
    with caplog.at_level(logging.INFO, logger="normkit"), pytest.warns(UserWarning, match="left 1 module") as warned:
        report = normkit.patch(model, fuse_residual=True)
    reason = "decoder layer forward not recognised, residual adds not fused"
    assert report == 5 and report.fused == {"LlamaDecoderLayer": ["model.layers.0"]}
    assert report.left_alone == {("ChangedDecoderLayer", reason): ["model.layers.1"]}
    assert f"ChangedDecoderLayer at 'model.layers.1': {reason}" in str(warned[0].message)
    assert any(r.levelname == "WARNING" and "ChangedDecoderLayer at 'model.layers.1'" in r.getMessage()
               for r in caplog.records)
    records = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert ("INFO", "normkit.patch: 1 LlamaDecoderLayer layer(s) now add the residual inside "
                    "post_attention_layernorm: 'model.layers.0'") in records
    assert type(model.model.layers[1]) is ChangedDecoderLayer
    _assert_eager_like(model, reference, _tokens(device))
    assert len(fused_calls) == 1


def test_layers_whose_norms_stay_stock_are_left_alone(device, fused_calls):
    """rms_norm=False keeps the norms stock, so no pair has a recipe to fuse into; a later call fuses."""
    model = _model("Qwen2", device=device)
    with pytest.warns(UserWarning, match="left 2 module") as record:
        report = normkit.patch(model, rms_norm=False, fuse_residual=True)
    assert report == 0 and report.fused == {}
    reason = "post_attention_layernorm (Qwen2RMSNorm) runs no normkit RMSNorm recipe, residual adds not fused"
    assert f"Qwen2DecoderLayer at 'model.layers.0', 'model.layers.1': {reason}" in str(record[0].message)
    _loss_and_grads(model, _hf_loss, _tokens(device))
    assert fused_calls == []
    report = normkit.patch(model, fuse_residual=True)
    assert report == 5 and report.fused == {"Qwen2DecoderLayer": ["model.layers.0", "model.layers.1"]}
    _loss_and_grads(model, _hf_loss, _tokens(device))
    assert len(fused_calls) == 2


def test_post_norm_layers_have_nothing_to_fuse(caplog):
    model = _model("Olmo2")
    with caplog.at_level(logging.INFO, logger="normkit"):
        report = normkit.patch(model, fuse_residual=True)
    assert report.fused == {} and report.left_alone == {}
    assert any("2 Olmo2DecoderLayer layer(s) are post-norm" in r.getMessage() for r in caplog.records)


def test_norm_with_hooks_runs_unfused(device, fused_calls):
    """A hook on a fused pair's norm still sees the norm's input and output: that pair runs stock."""
    model, reference = _patched("Llama", device=device)
    seen = []
    model.model.layers[0].post_attention_layernorm.register_forward_hook(lambda m, args, out: seen.append(out))
    _assert_eager_like(model, reference, _tokens(device))
    assert len(seen) == 1 and len(fused_calls) == 1


def test_fused_model_pickles_repeats_and_checkpoints(device, fused_calls):
    model, reference = _patched("Llama", device=device)
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    for clone in (torch.load(buffer, weights_only=False), copy.deepcopy(model)):
        assert [type(m) for m in clone.modules()] == [type(m) for m in model.modules()]
    again = normkit.patch(model, fuse_residual=True)
    assert again == 0 and again.fused == {}
    assert "normkit=pre_norm" in repr(model.model.layers[0])
    for m in (model, reference):  # the checkpoint wrapper wraps the fused forward too
        # (transformers 5.25 renamed gradient_checkpointing_enable)
        (getattr(m, "activation_checkpointing_enable", None) or m.gradient_checkpointing_enable)()
    model.train(), reference.train()
    _assert_eager_like(model, reference, _tokens(device))
    assert len(fused_calls) == 4  # forward, then the recompute in backward


def _cache(out) -> dict:
    """The cache a forward returned, as the next step takes it (transformers 5.25: `cache`; before: `past_key_values`)."""
    return {"cache": out.cache} if hasattr(out, "cache") else {"past_key_values": out.past_key_values}


def test_generation_with_a_cache_matches_stock(device):
    model, reference = _patched("Qwen3", device=device)
    tokens = _tokens(device)
    with torch.no_grad():
        out = model(input_ids=tokens, use_cache=True)
        out_ref = reference(input_ids=tokens, use_cache=True)
        step = model(input_ids=tokens[:, :1], **_cache(out))
        step_ref = reference(input_ids=tokens[:, :1], **_cache(out_ref))
    torch.testing.assert_close(out.logits, out_ref.logits, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(step.logits, step_ref.logits, rtol=1e-5, atol=1e-5)


def test_a_layer_takes_the_cache_under_its_old_name(device):
    """transformers' layers rename past_key_values= to cache= (@deprecate_kwarg); the fused ones too."""
    model, reference = _patched("Llama", device=device)
    hidden_states = torch.randn(2, 8, 64, generator=torch.Generator().manual_seed(3)).to(device)
    position_embeddings = model.model.rotary_emb(hidden_states, position_ids=torch.arange(8, device=device)[None])
    outputs = []
    for layers in (model.model.layers, reference.model.layers):
        cache = transformers.DynamicCache(config=model.config)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # the stock layer's deprecation notice
            outputs.append(layers[0](hidden_states, position_embeddings=position_embeddings, past_key_values=cache))
        assert cache.get_seq_length() == 8
    torch.testing.assert_close(outputs[0], outputs[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_fuse_residual_must_be_a_bool(value):
    with pytest.raises(TypeError, match=f"fuse_residual must be a bool .*got {type(value).__name__}"):
        normkit.patch(torch.nn.Linear(2, 2), fuse_residual=value)


@pytest.mark.parametrize("module_name,layout", [
    ("llama", "pre_norm"), ("mistral", "pre_norm"), ("qwen2", "pre_norm"), ("qwen3", "pre_norm"), ("gemma", "pre_norm"),
    ("phi3", "phi3"), ("gemma2", "sandwich"), ("gemma3", "sandwich"), ("olmo2", "post_norm")])
def test_transformers_layers_match_one_template(module_name, layout):
    assert len({decoder.hf.canonical(source) for _, source in decoder.TEMPLATES}) == len(decoder.TEMPLATES)
    module = importlib.import_module(f"transformers.models.{module_name}.modeling_{module_name}")
    classes = [c for name, c in vars(module).items() if name.endswith("DecoderLayer") and isinstance(c, type)]
    assert [decoder.layout_for_class(c).name for c in classes] == [layout]


def test_the_cache_keyword_of_older_transformers_is_recognised_and_passed_on():
    """transformers before 5.25 names the attention's cache `past_key_values` (5.25: `cache`, the old
    name still accepted by a decorator). A layer written the older way matches the same template, and
    its fused forward hands the cache to the attention under that older keyword."""
    import textwrap

    from normkit.integrations import decoder

    older = textwrap.dedent(decoder._PRE_NORM).replace('@deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")\n',
                                                       "").replace("cache", "past_key_values")
    older = older.replace("use_past_key_values", "use_cache")  # (only the cache itself was renamed)
    class Unpack:  # annotations only
        __class_getitem__ = classmethod(lambda cls, item: item)

    namespace = {"torch": torch, "Cache": object, "Unpack": Unpack, "TransformersKwargs": dict}
    import linecache

    linecache.cache["<older_llama_layer>"] = (len(older), None, older.splitlines(True), "<older_llama_layer>")
    exec(compile(older, "<older_llama_layer>", "exec"), namespace)  # (linecache: inspect.getsource reads it)
    seen = {}

    class OlderDecoderLayer(torch.nn.Module):
        forward = namespace["forward"]

    layout = decoder.layout_for_class(OlderDecoderLayer)
    assert layout is not None and layout.name == "pre_norm" and layout.cache_name == "past_key_values"
    assert decoder.layout_for_class(type("NewerDecoderLayer", (torch.nn.Module,),
                                         {"forward": decoder._pre_norm_forward})) is None  # not a template

    class Attention(torch.nn.Module):
        def forward(self, hidden_states, past_key_values=None, **kwargs):
            seen["cache"] = past_key_values
            return hidden_states, None

    layer = OlderDecoderLayer()
    layer.input_layernorm = layer.post_attention_layernorm = torch.nn.Identity()
    layer.self_attn, layer.mlp = Attention(), torch.nn.Identity()
    fused = type("OlderDecoderLayer", (OlderDecoderLayer,), {"_normkit_kind": layout})
    marker = object()
    layer.__class__ = fused
    decoder._pre_norm_forward(layer, torch.ones(2, 4), past_key_values=marker)
    assert seen["cache"] is marker
