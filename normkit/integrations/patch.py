"""`normkit.patch(model)`: run a model's normalisation layers on normkit's kernels, in place.

Each recognised module keeps its identity, Parameters, buffers, hooks and state_dict keys: only
its class changes, to a subclass of the original that overrides `forward` (so `isinstance` with
the original class still holds, and an optimizer built before patching keeps working). For
inputs normkit does not take (an integer tensor, float64 mixed with lower precision, a weight
that only broadcasts; float64 for Hugging Face norms, which compute in float32), the patched forward
calls the original one.

Recognised (the replacement computes what the original computes, rounding included):
- `torch.nn.RMSNorm`, `torch.nn.LayerNorm` and subclasses that keep their forward
  → `normkit.RMSNorm` / `normkit.LayerNorm` semantics (the patched class subclasses those too);
- Hugging Face-style classes named "…RMSNorm" whose forward is a known one (see `hf.TEMPLATES`:
  the Llama, Olmo2 and Gemma families and a few variants);
- the gated norms named "…RMSNormGated" (Qwen3-Next, Qwen3.5, OlmoHybrid: `forward(hidden_states,
  gate)`) whose forward is a known one and whose activation is silu; a call without a gate runs the
  original forward (which, in transformers 5.25, needs one).
Other modules named "…RMSNorm"/"…RMSNormGated"/"…LayerNorm" (unknown code, a subclass with its own forward, a
forward set on the instance) are left alone and named in one warning.

With `fuse_residual=True`, known decoder layers also add their residual inside the next norm
(`decoder.py`: which layers, which pairs, and why the add between layers stays as it is).

What was switched is logged on `logging.getLogger("normkit")` (INFO: one line per class; WARNING: what
was left alone) and returned as a `PatchReport`, an int (the count) that also lists the modules.
"""

import copyreg
import functools
import logging
import warnings
from collections import defaultdict
from typing import Dict, List, Optional, Tuple, Union

import torch

from .. import functional, modules, validation
from . import hf

_TORCH_NORMS = ((torch.nn.RMSNorm, modules.RMSNorm), (torch.nn.LayerNorm, modules.LayerNorm))
_NORMKIT_MODULES = (modules.RMSNorm, modules.LayerNorm, modules.FusedAddRMSNorm)

Kind = Union[hf.Recipe, type]  # a Hugging Face recipe, or normkit.RMSNorm / normkit.LayerNorm
logger = logging.getLogger("normkit")


class PatchReport(int):
    """What `patch` did: equal to the number of modules switched (an int), plus the details.

    `switched`: {class name: [module names]} now on normkit; `left_alone`: {(class name, reason):
    [module names]} that look like norms (or decoder layers, with fuse_residual) but were kept as
    they were; `fused`: {class name: [module names]} of decoder layers fusing their residual adds.
    """

    switched: Dict[str, List[str]]
    left_alone: Dict[Tuple[str, str], List[str]]
    fused: Dict[str, List[str]]

    def __new__(cls, switched: Dict[str, List[str]], left_alone: Dict[Tuple[str, str], List[str]],
                fused: Optional[Dict[str, List[str]]] = None):
        report = super().__new__(cls, sum(len(names) for names in switched.values()))
        report.switched, report.left_alone, report.fused = switched, left_alone, fused or {}
        return report

    def __repr__(self) -> str:
        classes = ", ".join(f"{name}: {len(names)}" for name, names in self.switched.items())
        kept = sum(len(names) for names in self.left_alone.values())
        layers = ", ".join(f"{name}: {len(names)}" for name, names in self.fused.items())
        return (f"PatchReport({int(self)} switched{' (' + classes + ')' if classes else ''}, {kept} left alone"
                f"{', fused (' + layers + ')' if layers else ''})")


