"""Inputs and accuracy, shared by the report and the benchmark.

Inputs are fresh random tensors: x ~ N(0, 1), weight ~ 1 + 0.25·N(0, 1) and dy = 0.5·x + N(0, 1),
so that Σ(dy·w·x), the term of dx that couples a row together, is not ~0.

Errors are relative Frobenius norms against `normkit.reference` run on float64 copies of the
inputs: ‖out − ref‖ / ‖ref‖. dx is the one exception: dx = rstd·g − x̂·rstd·mean(g·x̂) is a
difference of two terms that cancel almost exactly when N is tiny (N = 1 gives x̂² ≈ 1), so its
error is taken relative to max(‖dx_ref‖, ‖rstd·g‖), the size of the terms that were subtracted.
The reference runs in chunks of rows, so a 2-GiB bf16 input does not need 40 GiB of float64.
"""

import math
from typing import Dict, Optional, Tuple

import torch

from .. import reference

Tensor = torch.Tensor
_CHUNK_ELEMENTS = 2**25  # float64 temporaries of ≤ 256 MB each
_SUMMED = ("dweight", "dbias")  # parameter gradients: sums over all rows


def make_inputs(shape: Tuple[int, ...], dtype: torch.dtype, device, seed: int = 0,
                layout: str = "contiguous", with_weight: bool = True
                ) -> Tuple[Tensor, Optional[Tensor], Tensor]:
    """(x, weight, dy) of `shape` in `dtype`; layout "strided" gives x and dy a column stride of 2.

    x ~ N(0, 1), weight ~ 1 + 0.25·N(0, 1), dy = 0.5·x + N(0, 1); drawn in float32, then cast.
    """
    device = torch.device(device)
    gen = torch.Generator(device=device).manual_seed(seed)

    def randn(*size):
        return torch.randn(*size, generator=gen, dtype=torch.float32, device=device)

    x = randn(*shape)
    dy = (0.5 * x + randn(*shape)).to(dtype)
    x = x.to(dtype)
    if layout == "strided":
        x, dy = _strided_copy(x), _strided_copy(dy)
    weight = (1.0 + 0.25 * randn(shape[-1])).to(dtype) if with_weight else None
    return x, weight, dy


def _strided_copy(t: Tensor) -> Tensor:
    """A copy of t that is a column-stride-2 view of a buffer twice as wide."""
    buffer = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype, device=t.device)
    view = buffer[..., ::2]
    view.copy_(t)
    return view


def _flat(t: Optional[Tensor], lead: Tuple[int, ...], n: int) -> Optional[Tensor]:
    """t as (rows, *lead, N): lead is () for parameters of shape (N,), (H,) for per-head ones."""
    return None if t is None else t.reshape(-1, *lead, n)


class _Sums:
    """Running ‖out − ref‖², ‖ref‖² and ‖scale‖² of one output, over chunks."""

    def __init__(self, out: Tensor):
        self.out, self.err, self.ref, self.scale = out, 0.0, 0.0, 0.0
        self.finite = bool(torch.isfinite(out).all())

    def add(self, out: Tensor, ref: Tensor, scale: Optional[Tensor] = None) -> None:
        self.err += float((out.double() - ref).square().sum())
        self.ref += float(ref.square().sum())
        if scale is not None:
            self.scale += float(scale.square().sum())

    def relative(self) -> float:
        if not self.finite:
            return math.nan
        denominator = math.sqrt(max(self.ref, self.scale))
        if denominator == 0.0:
            return 0.0 if self.err == 0.0 else math.inf
        return math.sqrt(self.err) / denominator


