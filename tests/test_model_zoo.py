"""Model zoo: `normkit.patch(model)` and `patch(model, fuse_residual=True)` on tiny causal LMs of many
transformers families, each compared with its unpatched copy in float32.

Every family is built from its config (hidden 64, 2 layers, 4 heads, vocab 128, eager attention, random
weights, norm weights moved away from their initial ones/zeros) and checked, patched against stock, on:
a training step (loss, rtol 1e-5, and every parameter's gradient, rtol 1e-4 / atol 1e-5); the same with
a left-padded attention_mask; every hidden state (output_hidden_states=True); greedy generation with a
cache (identical tokens, scores within rounding); and a training step with gradient checkpointing.
The report must switch and fuse what the table below says, each switched norm call must run normkit
(no silent fallback to the stock forward), and the norms left alone must be the ones named.

FAMILIES run by default (about a minute in all on CPU, through Triton's interpreter); EXTENDED ones (the
other families that build from the tiny config, 3 more minutes) run with NORMKIT_ZOO=all.
"""

import collections
import contextlib
import functools
import inspect
import os
import warnings
from typing import NamedTuple, Tuple

import pytest
import torch

import normkit
from normkit import functional

transformers = pytest.importorskip("transformers")
from transformers.models.auto import configuration_auto, modeling_auto  # noqa: E402 (after the skip)


class Family(NamedTuple):
    switched: int                      # norms patch() switches
    fused: int                         # decoder layers fuse_residual=True fuses (2 layers: 2 or 0)
    left_alone: Tuple[str, ...] = ()   # norm classes patch() leaves alone (and names)