def patch(model: torch.nn.Module, *, rms_norm: bool = True, layer_norm: bool = True,
          fuse_residual: bool = False) -> PatchReport:
    """Replace, in place, every normalisation module of `model` that normkit reproduces exactly.

    rms_norm / layer_norm: which kinds to replace. fuse_residual: also run known decoder layers'
    residual add → RMSNorm pairs as one normkit call (decoder.py). Returns a `PatchReport`: an int
    equal to how many norm modules were replaced (0 for a model without norms; already patched
    modules are not counted again) that also lists them per class, and the fused layers. Modules
    that look like norms or decoder layers but cannot be reproduced exactly are left alone,
    reported in one `warnings.warn` and on the "normkit" logger.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    rms_norm = validation.check_bool("rms_norm", rms_norm)
    layer_norm = validation.check_bool("layer_norm", layer_norm)
    fuse_residual = validation.check_bool("fuse_residual", fuse_residual)
    switched, left_alone = defaultdict(list), defaultdict(list)
    for name, module in model.named_modules():
        if hasattr(type(module), "_normkit_original") or isinstance(module, _NORMKIT_MODULES):
            continue  # already runs on normkit
        kind, reason = _classify(module, rms_norm, layer_norm)
        if kind is not None:
            switched[type(module).__name__].append(name or "(the model itself)")
            module.__class__ = _patched_class(type(module), kind)
        elif reason is not None:
            left_alone[(type(module).__name__, reason)].append(name or "(the model itself)")
    for class_name, names in switched.items():
        logger.info("normkit.patch: %d %s module(s) now run on normkit: %s", len(names), class_name, _shown(names))
    fused = {}
    if fuse_residual:  # after the norms: a layer fuses only pairs whose norm now runs a recipe
        from . import decoder  # imported here: decoder.py builds on run_recipe and _patched_class below

        fused, layers_left_alone = decoder.fuse(model)
        left_alone.update(layers_left_alone)
    if left_alone:
        message = _left_alone_message(left_alone)
        logger.warning(message)
        warnings.warn(message, stacklevel=2)
    return PatchReport(dict(switched), dict(left_alone), fused)


def _shown(names: List[str]) -> str:
    return ", ".join(map(repr, names[:3])) + (f" (+{len(names) - 3} more)" if len(names) > 3 else "")


def _classify(module: torch.nn.Module, rms_norm: bool, layer_norm: bool) -> Tuple[Optional[Kind], Optional[str]]:
    """(kind, None): patch it; (None, reason): a norm left alone; (None, None): not a norm we handle."""
    cls = type(module)
    leaf = next(module.children(), None) is None  # "…RMSNorm" containers (norm + gate) are walked into
    is_rms = isinstance(module, torch.nn.RMSNorm) or (leaf and cls.__name__.endswith(("RMSNorm", "RMSNormGated")))
    is_layer = isinstance(module, torch.nn.LayerNorm) or (leaf and cls.__name__.endswith("LayerNorm"))
    if not ((is_rms and rms_norm) or (is_layer and layer_norm)):
        return None, None
    if "forward" in vars(module):
        return None, "forward replaced on the instance"
    for torch_class, normkit_class in _TORCH_NORMS:
        if isinstance(module, torch_class):
            if cls.forward is not torch_class.forward:
                return None, f"subclass of torch.nn.{torch_class.__name__} with its own forward"
            return normkit_class, None
    recipe = hf.recipe_for_class(cls) if is_rms else None
    if recipe is None:
        return None, "forward not recognised"
    missing = recipe.check_attributes(module)
    return (recipe, None) if missing is None else (None, missing)


def _left_alone_message(left_alone) -> str:
    parts = []
    for (class_name, reason), names in left_alone.items():
        parts.append(f"{class_name} at {_shown(names)}: {reason}")
    count = sum(len(names) for names in left_alone.values())
    return (f"normkit.patch left {count} module(s) alone, since it cannot reproduce them exactly: "
            + "; ".join(parts))


# ----------------------------------------------------------------------------- patched classes
def _runs_on_normkit(x, *params) -> bool:
    """Whether normkit takes these tensors (dtypes, devices); otherwise the original forward runs."""
    if not isinstance(x, torch.Tensor) or x.dim() == 0 or x.shape[-1] == 0:
        return False
    for t in (x,) + tuple(p for p in params if p is not None):
        if t.dtype not in validation.SUPPORTED_DTYPES or t.device != x.device:
            return False
    return not validation.mixes_float64(x, *params)


def _runs_on_recipe(x, *params) -> bool:
    """`_runs_on_normkit`, and x is not float64: Hugging Face's forwards round it to float32 first."""
    return _runs_on_normkit(x, *params) and x.dtype != torch.float64


