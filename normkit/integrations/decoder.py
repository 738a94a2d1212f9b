"""Hugging Face decoder layers whose residual add runs inside the next norm: `patch(model, fuse_residual=True)`.

In a transformers decoder layer a residual add is often followed by a norm:

    hidden_states = residual + hidden_states                       # one element-wise kernel
    residual = hidden_states
    hidden_states = self.post_attention_layernorm(hidden_states)   # then the norm's

`normkit.rms_norm(x, weight, residual=residual, prenorm=True)` does both in one kernel, forward and
backward, and returns (y, h) with h = residual + x. A fused layer runs a copy of its forward in which
such a pair reads

    hidden_states, residual = add_norm(self.post_attention_layernorm, hidden_states, residual)

Recognised, as `hf.py` recognises norms: a class named "…DecoderLayer" whose `forward` is, up to
formatting, comments, annotations, decorators and local names (not its arguments': callers pass them by
keyword), one of the `TEMPLATES` below (copied from transformers 5.25). The pairs in each, per layer:

    template   families (60+ more share the code)   residual add → the norm it feeds (fused)
    pre_norm   Llama, Mistral, Qwen2, Qwen3, Gemma   residual + self_attn → post_attention_layernorm
    phi3       Phi3                                  residual + resid_attn_dropout → post_attention_layernorm
    sandwich   Gemma2, Gemma3                        residual + post_attention_layernorm → pre_feedforward_layernorm
    post_norm  OLMo2 (Olmo3, Exaone4)                none: each add ends a block (norm, then add)

Not fused: the layer's last add (residual + mlp), whose norm is the next layer's `input_layernorm`
(or, after the last layer, the model's `norm`; OLMo2's only add → norm pair is that one). The
model's own loop, `for layer in self.layers: hidden_states = layer(hidden_states, …)` then
`self.norm(hidden_states)`, hands one summed tensor from layer to layer; fusing that add needs both
addends to cross the boundary unsummed. Each way to do it costs more than the kernel it saves:
rewriting every model's forward (40+ lines per family: masks, caches, rotary embeddings, changing
every release); a layer running the next layer's norm and leaving the result on it (state between
modules that gradient checkpointing's recompute, hooks on a layer's output and pipeline stages do
not see); or a tensor subclass holding the pair (every op, hook and output recorder that touches
the layer's output would have to unwrap it, in eager and in compiled graphs).

A layer is fused only when the norm of each of its pairs runs one of normkit's recipes (`patch`
switches the norms first); otherwise, or for an unknown forward, it is left alone and named. The
fused pair computes what the patched norm computes on h, except that the kernel normalises h in
fp32 before storing it in the residual's dtype, where the stock add rounds it first: equal up to
rounding in fp32 models, within 16-bit rounding in bf16/fp16 ones. A norm with hooks, and inputs
normkit does not take, run the stock add and then the norm module.
"""

import dataclasses
import functools
import inspect
import logging
from collections import defaultdict
from typing import Callable, Dict, List, Optional, Tuple

import torch

from . import hf
from .patch import _patched_class, _shown, run_recipe

logger = logging.getLogger("normkit")


@dataclasses.dataclass(frozen=True)
class Layout:
    """One known decoder-layer forward: the norms that follow a residual add, and the forward fusing them."""

    name: str
    norms: Tuple[str, ...]           # attributes of the norms fed by a residual add
    forward: Optional[Callable] = None  # the fused forward; None: no pair to fuse
    cache_name: str = "cache"        # the attention's cache keyword ("past_key_values" before transformers 5.25)


