"""Layers for the Hugging Face `kernels` hub: `kernels.kernelize` runs a model's norms on normkit.

transformers marks its norm classes with `@use_kernel_forward_from_hub(name)`; a kernel mapping
names a layer class for that name, and `kernelize` binds the layer's `forward` to each module of
the model (`module.forward = MethodType(layer.forward, module)`). So `self` in these forwards is the
model's own module, a LlamaRMSNorm say: the layers read its `weight` and epsilon and hold nothing.
`kernels` rejects layers with an `__init__` or members beyond `has_backward` / `can_torch_compile`,
which is why each forward names its `hf.Recipe` (or, for the gated one, looks it up by class)
instead of the class storing it.

    layer                name in transformers 5.25    forward it reproduces (`hf.TEMPLATES`)
    RMSNorm              "RMSNorm" (132 classes)      Llama's: weight * x̂.to(x.dtype), `variance_epsilon`
    RMSNormZeroCentered  "RMSNormZeroCentered"        Gemma's: (x̂ * (1 + weight)).to(x.dtype), `eps`
                         (Qwen3.5, Qwen3.5-MoE)
    RMSNormGated         "RMSNormGated" (9 classes:   the class's gated recipe, as `normkit.patch` finds it:
                         6 silu, 3 sigmoid)           Qwen3-Next's (weight * x̂.to(x.dtype)) * silu(gate.float());
                                                      sigmoid gates (Kimi Linear, ...) run their own forward

Inputs normkit does not take (as for `normkit.patch`) run the module's own forward. The packaged
repository that `kernels` loads is `hub/normkit` at the repository root; docs/hub.md has the mapping.
"""

import dataclasses
from typing import Dict, Optional

import torch

from . import hf
from .patch import run_gated_recipe, run_recipe

# transformers' "RMSNorm" classes all read `variance_epsilon` (hf.LLAMA leaves the name to the code)
_LLAMA = dataclasses.replace(hf.LLAMA, eps_attr="variance_epsilon")


def _forward(module: torch.nn.Module, hidden_states: torch.Tensor, recipe: hf.Recipe) -> torch.Tensor:
    # kernelize set the instance's forward, not the class's: the class's is the stock one
    return run_recipe(module, hidden_states, recipe, type(module).forward)


class RMSNorm(torch.nn.Module):
    """Llama-family RMSNorm (`casting_mode="llama"`, out dtype = promote(weight, x)) on normkit."""

    weight: torch.Tensor
    variance_epsilon: float

    has_backward = True
    can_torch_compile = True  # normkit's ops are torch.library custom ops with fake impls

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return _forward(self, hidden_states, _LLAMA)


class RMSNormZeroCentered(torch.nn.Module):
    """Gemma-style RMSNorm, y = x̂ · (1 + weight) rounded once to x's dtype, on normkit."""

    weight: torch.Tensor
    eps: float

    has_backward = True
    can_torch_compile = True

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return _forward(self, hidden_states, hf.GEMMA)


_GATED_RECIPES: Dict[type, Optional[hf.Recipe]] = {}  # per class, filled by _recognised


@torch.compiler.assume_constant_result  # run, not traced: Dynamo cannot trace inspect.getsource
def _recognised(cls: type) -> bool:
    if cls not in _GATED_RECIPES:
        _GATED_RECIPES[cls] = hf.recipe_for_class(cls)
    return _GATED_RECIPES[cls] is not None


def _gated_forward(module: torch.nn.Module, hidden_states: torch.Tensor, gate) -> torch.Tensor:
    original = type(module).forward
    # "RMSNormGated" names two roundings and sigmoid gates too: patch()'s recognition of the class decides
    recipe = _GATED_RECIPES[type(module)] if _recognised(type(module)) else None
    if recipe is None or recipe.check_attributes(module) is not None:
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
