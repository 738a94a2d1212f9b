"""Hugging Face-style RMSNorm classes: which forwards normkit reproduces, and how.

A class is recognised by its name (ends with "RMSNorm", or "RMSNormGated") and by its code: the source of its
`forward` (and `_norm`, which some forwards call) must be, up to formatting, comments, type
annotations, local variable names and the name of the epsilon attribute (`eps` or
`variance_epsilon`: transformers renames it between releases), one of the `TEMPLATES` below, copied
from transformers. Anything else — another renamed attribute, a subclass that overrides `forward`, a forward that rounds
differently — is not recognised, so `normkit.patch` leaves it alone and says so. transformers
itself is never imported here.

The families differ in where they round (x̂ = x·rstd, computed in fp32 by all of them):

    llama   weight * x̂.to(x.dtype)            → casting_mode="llama", out_dtype = promote(weight, x)
    fp32    (x̂ * weight).to(x.dtype)           → casting_mode="fp32",  out_dtype = x.dtype
    gemma   (x̂ * (1 + weight.float())).to(x.dtype) → "fp32" with weight_offset=1.0

The gated norms, `forward(self, hidden_states, gate)`, multiply by ACT2FN[self.activation](gate.float())
and cast to x's dtype; normkit's gate is silu, so the module's `activation` must be "silu":

    llama_gated  (weight * x̂.to(x.dtype)) * silu(gate.float())  → "llama" with gate, out_dtype = x.dtype
    fp32_gated   (weight.float() * x̂) * silu(gate.float())      → "fp32" with gate
"""

import ast
import dataclasses
import functools
import inspect
import textwrap
from typing import Optional, Tuple

import torch


@dataclasses.dataclass(frozen=True)
class Recipe:
    """How to call `normkit.rms_norm` for one family of forwards."""

    name: str
    eps_attr: str = "eps"           # the attribute the forward reads eps from (found in its code)
    casting_mode: str = "fp32"      # "llama": x̂ rounded to x's dtype before the weight
    weight_offset: float = 0.0      # Gemma's (1 + weight)
    scale_flag: Optional[str] = None  # weight used only when this attribute is true (Gemma3n's with_scale)
    gated: bool = False             # forward(self, hidden_states, gate): y = norm · silu(gate)

    def weight(self, module: torch.nn.Module) -> Optional[torch.Tensor]:
        if self.scale_flag is not None and not getattr(module, self.scale_flag):
            return None
        return module.weight

    def out_dtype(self, x: torch.Tensor, weight: Optional[torch.Tensor]) -> torch.dtype:
        if self.casting_mode == "llama" and weight is not None and not self.gated:  # (gated: .to(input_dtype))
            return torch.promote_types(weight.dtype, x.dtype)  # weight * x̂.to(x.dtype) promotes
        return x.dtype

    def check_attributes(self, module: torch.nn.Module) -> Optional[str]:
        """None when the module has what the forward reads, else what is missing."""
        eps = getattr(module, self.eps_attr, None)
        if isinstance(eps, bool) or not isinstance(eps, (int, float)):
            return f"needs a float attribute {self.eps_attr!r}"
        if self.scale_flag is not None and not isinstance(getattr(module, self.scale_flag, None), bool):
            return f"needs a bool attribute {self.scale_flag!r}"
        if self.gated and getattr(module, "activation", None) != "silu":  # Kimi, Bailing, GLM-5: sigmoid
            return f"gate activation {getattr(module, 'activation', None)!r} (normkit's gate is silu)"
        weight = getattr(module, "weight", None)
        if self.weight(module) is not None and not (isinstance(weight, torch.nn.Parameter) and weight.dim() == 1):
            return "needs a 1-D Parameter 'weight'"
        return None


LLAMA = Recipe("llama", casting_mode="llama")
FP32 = Recipe("fp32")
GEMMA = Recipe("gemma", weight_offset=1.0)
GEMMA3N = Recipe("fp32", scale_flag="with_scale")
LLAMA_GATED = Recipe("llama_gated", casting_mode="llama", gated=True)
FP32_GATED = Recipe("fp32_gated", gated=True)
EPS_NAMES = ("eps", "variance_epsilon")  # what transformers' norms call epsilon