def add_norm(norm: torch.nn.Module, x: torch.Tensor, residual: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """(norm(residual + x), residual + x), the add inside normkit's kernel when `norm` runs a recipe."""
    recipe = getattr(type(norm), "_normkit_kind", None)
    hooked = norm._forward_hooks or norm._forward_pre_hooks or norm._backward_hooks or norm._backward_pre_hooks
    if isinstance(recipe, hf.Recipe) and not hooked:
        return run_recipe(norm, x, recipe, type(norm)._normkit_original.forward, residual=residual)
    hidden_states = residual + x  # hooks see the norm's input and output, as in the stock layer
    return norm(hidden_states), hidden_states


def _cache_argument(layer, cache) -> Dict[str, object]:
    """The cache as the layer's attention takes it: under the keyword its transformers release uses."""
    return {type(layer)._normkit_kind.cache_name: cache}


def _cache(cache, kwargs):
    """The templates' @deprecate_kwarg("past_key_values", new_name="cache"): the old name still works."""
    legacy = kwargs.pop("past_key_values", None)
    return legacy if cache is None else cache


# ----------------------------------------------------------------------------- templates and fused forwards
_PRE_NORM = '''
@deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
def forward(
    self,
    hidden_states: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    position_ids: torch.LongTensor | None = None,
    cache: Cache | None = None,
    use_cache: bool | None = False,
    position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
    **kwargs: Unpack[TransformersKwargs],
) -> torch.Tensor:  # Llama, Mistral, Qwen2, Qwen3, Gemma, ...
    residual = hidden_states
    hidden_states = self.input_layernorm(hidden_states)
    # Self Attention
    hidden_states, _ = self.self_attn(
        hidden_states=hidden_states,
        attention_mask=attention_mask,
        position_ids=position_ids,
        cache=cache,
        use_cache=use_cache,
        position_embeddings=position_embeddings,
        **kwargs,
    )
    hidden_states = residual + hidden_states

    # Fully Connected
    residual = hidden_states
    hidden_states = self.post_attention_layernorm(hidden_states)
    hidden_states = self.mlp(hidden_states)
    hidden_states = residual + hidden_states
    return hidden_states
'''


def _pre_norm_forward(self, hidden_states, attention_mask=None, position_ids=None, cache=None, use_cache=False,
                      position_embeddings=None, **kwargs):
    cache = _cache(cache, kwargs)
    residual = hidden_states
    hidden_states = self.input_layernorm(hidden_states)
    hidden_states, _ = self.self_attn(
        hidden_states=hidden_states, attention_mask=attention_mask, position_ids=position_ids,
        use_cache=use_cache, position_embeddings=position_embeddings, **_cache_argument(self, cache), **kwargs)
    hidden_states, residual = add_norm(self.post_attention_layernorm, hidden_states, residual)
    hidden_states = self.mlp(hidden_states)
    return residual + hidden_states


_PHI3 = '''
@deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
def forward(
    self,
    hidden_states: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    position_ids: torch.LongTensor | None = None,
    cache: Cache | None = None,
    use_cache: bool | None = False,
    position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
    **kwargs: Unpack[FlashAttentionKwargs],
) -> torch.Tensor:  # Phi3
    residual = hidden_states
    hidden_states = self.input_layernorm(hidden_states)

    hidden_states, self_attn_weights = self.self_attn(
        hidden_states=hidden_states,
        attention_mask=attention_mask,
        position_ids=position_ids,
        cache=cache,
        use_cache=use_cache,
        position_embeddings=position_embeddings,
        **kwargs,
    )
    hidden_states = residual + self.resid_attn_dropout(hidden_states)  # main diff with Llama

    residual = hidden_states
    hidden_states = self.post_attention_layernorm(hidden_states)
    hidden_states = self.mlp(hidden_states)
    hidden_states = residual + self.resid_mlp_dropout(hidden_states)  # main diff with Llama
    return hidden_states
'''


def _phi3_forward(self, hidden_states, attention_mask=None, position_ids=None, cache=None, use_cache=False,
                  position_embeddings=None, **kwargs):
    cache = _cache(cache, kwargs)
    residual = hidden_states
    hidden_states = self.input_layernorm(hidden_states)
    hidden_states, _ = self.self_attn(
        hidden_states=hidden_states, attention_mask=attention_mask, position_ids=position_ids,
        use_cache=use_cache, position_embeddings=position_embeddings, **_cache_argument(self, cache), **kwargs)
    hidden_states, residual = add_norm(self.post_attention_layernorm, self.resid_attn_dropout(hidden_states),
                                       residual)
    hidden_states = self.mlp(hidden_states)
    return residual + self.resid_mlp_dropout(hidden_states)


_SANDWICH = '''
@deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
def forward(
    self,
    hidden_states: torch.Tensor,
    position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
    attention_mask: torch.Tensor | None = None,
    position_ids: torch.LongTensor | None = None,
    cache: Cache | None = None,
    **kwargs,
) -> torch.Tensor:  # Gemma2, Gemma3
    residual = hidden_states

    hidden_states = self.input_layernorm(hidden_states)

    # Self Attention
    hidden_states, _ = self.self_attn(
        hidden_states=hidden_states,
        position_embeddings=position_embeddings,
        attention_mask=attention_mask,
        position_ids=position_ids,
        cache=cache,
        **kwargs,
    )
    hidden_states = self.post_attention_layernorm(hidden_states)
    hidden_states = residual + hidden_states

    residual = hidden_states
    hidden_states = self.pre_feedforward_layernorm(hidden_states)
    hidden_states = self.mlp(hidden_states)
    hidden_states = self.post_feedforward_layernorm(hidden_states)
    hidden_states = residual + hidden_states

    return hidden_states
'''


def _sandwich_forward(self, hidden_states, position_embeddings=None, attention_mask=None, position_ids=None,
                      cache=None, **kwargs):
    cache = _cache(cache, kwargs)
    residual = hidden_states
    hidden_states = self.input_layernorm(hidden_states)
    hidden_states, _ = self.self_attn(
        hidden_states=hidden_states, position_embeddings=position_embeddings, attention_mask=attention_mask,
        position_ids=position_ids, **_cache_argument(self, cache), **kwargs)
    hidden_states = self.post_attention_layernorm(hidden_states)
    hidden_states, residual = add_norm(self.pre_feedforward_layernorm, hidden_states, residual)
    hidden_states = self.mlp(hidden_states)
    hidden_states = self.post_feedforward_layernorm(hidden_states)
    return residual + hidden_states


_POST_NORM = '''
@deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
def forward(
    self,
    hidden_states: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    position_ids: torch.LongTensor | None = None,
    cache: Cache | None = None,
    use_cache: bool | None = False,
    position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
    **kwargs: Unpack[TransformersKwargs],
) -> torch.Tensor:  # Olmo2, Olmo3, Exaone4
    residual = hidden_states
    hidden_states, _ = self.self_attn(
        hidden_states=hidden_states,
        attention_mask=attention_mask,
        position_ids=position_ids,
        cache=cache,
        use_cache=use_cache,
        position_embeddings=position_embeddings,
        **kwargs,
    )
    hidden_states = self.post_attention_layernorm(hidden_states)
    hidden_states = residual + hidden_states

    # Fully Connected
    residual = hidden_states
    hidden_states = self.mlp(hidden_states)
    hidden_states = self.post_feedforward_layernorm(hidden_states)
    hidden_states = residual + hidden_states
    return hidden_states
'''

TEMPLATES = [
    (Layout("pre_norm", ("post_attention_layernorm",), _pre_norm_forward), _PRE_NORM),
    (Layout("phi3", ("post_attention_layernorm",), _phi3_forward), _PHI3),
    (Layout("sandwich", ("pre_feedforward_layernorm",), _sandwich_forward), _SANDWICH),
    (Layout("post_norm", ()), _POST_NORM),
]
_OLD_CACHE_NAME = "past_key_values"  # transformers before 5.25 (5.25 renamed it "cache", keeping the old one working)


def _canonical(source: str) -> str:
    """hf.canonical with the cache keyword's old name read as the new one (decorators are dropped)."""
    return hf.canonical(source.replace(_OLD_CACHE_NAME, "cache"))


_KNOWN = {_canonical(source): layout for layout, source in TEMPLATES}


def _names(forward: Callable) -> Tuple[str, ...]:
    """The names a caller can pass `forward`'s arguments by (through functools.wraps), the cache's old name as its new."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return tuple("cache" if p.name == _OLD_CACHE_NAME else p.name
                 for p in inspect.signature(forward).parameters.values() if p.kind in kinds)


@functools.lru_cache(maxsize=None)
def layout_for_class(cls: type) -> Optional[Layout]:
    """The layout whose template `cls.forward` matches (through functools.wraps wrappers), passing the
    cache to the attention under the keyword that code uses, or None."""
    try:
        source = inspect.getsource(cls.forward)
        layout = _KNOWN.get(_canonical(source))
    except (OSError, TypeError, SyntaxError, ValueError):  # no source (built in, exec'd, a lambda, ...)
        return None
    if layout is None or (layout.forward is not None and _names(cls.forward) != _names(layout.forward)):
        return None  # (the same code with renamed arguments: callers pass them by keyword, to the fused forward too)
    body = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("@"))
    return dataclasses.replace(layout, cache_name=_OLD_CACHE_NAME if f"{_OLD_CACHE_NAME}=" in body else "cache")


def _classify(module: torch.nn.Module) -> Tuple[Optional[Layout], Optional[str]]:
    """(layout, None): a known layer; (None, reason): a decoder layer left alone."""
    if "forward" in vars(module):
        return None, "forward replaced on the instance, residual adds not fused"
    layout = layout_for_class(type(module))
    if layout is None:
        return None, "decoder layer forward not recognised, residual adds not fused"
    for attr in layout.norms:
        norm = getattr(module, attr, None)
        if not isinstance(getattr(type(norm), "_normkit_kind", None), hf.Recipe) or "forward" in vars(norm):
            return None, f"{attr} ({type(norm).__name__}) runs no normkit RMSNorm recipe, residual adds not fused"
    return layout, None


def fuse(model: torch.nn.Module) -> Tuple[Dict[str, List[str]], Dict[Tuple[str, str], List[str]]]:
    """Switch `model`'s known decoder layers to their fused forward, after `patch` switched the norms.

    Returns ({class name: [module names]} fused, {(class name, reason): [module names]} left alone);
    logs one INFO line per class fused or known with nothing to fuse.
    """
    fused, left_alone, nothing = defaultdict(list), defaultdict(list), defaultdict(list)
    norms = {}  # class name → the norms its fused pairs feed, for the log
    for name, module in model.named_modules():
        cls = type(module)
        if hasattr(cls, "_normkit_original") or not cls.__name__.endswith("DecoderLayer"):
            continue  # already fused, or not a decoder layer
        name = name or "(the model itself)"
        layout, reason = _classify(module)
        if layout is None:
            left_alone[(cls.__name__, reason)].append(name)
        elif layout.forward is None:
            nothing[cls.__name__].append(name)
        else:
            fused[cls.__name__].append(name)
            norms[cls.__name__] = " and ".join(layout.norms)
            module.__class__ = _patched_class(cls, layout)
    for class_name, names in fused.items():
        logger.info("normkit.patch: %d %s layer(s) now add the residual inside %s: %s", len(names), class_name,
                    norms[class_name], _shown(names))
    for class_name, names in nothing.items():
        logger.info("normkit.patch: %d %s layer(s) are post-norm (no norm follows a residual add): nothing to "
                    "fuse: %s", len(names), class_name, _shown(names))
    return dict(fused), dict(left_alone)