# model type: what patch() does to the tiny model. 2 layers: input/post-attention norms a layer + the final
# norm (5); q/k norms add 4 (9); Gemma2/3-style sandwiches add 4 more.
FAMILIES = {
    "llama": Family(5, 2), "qwen3": Family(9, 2), "qwen2_moe": Family(5, 2), "gemma": Family(5, 2),
    "gemma2": Family(9, 2), "gemma3_text": Family(13, 2), "phi3": Family(5, 2), "hunyuan_v1_dense": Family(9, 2),
    "diffllama": Family(7, 2), "deepseek_v3": Family(9, 2), "mixtral": Family(5, 0),
    "olmo": Family(0, 0, ("OlmoLayerNorm",)), "olmo2": Family(9, 0), "exaone4": Family(9, 0),
    "cohere": Family(0, 0, ("CohereLayerNorm",)), "gpt_neox": Family(5, 0), "falcon": Family(3, 0),
    "phi": Family(3, 0), "starcoder2": Family(5, 0), "granite": Family(5, 0), "gpt_oss": Family(5, 0),
    "llama4_text": Family(5, 0, ("Llama4TextWeightlessRMSNorm",)), "qwen3_next": Family(8, 0),
    "gemma3n_text": Family(22, 0), "mistral": Family(5, 2), "qwen3_moe": Family(9, 2), "olmo3": Family(9, 0),
    "cohere2": Family(0, 0, ("Cohere2LayerNorm",)),
    "glm": Family(5, 2), "glm4": Family(9, 0), "ernie4_5": Family(5, 2), "helium": Family(5, 2),
}
EXTENDED = {  # (more Llama-style code, as mistral above, or slower to build and run)
    "apertus": Family(9, 0), "stablelm": Family(5, 0), "granitemoe": Family(5, 0),
    "qwen2": Family(5, 2), "smollm3": Family(5, 2), "seed_oss": Family(5, 2), "arcee": Family(5, 2),
    "ministral": Family(5, 2), "ministral3": Family(5, 2), "afmoe": Family(13, 0), "apertus1p5_text": Family(9, 0),
    "aria_text": Family(5, 2), "beam": Family(13, 0), "bitnet": Family(9, 2), "bloom": Family(6, 0),
    "biogpt": Family(5, 0), "cohere2_moe": Family(0, 0, ("Cohere2MoeLayerNorm",)), "cwm": Family(5, 2),
    "deepseek_v4": Family(11, 0, ("DeepseekV4UnweightedRMSNorm",)), "doge": Family(9, 0), "dots1": Family(9, 2),
    "ergo": Family(0, 0, ("ErgoRMSNorm",)), "ernie4_5_moe": Family(5, 2), "exaone": Family(5, 2),
    "exaone_moe": Family(9, 2), "flex_olmo": Family(9, 0), "flint": Family(9, 2), "glm4_moe": Family(5, 2),
    "gpt2": Family(5, 0), "gpt_bigcode": Family(5, 0), "granite_swa": Family(5, 0), "granitemoe_swa": Family(5, 0),
    "granitemoeshared": Family(5, 0), "hunyuan_v1_moe": Family(9, 2), "hy_v3": Family(9, 2),
    "hy_v4": Family(11, 0, ("HYV4UnweightedRMSNorm",)), "hyperclovax": Family(9, 0), "internlm3": Family(5, 2),
    "iquestcoder": Family(5, 2), "jais2": Family(5, 0), "kolibri1": Family(13, 0), "laguna": Family(9, 2),
    "lara_mini": Family(8, 0), "lfm2": Family(9, 0), "lfm3": Family(9, 0), "mamba": Family(3, 0),
    "mellum": Family(9, 2), "mimo_v2_flash": Family(5, 2), "minicpm5_moe": Family(5, 2), "minimax": Family(6, 0),
    "minimax_m2": Family(9, 0), "minimax_m3_vl_text": Family(9, 0), "modernbert-decoder": Family(6, 0),
    "moshi": Family(5, 0), "mpt": Family(5, 0), "nanochat": Family(0, 0, ("NanoChatRMSNorm",)),
    "nemotron": Family(0, 0, ("NemotronLayerNorm1P",)), "nemotron_h": Family(5, 0, ("NemotronHRMSNormGated",)),
    "olmo_hybrid": Family(8, 0), "olmoe": Family(9, 2), "opt": Family(5, 0), "param2moe": Family(9, 2),
    "persimmon": Family(9, 0), "phimoe": Family(5, 0), "rwkv": Family(6, 0), "sarvam_moe": Family(9, 2),
    "solar_open": Family(5, 2), "vaultgemma": Family(5, 0), "xglm": Family(5, 0),
    "falcon_mamba": Family(3, 0, ("FalconMambaWeightlessRMSNorm",)), "deepseek_v2": Family(9, 2),
    "deepseek_v32": Family(11, 2), "glm4_moe_lite": Family(9, 2), "glm_moe_dsa": Family(11, 0), "axk1": Family(10, 2),
    "sarvam_mla": Family(9, 2), "youtu": Family(9, 2), "minicpm3": Family(9, 0), "codegen": Family(3, 0),
    "gptj": Family(3, 0), "qwen3_5_text": Family(8, 0), "qwen3_5_moe_text": Family(8, 0), "jamba": Family(8, 0),
    "bamba": Family(5, 0, ("BambaRMSNormGated",)),
    "granitemoehybrid": Family(5, 0, ("GraniteMoeHybridRMSNormGated",)), "gpt_neo": Family(5, 0),
    "recurrent_gemma": Family(5, 0), "lfm2_moe": Family(7, 0),
}