def float64_errors(x: Tensor, weight: Optional[Tensor], dy: Optional[Tensor], eps: float,
                   outputs: Dict[str, Tuple[str, Tensor]], *, bias: Optional[Tensor] = None,
                   residual: Optional[Tensor] = None, dresidual_out: Optional[Tensor] = None,
                   is_rms_norm: bool = True, weight_offset: float = 0.0,
                   x_hat_dtype: Optional[torch.dtype] = None, gate: Optional[Tensor] = None) -> Dict[str, float]:
    """Relative error of each output against the float64 reference; NaN when it is not finite.

    The norm is RMSNorm (LayerNorm with `is_rms_norm=False`) of h = x (+ residual), with optional
    bias, weight_offset and x_hat_dtype (Llama-style casting: x̂ rounded to it before the weight);
    dresidual_out is the gradient arriving on residual_out; a gate makes it the gated RMSNorm.
    Parameters of shape (H, N) are per-head (x of shape (..., H, N)). `outputs` maps a label to
    (kind, tensor), kind one of "y", "residual_out", "rstd", "dx", "dweight", "dbias", "dgate".
    rstd is compared as a flat vector; dweight and dbias over all rows. dy is needed for the gradients. dx is the gradient of h, so it is also the
    kind of the gradient of the residual.
    """
    n = x.shape[-1]
    param = weight if weight is not None else bias
    lead = tuple(param.shape[:-1]) if param is not None else ()  # (H,) for per-head parameters
    x2, dy2 = _flat(x, lead, n), _flat(dy, lead, n)
    residual2, dresidual_out2, gate2 = _flat(residual, lead, n), _flat(dresidual_out, lead, n), _flat(gate, lead, n)
    w64, b64 = (None if t is None else t.double() for t in (weight, bias))
    sums = {label: (kind, _Sums(t)) for label, (kind, t) in outputs.items()}
    flat = {label: (t.reshape(-1, *lead) if kind == "rstd" else t.reshape(*lead, n) if kind in _SUMMED
                    else _flat(t, lead, n)) for label, (kind, t) in outputs.items()}
    kinds = {kind for kind, _ in outputs.values()}
    totals = {kind: torch.zeros(*lead, n, dtype=torch.float64, device=x.device) for kind in _SUMMED}
    rows = max(1, _CHUNK_ELEMENTS // (n * math.prod(lead)))
    for start in range(0, x2.shape[0], rows):
        part = slice(start, start + rows)
        chunk = lambda t: None if t is None else t[part].double()  # noqa: E731
        y_ref, h_ref, mean_ref, rstd_ref = reference.norm_fwd(
            chunk(x2), w64, b64, chunk(residual2), eps=eps, is_rms_norm=is_rms_norm,
            weight_offset=weight_offset, x_hat_dtype=x_hat_dtype, gate=chunk(gate2))
        refs = {"y": (y_ref, None), "residual_out": (h_ref, None), "rstd": (rstd_ref, None)}
        if kinds & {"dx", "dgate", *_SUMMED}:
            dys = chunk(dy2)
            dx_ref, dweight_part, dbias_part, *dgate_ref = reference.norm_bwd(
                h_ref, w64, dys, mean_ref, rstd_ref, chunk(dresidual_out2), eps=eps,
                is_rms_norm=is_rms_norm, weight_offset=weight_offset,
                bias_dtype=None if bias is None else torch.float64, param_ndim=1 + len(lead),
                x_hat_dtype=x_hat_dtype, gate=chunk(gate2))
            if dgate_ref:  # the norm's own gradient is dy·silu(gate)
                refs["dgate"] = (dgate_ref[0], None)
                dys = dys * torch.nn.functional.silu(chunk(gate2))
            g = dys * (w64 + weight_offset) if w64 is not None else dys
            refs["dx"] = (dx_ref, rstd_ref.unsqueeze(-1) * g)
            for kind, part_sum in zip(_SUMMED, (dweight_part, dbias_part)):
                if part_sum is not None:
                    totals[kind] += part_sum
        for label, (kind, acc) in sums.items():
            if kind in refs:
                ref, scale = refs[kind]
                acc.add(flat[label][part], ref, scale)
    for label, (kind, acc) in sums.items():
        if kind in totals:
            acc.add(flat[label], totals[kind])
    return {label: acc.relative() for label, (_, acc) in sums.items()}
