"""Plain-PyTorch normalization: the float64-capable reference of the tests and the CPU path.

Same math as the kernels (see `normkit.kernels`), computed in `compute_dtype`: float32 for
16/32-bit inputs, float64 for float64 inputs (tests pass float64 copies to get the reference).
Weights may be per-head: weight/bias of shape (H, N) apply to x of shape (..., H, N). A gate (x's
shape) multiplies the norm's output by silu(gate), as Qwen3-Next's gated RMSNorm does.
Like the kernels, `norm_fwd` and `norm_bwd` return values without an autograd graph (the ops'
CPU path copies them into its outputs); `create_graph=True` records one, for double backward
and torch.func (`normkit.functional`).
"""

from typing import Optional, Tuple

import torch

Tensor = torch.Tensor


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def rounded(t: Tensor, dtype: Optional[torch.dtype]) -> Tensor:
    """t rounded to `dtype` and back (Llama-style casting of x̂); unchanged for None."""
    return t if dtype is None else t.to(dtype).to(t.dtype)


def u_dtype(weight: Optional[Tensor], x_hat_dtype: Optional[torch.dtype]) -> Optional[torch.dtype]:
    """Where a gated norm rounds u = x̂·w before the gate multiplies it: nowhere (None) unless x̂ is
    rounded (Llama-style casting), then to promote(weight, x̂'s dtype) — what Hugging Face's
    `weight * x̂.to(dtype)` yields before `* silu(gate.float())` (docs/design.md#casting)."""
    if x_hat_dtype is None or weight is None:
        return x_hat_dtype
    return torch.promote_types(weight.dtype, x_hat_dtype)


def norm_fwd(x: Tensor, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
             residual: Optional[Tensor] = None, *, eps: float, is_rms_norm: bool = True,
             weight_offset: float = 0.0, out_dtype: Optional[torch.dtype] = None,
             residual_dtype: Optional[torch.dtype] = None, x_hat_dtype: Optional[torch.dtype] = None,
             gate: Optional[Tensor] = None, create_graph: bool = False
             ) -> Tuple[Tensor, Tensor, Optional[Tensor], Tensor]:
    """Returns (y, residual_out, mean, rstd) for h = x (+ residual) normalised over the last dim.

    y = ĥ·(w + weight_offset) + b with ĥ = (h − mean)·rstd (mean = 0 and None for RMSNorm),
    rstd = 1/sqrt(mean((h − mean)²) + eps). y has out_dtype (default x's); residual_out is h in
    residual_dtype (default residual's, else x's); statistics are in the compute dtype.
    x_hat_dtype rounds ĥ before the weight (Llama-style casting). With a gate (x's shape),
    y = u·silu(gate) for u = ĥ·(w + weight_offset) rounded as `u_dtype` says (no bias: the
    gated norms have none, and `validation.check_fwd` refuses one).
    """
    with torch.set_grad_enabled(create_graph and torch.is_grad_enabled()):
        return _norm_fwd(x, weight, bias, residual, eps, is_rms_norm, weight_offset, out_dtype, residual_dtype,
                         x_hat_dtype, gate)


def _stats(h: Tensor, is_rms_norm: bool, eps: float) -> Tuple[Optional[Tensor], Tensor]:
    """(mean, rstd) of h's rows; mean None for RMSNorm (its rows are not centred)."""
    mean = None if is_rms_norm else h.mean(dim=-1)
    centered = h if is_rms_norm else h - mean.unsqueeze(-1)
    return mean, torch.rsqrt(centered.square().mean(dim=-1) + eps)


def _norm_fwd(x, weight, bias, residual, eps, is_rms_norm, weight_offset, out_dtype, residual_dtype, x_hat_dtype,
              gate):
    acc = compute_dtype(x.dtype)
    h = x.to(acc) if residual is None else x.to(acc) + residual.to(acc)
    res_dtype = residual_dtype or (residual.dtype if residual is not None else x.dtype)
    mean, rstd = _stats(h, is_rms_norm, eps)
    centered = h if is_rms_norm else h - mean.unsqueeze(-1)
    y = rounded(centered * rstd.unsqueeze(-1), x_hat_dtype)
    if weight is not None:
        y = y * (weight.to(acc) + weight_offset)
    if bias is not None:
        y = y + bias.to(acc)
    if gate is not None:
        y = rounded(y, u_dtype(weight, x_hat_dtype)) * torch.nn.functional.silu(gate.to(acc))
    return y.to(out_dtype or x.dtype), h.to(res_dtype), mean, rstd