# config arguments a family needs besides the common tiny ones
_MLA = dict(num_key_value_heads=4)  # multi-head latent attention: as many key heads as query heads
_LINEAR_FIRST = dict(layer_types=["linear_attention", "full_attention"])  # a hybrid's two kinds of layer
_MAMBA = dict(mamba_n_heads=4, mamba_d_head=32, mamba_n_groups=1, mamba_d_state=16)
OVERRIDES = {
    **dict.fromkeys(["deepseek_v2", "deepseek_v3", "deepseek_v32", "glm4_moe_lite", "glm_moe_dsa", "axk1", "sarvam_mla",
                     "youtu", "minicpm3"], _MLA),
    **dict.fromkeys(["qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"], _LINEAR_FIRST),
    "codegen": dict(rotary_dim=8), "gptj": dict(rotary_dim=8),  # (a 64-wide rotary embedding by default)
    "gemma3n_text": dict(layer_types=["sliding_attention", "full_attention"], num_kv_shared_layers=0, laurel_rank=8,
                         altup_num_inputs=2, hidden_size_per_layer_input=8, vocab_size_per_layer_input=128,
                         activation_sparsity_pattern=[0.0, 0.0]),
    "jamba": dict(attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2, expert_layer_offset=1),
    "bamba": dict(attn_layer_indices=[1], **_MAMBA),
    "granitemoehybrid": dict(layer_types=["mamba", "attention"], **_MAMBA),
    "gpt_neo": dict(attention_types=[[["global", "local"], 1]]),
    "recurrent_gemma": dict(block_types=["recurrent", "attention"], lru_width=64),
    "lfm2_moe": dict(layer_types=["conv", "full_attention"], num_dense_layers=1),
}
TINY = dict(  # taken by whichever config names them
    vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, head_dim=16, max_position_embeddings=64, pad_token_id=0, bos_token_id=1, eos_token_id=2,
    tie_word_embeddings=False, n_embd=64, n_layer=2, n_layers=2, n_head=4, n_heads=4, n_positions=64, n_ctx=64,
    n_inner=128, d_model=64, num_layers=2, ffn_dim=128, ffn_hidden_size=128, linear_conv_kernel_dim=4,
    num_experts=4, num_local_experts=4, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
    shared_expert_intermediate_size=32, n_shared_experts=1, first_k_dense_replace=1, n_group=1, topk_group=1,
    moe_topk=2, num_shared_expert=1,
    kv_lora_rank=16, q_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16,
    linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=16)
NORM_SUFFIXES = ("Norm", "RMSNorm", "LayerNorm", "RMSNormGated")


def build(model_type: str) -> torch.nn.Module:
    config_class = configuration_auto.CONFIG_MAPPING[model_type]
    accepted = inspect.signature(config_class.__init__).parameters
    arguments = {**TINY, **OVERRIDES.get(model_type, {})}
    config = config_class(**{name: value for name, value in arguments.items() if name in accepted})
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    model = getattr(transformers, modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[model_type])(config).float()
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():  # away from the initial ones/zeros: 1 + N(0, 0.2²), or 0.1 + … for a zero init (1 + w)
        for module in model.modules():
            if type(module).__name__.endswith(NORM_SUFFIXES) and next(module.children(), None) is None:
                for p in module.parameters(recurse=False):
                    centre = 0.1 if (p == 0).all() else 1.0
                    p.copy_(centre + 0.2 * torch.randn(p.shape, generator=g, dtype=torch.float64))
    return model