# (recipe, forward source, _norm source or None), as written in transformers 5.x.
_RSQRT_NORM = """
def _norm(self, x):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
"""
TEMPLATES = [
    (LLAMA, """
def forward(self, hidden_states):  # Llama, Mistral, Qwen2, Qwen3 (incl. q_norm/k_norm), Phi3, ...
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
    return self.weight * hidden_states.to(input_dtype)
""", None),
    (LLAMA, """
def forward(self, x):  # Llama4
    output = self._norm(x.float()).type_as(x)
    return output * self.weight
""", _RSQRT_NORM),
    (FP32, """
def forward(self, hidden_states):  # Olmo2, Olmo3, GptOss, ... (the weight multiply in fp32)
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
    return (self.weight * hidden_states).to(input_dtype)
""", None),
    (FP32, """
def forward(self, hidden_states):  # Helium, NemotronH
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
    return (self.weight.to(torch.float32) * hidden_states).to(input_dtype)
""", None),
    (FP32, """
def forward(self, x):  # Moshi
    output = self._norm(x.float())
    output = output * self.weight.float()
    return output.type_as(x)
""", _RSQRT_NORM),
    (GEMMA, """
def forward(self, x):  # Gemma, Gemma2, Gemma3, Qwen3Next, Qwen3.5, ...
    output = self._norm(x.float())
    output = output * (1.0 + self.weight.float())
    return output.type_as(x)
""", _RSQRT_NORM),
    (GEMMA3N, """
def forward(self, hidden_states):  # Gemma3n, Gemma4
    normed_output = self._norm(hidden_states.float())
    if self.with_scale:
        normed_output = normed_output * self.weight.float()
    return normed_output.type_as(hidden_states)
""", """
def _norm(self, hidden_states):
    mean_squared = hidden_states.pow(2).mean(-1, keepdim=True) + self.eps
    return hidden_states * torch.pow(mean_squared, -0.5)
"""),
    (LLAMA_GATED, """
def forward(self, hidden_states, gate):  # Qwen3Next, Qwen3.5, Qwen3.5-MoE, OlmoHybrid (…RMSNormGated)
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
    hidden_states = self.weight * hidden_states.to(input_dtype)
    hidden_states = hidden_states * ACT2FN[self.activation](gate.to(torch.float32))
    return hidden_states.to(input_dtype)
""", None),
    (FP32_GATED, """
def forward(self, hidden_states, gate=None):  # LaraMini (silu); KimiLinear, BailingHybrid: sigmoid, left alone
    input_dtype = hidden_states.dtype
    hidden_states = hidden_states.to(torch.float32)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
    hidden_states = self.weight.to(torch.float32) * hidden_states
    hidden_states = hidden_states * ACT2FN[self.activation](gate.to(torch.float32))
    return hidden_states.to(input_dtype)
""", None),
]


class _RenameLocals(ast.NodeTransformer):
    """Arguments and assigned names → v0, v1, … in order of appearance; drops annotations."""

    def __init__(self, local_names):
        self.local_names, self.renamed = local_names, {}

    def _rename(self, name: str) -> str:
        if name not in self.local_names:
            return name  # a global such as `torch`
        return self.renamed.setdefault(name, f"v{len(self.renamed)}")

    def visit_Name(self, node):
        node.id = self._rename(node.id)
        return node

    def visit_arg(self, node):
        node.arg, node.annotation = self._rename(node.arg), None
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if node.attr in EPS_NAMES:
            node.attr = "EPS"
        return node


def canonical(source: str) -> str:
    """The AST of one function, without name, decorators, docstring, annotations or local names."""
    function = ast.parse(textwrap.dedent(source)).body[0]
    if not isinstance(function, ast.FunctionDef):
        raise ValueError("not a plain function definition (a lambda, an alias, ...)")
    function.name, function.decorator_list, function.returns = "f", [], None
    first = function.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        function.body = function.body[1:] or [ast.Pass()]
    local_names = {node.arg for node in ast.walk(function.args) if isinstance(node, ast.arg)}
    local_names |= {node.id for node in ast.walk(function)
                    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    return ast.dump(_RenameLocals(local_names).visit(function))


def _key(forward_source: str, norm_source: Optional[str]) -> Tuple[str, Optional[str]]:
    return canonical(forward_source), None if norm_source is None else canonical(norm_source)


_KNOWN = {_key(forward, norm): recipe for recipe, forward, norm in TEMPLATES}


def eps_attribute(*sources: Optional[str]) -> Optional[str]:
    """The one name of `EPS_NAMES` the sources read as an attribute, or None (none, or both)."""
    found = {node.attr for source in sources if source is not None
             for node in ast.walk(ast.parse(textwrap.dedent(source)))
             if isinstance(node, ast.Attribute) and node.attr in EPS_NAMES}
    return found.pop() if len(found) == 1 else None


@functools.lru_cache(maxsize=None)
def recipe_for_class(cls: type) -> Optional[Recipe]:
    """The recipe whose template `cls.forward` (and `cls._norm`) match, reading epsilon from the
    attribute that code names, or None."""
    try:
        forward = inspect.getsource(cls.forward)
        norm = inspect.getsource(cls._norm) if hasattr(cls, "_norm") else None
        recipe, eps_attr = _KNOWN.get(_key(forward, norm)), eps_attribute(forward, norm)
    except (OSError, TypeError, SyntaxError, ValueError):  # no source (built in, exec'd, a lambda, ...)
        return None
    return None if recipe is None or eps_attr is None else dataclasses.replace(recipe, eps_attr=eps_attr)
