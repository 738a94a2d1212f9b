"""The norm as differentiable torch ops, for what NormFunction's kernels cannot differentiate.

- `backward_graph`: the gradients when they must themselves be differentiable (double backward,
  torch.func), with the statistics recomputed inside the graph;
- `forward_graph`: the outputs, for torch.compile under a torch.func transform or forward-mode AD
  (and Dynamo's traced autograd ops);
- `jvp`: NormFunction's forward-mode rule.

All follow `normkit.reference`'s math, in the kernels' compute dtype.
"""

from typing import Optional

import torch

from . import reference

Tensor = torch.Tensor


def heads_of(weight: Optional[Tensor], bias_shape) -> int:
    """H of per-head (H, N) parameters, 1 for (N,) ones."""
    shape = weight.shape if weight is not None else bias_shape
    return shape[0] if shape is not None and len(shape) == 2 else 1


def per_head(t: Optional[Tensor], heads: int) -> Optional[Tensor]:
    """(M, N) → (M/H, H, N), so the reference broadcasts a per-head (H, N) parameter."""
    return t if t is None or heads == 1 else t.reshape(-1, heads, t.shape[-1])


def backward_graph(h, weight, gate, dout, dresidual_out, meta):
    """(dh, dweight, dbias) from differentiable torch ops: double backward and torch.func; dgate
    as a fourth with a gate.

    The math is `reference.norm_bwd`'s, in fp32 (fp64 for fp64 h) as the kernels compute it,
    dh = rstd·(g − ĥ·mean(g·ĥ) − mean(g)) + dresidual_out with g = dout·(w + weight_offset),
    dweight = Σ_rows dout·ĥ, dbias = Σ_rows dout (dout·silu(gate) in place of dout with a gate, and
    dgate = dout·u·silu'(gate)) — with mean and rstd recomputed from the saved h inside the graph:
    their dependence on h is part of every second derivative.
    """
    eps, weight_offset, is_rms_norm, x_hat_dtype, bias_shape, bias_dtype = meta[:6]
    heads = heads_of(weight, bias_shape)
    dh, *grads = reference.norm_bwd(
        per_head(h, heads), weight, per_head(dout, heads), None, None, per_head(dresidual_out, heads), eps=eps,
        is_rms_norm=is_rms_norm, weight_offset=weight_offset, bias_dtype=bias_dtype,
        param_ndim=2 if heads > 1 else 1, x_hat_dtype=x_hat_dtype, gate=per_head(gate, heads), create_graph=True)
    if gate is not None:
        grads[2] = grads[2].reshape(h.shape)
    return (dh.reshape(h.shape), *grads)


def forward_graph(x, weight, bias, residual, gate, eps, weight_offset, is_rms_norm, out_dtype, residual_dtype,
                   x_hat_dtype):
    """NormFunction's outputs from differentiable torch ops (`reference.norm_fwd`), for torch.compile under a
    torch.func transform or forward-mode AD: Dynamo traces the Function's forward alone there, and the op inside
    it has no derivative (jvp's tangents came back zeros, grad refused)."""
    heads = heads_of(weight, None if bias is None else bias.shape)
    out, h, _, _ = reference.norm_fwd(
        per_head(x, heads), weight, bias, per_head(residual, heads), eps=eps, is_rms_norm=is_rms_norm,
        weight_offset=weight_offset, out_dtype=out_dtype, residual_dtype=residual_dtype, x_hat_dtype=x_hat_dtype,
        gate=per_head(gate, heads), create_graph=True)
    stored = residual_dtype or (residual.dtype if residual is not None else x.dtype)
    residual_out = h.reshape(x.shape) if residual is not None or stored != x.dtype else None
    return out.reshape(x.shape), residual_out, (None, None)


def jvp(h, weight, gate, x_t, weight_t, bias_t, residual_t, gate_t, meta):
    """Tangents of (y, residual_out) for tangents of (x, weight, bias, residual, gate); forward-mode AD.

    ḣ = ẋ + ṙ; u̇ = J·ḣ·(w + weight_offset) + ĥ·ẇ + ḃ, where J = ∂ĥ/∂h is the symmetric
    rstd·(I − ĥĥᵀ/N − 11ᵀ/N) (the 11ᵀ term for LayerNorm only): the backward's dx of g = ḣ.
    ĥ·ẇ uses the x̂ the weight multiplies (rounded with casting_mode "llama"). ẏ = u̇, or with a
    gate ẏ = u̇·silu(gate) + u·silu'(gate)·ġ (u as the forward rounded it).
    """
    eps, weight_offset, is_rms_norm, x_hat_dtype, bias_shape, _, _, _, out_dtype, h_is_residual_out = meta[:10]
    acc = reference.compute_dtype(h.dtype)
    heads = heads_of(weight, bias_shape)
    h_acc = per_head(h.to(acc), heads)
    tangents = [t.to(acc) for t in (x_t, residual_t) if t is not None]
    h_t = None if not tangents else tangents[0] if len(tangents) == 1 else tangents[0] + tangents[1]
    terms = []
    if h_t is not None:
        x_hat_t = reference.norm_bwd(h_acc, None, per_head(h_t, heads), eps=eps, is_rms_norm=is_rms_norm,
                                     create_graph=True)[0]
        terms.append(x_hat_t if weight is None else x_hat_t * (weight.to(acc) + weight_offset))
    if weight_t is not None:
        x_hat = reference.norm_fwd(h_acc, eps=eps, is_rms_norm=is_rms_norm, x_hat_dtype=x_hat_dtype,
                                   create_graph=True)[0]
        terms.append(x_hat * weight_t.to(acc))
    if bias_t is not None:
        terms.append(bias_t.to(acc).expand_as(h_acc))
    if gate is not None:
        gate_acc = per_head(gate.to(acc), heads)
        sigmoid = torch.sigmoid(gate_acc)  # silu = gate·σ, silu' = σ·(1 + gate·(1 − σ))
        terms = [term * (gate_acc * sigmoid) for term in terms]
        if gate_t is not None:
            u = reference.norm_fwd(h_acc, weight, eps=eps, is_rms_norm=is_rms_norm, weight_offset=weight_offset,
                                   x_hat_dtype=x_hat_dtype, create_graph=True)[0]
            u = reference.rounded(u, reference.u_dtype(weight, x_hat_dtype))
            terms.append(u * (sigmoid * (1 + gate_acc * (1 - sigmoid))) * per_head(gate_t.to(acc), heads))
    y_t = sum(terms[1:], terms[0]).reshape(h.shape).to(out_dtype)  # (jvp is called with some tangent)
    residual_out_t = None
    if h_is_residual_out:
        residual_out_t = torch.zeros_like(h) if h_t is None else h_t.to(h.dtype)
    return y_t, residual_out_t, None  # (none for the statistics)