def _batch():
    """Tokens (2, 8), a left-padded attention mask (row 0: three pads) and labels ignoring the pads."""
    tokens = torch.randint(3, 128, (2, 8), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(tokens)
    mask[0, :3] = 0
    return tokens, mask, tokens.masked_fill(mask == 0, -100)


def _step(model, tokens, mask=None, labels=None):
    """(loss, {name: gradient}) of one training step; the same dropout masks in every model."""
    model.train()
    model.zero_grad(set_to_none=True)
    torch.manual_seed(5)
    loss = model(input_ids=tokens, attention_mask=mask, labels=tokens if labels is None else labels).loss
    loss.backward()
    return loss.detach(), {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


@contextlib.contextmanager
def _norm_calls(model):
    """{module name: calls} of the model's norm-like leaf modules."""
    calls, handles = collections.Counter(), []
    for name, module in model.named_modules():
        if type(module).__name__.endswith(NORM_SUFFIXES) and next(module.children(), None) is None:
            handles.append(module.register_forward_pre_hook(lambda m, args, name=name: calls.update([name])))
    try:
        yield calls
    finally:
        for handle in handles:
            handle.remove()


@contextlib.contextmanager
def _normkit_calls():
    """[whether a residual was added] for each call of normkit's kernels (rms_norm, layer_norm)."""
    calls, original = [], functional._apply

    def counted(x, weight, bias, residual, *args, **kwargs):
        calls.append(residual is not None)
        return original(x, weight, bias, residual, *args, **kwargs)

    functional._apply = counted
    try:
        yield calls
    finally:
        functional._apply = original


def _run(model, counting):
    """Every compared result of `model`, and what `counting` saw during its first training step."""
    tokens, mask, labels = _batch()
    with counting as seen:
        results = {"train": _step(model, tokens)}
    results["padded"] = _step(model, tokens, mask, labels)
    model.eval()
    with torch.no_grad():
        results["hidden"] = model(input_ids=tokens, attention_mask=mask, output_hidden_states=True).hidden_states
        generated = model.generate(tokens, attention_mask=mask, max_new_tokens=4, do_sample=False, use_cache=True,
                                   pad_token_id=0, output_scores=True, return_dict_in_generate=True)
    results["tokens"], results["scores"] = generated.sequences, generated.scores
    (getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable)()
    results["checkpointed"] = _step(model, tokens, mask, labels)
    return results, seen


@functools.lru_cache(maxsize=None)
def _stock(model_type):
    model = build(model_type)
    return _run(model, _norm_calls(model))


def _cases():
    """(model type, fuse_residual): both for families with layers to fuse; for the others only
    fuse_residual=True, which patches the same norms and also checks their layers are left as they are."""
    families = {**FAMILIES, **EXTENDED} if os.environ.get("NORMKIT_ZOO") == "all" else FAMILIES
    for model_type, family in families.items():
        for fuse in ((False, True) if family.fused else (True,)):
            yield pytest.param(model_type, fuse, id=f"{model_type}-{'fuse_residual' if fuse else 'patch'}")


@pytest.mark.parametrize("model_type,fuse", _cases())
def test_patched_family_matches_stock(model_type, fuse):
    family = {**FAMILIES, **EXTENDED}[model_type]
    expected, norm_calls = _stock(model_type)
    model = build(model_type)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the left-alone warning: its content is the report's, checked below)
        report = normkit.patch(model, fuse_residual=fuse)
    fused = sum(map(len, report.fused.values()))
    left_alone = {name for name, _ in report.left_alone if not name.endswith("DecoderLayer")}
    assert (int(report), fused, left_alone) == (family.switched, family.fused if fuse else 0, set(family.left_alone))
    results, normkit_calls = _run(model, _normkit_calls())

    switched_calls = sum(norm_calls[name] for names in report.switched.values() for name in names)
    assert len(normkit_calls) == switched_calls and sum(normkit_calls) == fused  # no stock fallback
    for step in ("train", "padded", "checkpointed"):
        (loss, grads), (loss_ref, grads_ref) = results[step], expected[step]
        torch.testing.assert_close(loss, loss_ref, rtol=1e-5, atol=1e-6, msg=lambda m, step=step: f"{step} loss: {m}")
        assert grads.keys() == grads_ref.keys()
        for name, grad in grads.items():
            torch.testing.assert_close(grad, grads_ref[name], rtol=1e-4, atol=1e-5,
                                       msg=lambda m, what=f"{step} {name}": f"{what}: {m}")
    assert len(results["hidden"]) == len(expected["hidden"])
    for i, (h, h_ref) in enumerate(zip(results["hidden"], expected["hidden"])):
        torch.testing.assert_close(h, h_ref, rtol=1e-5, atol=1e-5, msg=lambda m, i=i: f"hidden state {i}: {m}")
    assert torch.equal(results["tokens"], expected["tokens"])
    for scores, scores_ref in zip(results["scores"], expected["scores"]):
        torch.testing.assert_close(scores, scores_ref, rtol=1e-5, atol=1e-5)
