"""Shared by the feature tests: the float64 reference (plain autograd, independent of
`normkit.reference`), the flag-combination `Case` and its inputs."""

import dataclasses
from typing import Optional

import torch

from normkit._runtime import interpret

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
_FINEST_FIRST = [torch.float64, torch.float32, torch.float16, torch.bfloat16]


def _coarsest(*dtypes):
    """The least precise of the given dtypes (None ignored): the tolerance a result is held to."""
    return max((d for d in dtypes if d is not None), key=_FINEST_FIRST.index)


# ----------------------------------------------------------------------------- float64 reference
def _reference(x, weight, bias, residual, dy, dresidual_out=None, *, rms, eps, weight_offset=0.0):
    """Returns y, h, ĥ and the gradients [dx, dweight, dbias, dresidual], all float64.

    dresidual_out (prenorm) is the gradient arriving on h = residual_out."""
    leaves = [None if t is None else t.detach().double().cpu().requires_grad_()
              for t in (x, weight, bias, residual)]
    x64, w64, b64, r64 = leaves
    h = x64 if r64 is None else x64 + r64
    centered = h if rms else h - h.mean(-1, keepdim=True)
    h_hat = centered * torch.rsqrt(centered.square().mean(-1, keepdim=True) + eps)
    y = h_hat
    if w64 is not None:
        y = y * (w64 + weight_offset)
    if b64 is not None:
        y = y + b64
    outputs, grads = [y], [dy.double().cpu()]
    if dresidual_out is not None:
        outputs.append(h)
        grads.append(dresidual_out.double().cpu())
    torch.autograd.backward(outputs, grads)
    return y.detach(), h.detach(), h_hat.detach(), [None if t is None else t.grad for t in leaves]


def _assert_rounded_sum(residual_out, x, residual, dtype):
    """residual_out == x + residual added in fp32 and rounded to `dtype`.

    Triton's interpreter (triton 3.6) casts fp32 → bf16 by truncation, not round-to-nearest-even
    as compiled kernels do, so under it either neighbour of the fp32 sum is accepted for bf16."""
    exact = x.float() + residual.float()
    nearest = exact.to(dtype)
    ok = residual_out == nearest
    if interpret() and dtype == torch.bfloat16:
        truncated = (exact.view(torch.int32) & ~0xFFFF).view(torch.float32).to(dtype)
        ok |= residual_out == truncated
    assert ok.all(), f"residual_out: {(~ok).sum().item()} elements are not x + residual rounded to {dtype}"


# ----------------------------------------------------------------------------- the case matrix
@dataclasses.dataclass(frozen=True)
class Case:
    norm: str  # "rms" | "ln"
    dtype: str  # x's dtype
    weight: bool = False
    bias: bool = False
    residual: Optional[str] = None  # None, "same" (x's dtype) or "fp32"
    prenorm: bool = False
    offset: bool = False  # weight_offset = 1.0 (Gemma's 1 + w)
    mixed: bool = False  # weight and bias in float32 while x is 16-bit
    out: Optional[str] = None  # out_dtype
    rd: Optional[str] = None  # residual_dtype
    heads: bool = False  # per-head (H, D) weight/bias with x (B, S, H, D)

    _FLAGS = {"w": ("weight", True), "b": ("bias", True), "res": ("residual", "same"),
              "res32": ("residual", "fp32"), "pre": ("prenorm", True), "off": ("offset", True),
              "mixed": ("mixed", True), "heads": ("heads", True)}

    @classmethod
    def parse(cls, spec: str) -> "Case":
        """'rms bf16 w res pre out=fp32' → Case(norm='rms', dtype='bf16', weight=True, ...)."""
        norm, dtype, *tokens = spec.split()
        fields = {}
        for token in tokens:
            key, _, value = token.partition("=")
            fields.update([cls._FLAGS[token]] if not value else [(key, value)])
        return cls(norm, dtype, **fields)

    def is_valid(self) -> bool:
        """Combinations that mean something (prenorm needs a residual, weight_offset a weight, …)."""
        return not ((self.prenorm and not self.residual) or (self.rd and not self.residual)
                    or (self.offset and (self.norm != "rms" or not self.weight))
                    or (self.mixed and (self.dtype == "fp32" or not (self.weight or self.bias)))
                    or (self.residual == "fp32" and self.dtype == "fp32")
                    or (self.heads and not (self.weight or self.bias)))

    def h_dtype(self) -> str:
        """dtype of h = x + residual as saved for the backward (residual_out's)."""
        return self.rd or ("fp32" if self.residual == "fp32" else self.dtype)


def _make_case_inputs(case: Case, shape, device, seed=0):
    """x, weight, bias, residual in the case's dtypes; dy in y's dtype, dresidual_out in residual_out's."""
    g = torch.Generator().manual_seed(seed)
    rand = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)  # noqa: E731
    x_dtype = DTYPES[case.dtype]
    param_dtype = torch.float32 if case.mixed else x_dtype
    param_shape = shape[-2:] if case.heads else shape[-1:]
    x = rand(*shape)
    weight = bias = residual = dresidual_out = None
    if case.weight:  # around 1 (around 0 with weight_offset = 1: the effective scale is w + 1)
        weight = (0.0 if case.offset else 1.0) + 0.5 * rand(*param_shape)
    if case.bias:
        bias = 0.5 * rand(*param_shape)
    if case.residual:
        residual = rand(*shape).to(torch.float32 if case.residual == "fp32" else x_dtype)
    dy = 0.5 * x + rand(*shape)
    if case.prenorm:
        dresidual_out = rand(*shape).to(device=device, dtype=DTYPES[case.h_dtype()])
    cast = lambda t, dtype: None if t is None else t.to(device=device, dtype=dtype)  # noqa: E731
    y_dtype = DTYPES[case.out] if case.out else x_dtype
    return (cast(x, x_dtype), cast(weight, param_dtype), cast(bias, param_dtype),
            None if residual is None else residual.to(device), cast(dy, y_dtype), dresidual_out)