def run_recipe(module: torch.nn.Module, x, recipe: hf.Recipe, original, residual=None):
    """`recipe` on `module`'s weight and epsilon through normkit; `original(module, x)` for inputs
    normkit does not take. With a `residual`: (y, h) for h = residual + x, added inside the norm
    (fused decoder layers, decoder.py). Shared by patched classes and the `kernels` hub layers (`hub.py`)."""
    weight = recipe.weight(module)
    if (not _runs_on_recipe(x, weight, residual) or (weight is not None and weight.shape != x.shape[-1:])
            or (residual is not None and (residual.shape != x.shape or residual.dtype != x.dtype))):
        if residual is None:
            return original(module, x)
        hidden_states = residual + x  # the stock add, then the stock norm
        return original(module, hidden_states), hidden_states
    return functional.rms_norm(x, weight, residual=residual, prenorm=residual is not None,
                               eps=getattr(module, recipe.eps_attr), casting_mode=recipe.casting_mode,
                               weight_offset=recipe.weight_offset, out_dtype=recipe.out_dtype(x, weight))


def run_gated_recipe(module: torch.nn.Module, x, gate, recipe: hf.Recipe, original):
    """A gated `recipe` (`hf.Recipe.gated`): y = norm(x)·silu(gate) through normkit; `original(module,
    x, gate)` without a gate, or for inputs normkit does not take."""
    weight = recipe.weight(module)
    if (gate is None or not _runs_on_recipe(x, weight, gate) or gate.shape != x.shape
            or (weight is not None and weight.shape != x.shape[-1:])):
        return original(module, x, gate)
    return functional.rms_norm(x, weight, gate=gate, eps=getattr(module, recipe.eps_attr),
                               casting_mode=recipe.casting_mode, weight_offset=recipe.weight_offset,
                               out_dtype=recipe.out_dtype(x, weight))


def _hf_forward(self, x):
    return run_recipe(self, x, self._normkit_kind, self._normkit_original.forward)


def _hf_gated_forward(self, hidden_states, gate=None):
    return run_gated_recipe(self, hidden_states, gate, self._normkit_kind, self._normkit_original.forward)


def _torch_forward(self, x):
    if not _runs_on_normkit(x, self.weight, getattr(self, "bias", None)):
        return self._normkit_original.forward(self, x)
    return self._normkit_kind.forward(self, x)  # (under autocast: y in stock's dtype, modules.py)


def _extra_repr(self) -> str:
    original = self._normkit_original.extra_repr(self)
    label = "fp32" if isinstance(self._normkit_kind, type) else self._normkit_kind.name
    return f"{original}, normkit={label}" if original else f"normkit={label}"


def _reduce_ex(self, protocol):
    """Pickle (torch.save(model), copy.deepcopy) through the original class, which is importable."""
    reduced = object.__reduce_ex__(self, protocol)
    if reduced[0] is copyreg.__newobj__:
        return (_new_patched, (self._normkit_original, self._normkit_kind)) + tuple(reduced[2:])
    return reduced


def _new_patched(original: type, kind: Kind):
    cls = _patched_class(original, kind)
    return cls.__new__(cls)


@functools.lru_cache(maxsize=None)
def _patched_class(original: type, kind: Kind) -> type:
    """`original` with normkit's forward: same name, one class per (original, kind)."""
    if isinstance(kind, hf.Recipe):
        bases, forward = (original,), _hf_gated_forward if kind.gated else _hf_forward
    elif not isinstance(kind, type):  # a decoder layer's layout (decoder.py): its fused forward
        bases, forward = (original,), kind.forward
    else:  # torch.nn.RMSNorm → normkit.RMSNorm; a subclass of it → (subclass, normkit.RMSNorm)
        torch_class = kind.__bases__[0]
        bases, forward = ((kind,) if original is torch_class else (original, kind)), _torch_forward
    namespace = {
        "forward": forward, "extra_repr": _extra_repr, "__reduce_ex__": _reduce_ex,
        "_normkit_original": original, "_normkit_kind": kind,
        "__module__": __name__, "__qualname__": original.__qualname__,
        "__doc__": f"{original.__qualname__} running on normkit's kernels (made by normkit.patch).",
    }
    return type(original.__name__, bases, namespace)
