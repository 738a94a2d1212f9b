"""Layers for the Hugging Face `kernels` hub: `kernels.kernelize` runs a model's norms on normkit.

transformers marks its norm classes with `@use_kernel_forward_from_hub(name)`; a kernel mapping
names a layer class for that name, and `kernelize` binds the layer's `forward` to each module of
the model (`module.forward = MethodType(layer.forward, module)`). So `self` in these forwards is the
model's own module, a LlamaRMSNorm say: the layers read its `weight` and epsilon and hold nothing.
`kernels` rejects layers with an `__init__` or members beyond `has_backward` / `can_torch_compile`,
so each forward looks up the `hf.Recipe` of the module's class, as `normkit.patch` recognises it: a hub
name does not fix the code (any model may mark its own norm "RMSNorm"), and a forward normkit does
not recognise runs as it is (logged once per class on the "normkit" logger).

    layer                name in transformers 5.25    forward of those classes (`hf.TEMPLATES`)
    RMSNorm              "RMSNorm" (132 classes)      Llama's: weight * x̂.to(x.dtype), `variance_epsilon`
    RMSNormZeroCentered  "RMSNormZeroCentered"        Gemma's: (x̂ * (1 + weight)).to(x.dtype), `eps`
                         (Qwen3.5, Qwen3.5-MoE)
    RMSNormGated         "RMSNormGated" (9 classes:   Qwen3-Next's (weight * x̂.to(x.dtype)) * silu(gate.float())
                         6 silu, 3 sigmoid)           and one other rounding; sigmoid gates (Kimi Linear, ...)
                                                      run their own forward

Inputs normkit does not take (as for `normkit.patch`) run the module's own forward. The packaged
repository that `kernels` loads is `hub/normkit` at the repository root; docs/hub.md has the mapping.
"""

import logging
from typing import Dict, Optional

import torch

from . import hf
from .patch import run_gated_recipe, run_recipe

logger = logging.getLogger("normkit")
_RECIPES: Dict[type, Optional[hf.Recipe]] = {}  # per class, filled by _recognised


@torch.compiler.assume_constant_result  # run, not traced: Dynamo cannot trace inspect.getsource
def _recognised(cls: type) -> bool:
    if cls not in _RECIPES:  # (a class normkit.patch switched: the recipe of the class it came from)
        _RECIPES[cls] = hf.recipe_for_class(getattr(cls, "_normkit_original", cls))
        if _RECIPES[cls] is None:
            logger.warning("normkit hub layer: %s's forward is not one normkit reproduces exactly: it runs "
                           "its own", cls.__name__)
    return _RECIPES[cls] is not None


def _recipe(module: torch.nn.Module, gated: bool) -> Optional[hf.Recipe]:
    """The recipe `normkit.patch` finds in `module`'s class, if it has what it reads and takes a gate as asked."""
    # a hub name does not fix the code: "RMSNormGated" names two roundings and sigmoid gates, and any model
    # may mark its own norm "RMSNorm" (kernels.use_kernel_forward_from_hub is public)
    recipe = _RECIPES[type(module)] if _recognised(type(module)) else None
    if recipe is None or recipe.gated != gated or recipe.check_attributes(module) is not None:
        return None
    return recipe


def _forward(module: torch.nn.Module, hidden_states: torch.Tensor) -> torch.Tensor:
    # kernelize set the instance's forward, not the class's: the class's is the stock one
    original, recipe = type(module).forward, _recipe(module, gated=False)
    if recipe is None:
        return original(module, hidden_states)
    return run_recipe(module, hidden_states, recipe, original)


class RMSNorm(torch.nn.Module):
    """Llama-family RMSNorm (`casting_mode="llama"`, out dtype = promote(weight, x)) on normkit."""

    weight: torch.Tensor
    variance_epsilon: float

    has_backward = True
    can_torch_compile = True  # normkit's ops are torch.library custom ops with fake impls

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return _forward(self, hidden_states)


class RMSNormZeroCentered(torch.nn.Module):
    """Gemma-style RMSNorm, y = x̂ · (1 + weight) rounded once to x's dtype, on normkit."""

    weight: torch.Tensor
    eps: float

    has_backward = True
    can_torch_compile = True

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return _forward(self, hidden_states)


def _gated_forward(module: torch.nn.Module, hidden_states: torch.Tensor, gate) -> torch.Tensor:
    original, recipe = type(module).forward, _recipe(module, gated=True)
    if recipe is None:
        return original(module, hidden_states, gate)
    return run_gated_recipe(module, hidden_states, gate, recipe, original)


class RMSNormGated(torch.nn.Module):
    """Gated RMSNorm, y = norm(x) · silu(gate) cast to x's dtype (Qwen3-Next's), on normkit; without a
    gate, or with a sigmoid one, the module's own forward runs."""

    weight: torch.Tensor
    variance_epsilon: float
    activation: str

    has_backward = True
    can_torch_compile = True

    def forward(self, hidden_states: torch.Tensor, gate: Optional[torch.Tensor] = None) -> torch.Tensor:
        return _gated_forward(self, hidden_states, gate)


__all__ = ["RMSNorm", "RMSNormZeroCentered", "RMSNormGated"]