def norm_bwd(x: Tensor, weight: Optional[Tensor], dy: Tensor, mean: Optional[Tensor] = None,
             rstd: Optional[Tensor] = None, dresidual_out: Optional[Tensor] = None, *, eps: float,
             is_rms_norm: bool = True, weight_offset: float = 0.0,
             bias_dtype: Optional[torch.dtype] = None, param_ndim: Optional[int] = None,
             x_hat_dtype: Optional[torch.dtype] = None, gate: Optional[Tensor] = None,
             create_graph: bool = False) -> Tuple[Optional[Tensor], ...]:
    """Returns (dx, dweight, dbias) for the normalised input x (residual_out with a residual), and
    dgate (gate's dtype) as a fourth when a gate is given.

    dx = rstd·(g − x̂·mean(g·x̂) − mean(g)) with g = dy·(w + weight_offset) and x̂ = (x − μ)·rstd
    (the mean(g) term and μ for LayerNorm only), plus dresidual_out; dweight = Σ_rows dy·x̂,
    dbias = Σ_rows dy (when bias_dtype is given, in that dtype). Parameters have `param_ndim`
    dims (default weight's, else 1): 2 for per-head (H, N) with x of shape (..., H, N).
    rstd (and mean) None recompute them from x. dx has x's dtype, dweight weight's.
    Gated (y = u·silu(gate), u = x̂·(w + weight_offset) rounded as the forward rounds it): the norm
    receives dy·silu(gate) in place of dy, and dgate = dy·u·silu'(gate).

    With create_graph=True and rstd None the result is differentiable in x, weight, dy and
    dresidual_out: the statistics are recomputed from x inside the graph, never constants.
    """
    with torch.set_grad_enabled(create_graph and torch.is_grad_enabled()):
        return _norm_bwd(x, weight, dy, mean, rstd, dresidual_out, eps, is_rms_norm, weight_offset, bias_dtype,
                         param_ndim, x_hat_dtype, gate)


def _norm_bwd(x, weight, dy, mean, rstd, dresidual_out, eps, is_rms_norm, weight_offset, bias_dtype, param_ndim,
              x_hat_dtype, gate):
    acc = compute_dtype(x.dtype)
    xc, dyc = x.to(acc), dy.to(acc)
    if rstd is None:
        mean, rstd = _stats(xc, is_rms_norm, eps)
    rstd = rstd.to(acc).reshape(x.shape[:-1]).unsqueeze(-1)
    mu = 0.0 if is_rms_norm else mean.to(acc).reshape(x.shape[:-1]).unsqueeze(-1)
    x_hat = (xc - mu) * rstd
    dgate = None
    if gate is not None:  # y = u·silu(gate): the norm's gradient is dy·silu(gate)
        gate_c = gate.to(acc)
        sigmoid = torch.sigmoid(gate_c)  # silu = gate·σ, silu' = σ·(1 + gate·(1 − σ))
        u = rounded(x_hat, x_hat_dtype)
        u = rounded(u * (weight.to(acc) + weight_offset) if weight is not None else u, u_dtype(weight, x_hat_dtype))
        dgate = (dyc * u * sigmoid * (1 + gate_c * (1 - sigmoid))).to(gate.dtype)
        dyc = dyc * (gate_c * sigmoid)
    g = dyc * (weight.to(acc) + weight_offset) if weight is not None else dyc
    inner = g - x_hat * (g * x_hat).mean(dim=-1, keepdim=True)
    if not is_rms_norm:
        inner = inner - g.mean(dim=-1, keepdim=True)
    dx = rstd * inner
    if dresidual_out is not None:
        dx = dx + dresidual_out.to(acc)
    if param_ndim is None:
        param_ndim = weight.dim() if weight is not None else 1
    lead = tuple(range(x.dim() - param_ndim))  # per-head: sum over every dim but the last two
    rows_sum = lambda t: t.sum(dim=lead) if lead else t  # noqa: E731  (sum(dim=()) would reduce every dim)
    dweight = None
    if weight is not None:
        dweight = rows_sum(dyc * rounded(x_hat, x_hat_dtype)).to(weight.dtype)
    dbias = rows_sum(dyc).to(bias_dtype) if bias_dtype is not None else None
    if gate is not None:
        return dx.to(x.dtype), dweight, dbias, dgate
    return dx.to(x.dtype), dweight, dbias


def rms_norm_fwd(x: Tensor, weight: Optional[Tensor], eps: float) -> Tuple[Tensor, Tensor]:
    """y = x·rstd·w with rstd = 1/sqrt(mean(x²) + eps); returns (y, rstd)."""
    y, _, _, rstd = norm_fwd(x, weight, eps=eps)
    return y, rstd


def rms_norm_bwd(x: Tensor, weight: Optional[Tensor], dy: Tensor, rstd: Optional[Tensor], eps: float
                 ) -> Tuple[Tensor, Optional[Tensor]]:
    """dx = rstd·(g − x̂·mean(g·x̂)) with g = dy·w; dweight = Σ_rows dy·x̂. rstd None recomputes."""
    dx, dweight, _ = norm_bwd(x, weight, dy, None, rstd, eps=eps)
    return dx, dweight
