"""Autograd-aware `rms_norm` and `layer_norm`, with fused residual add, bias and weight offset.

One autograd.Function serves both norms. It works on 2-D (M, N) views (reshapes stay outside
it, so torch.compile sees stable ranks), saves h (x, or residual_out = x + residual), the
parameters and the float32 statistics, and calls the backward op with them. It never launches
kernels itself: that is `normkit.ops`.
"""

from typing import Optional, Tuple, Union

import torch

from . import ops, validation

Tensor = torch.Tensor


def _h_is_rounded(x: Tensor, residual: Optional[Tensor], residual_dtype: Optional[torch.dtype]) -> bool:
    """Whether residual_out (when there is one) holds h = x (+ residual) rounded to fewer bits than
    the fp32 (fp64 for fp64 x) value the forward normalised."""
    stored = residual_dtype or (residual.dtype if residual is not None else x.dtype)
    if residual is None and stored == x.dtype:
        return False  # no residual_out: h is x itself
    return stored.itemsize < (8 if x.dtype == torch.float64 else 4)


class NormFunction(torch.autograd.Function):
    """(x, weight, bias, residual) → y, or (y, residual_out) with prenorm; gradients for all four."""

    @staticmethod
    def forward(ctx, x, weight, bias, residual, eps, weight_offset, is_rms_norm, out_dtype,
                residual_dtype, prenorm, x_hat_dtype):
        # LayerNorm whose h = x + residual is stored rounded (residual_out narrower than the fp32 /
        # fp64 sum the statistics came from): the backward recomputes mean and rstd from the saved
        # h. Applying the exact statistics to the rounded h would turn the rounding of a
        # (near-)constant row into x̂ = noise / sqrt(eps) (tests/test_properties.py).
        recompute = not is_rms_norm and _h_is_rounded(x, residual, residual_dtype)
        out, residual_out, mean, rstd = ops.norm_fwd(
            x, weight, bias, residual, eps=eps, weight_offset=weight_offset, is_rms_norm=is_rms_norm,
            store_stats=not recompute, out_dtype=out_dtype, residual_dtype=residual_dtype,
            x_hat_dtype=x_hat_dtype)
        h = x if residual_out is None else residual_out
        ctx.save_for_backward(h, weight, mean, rstd)
        # one attribute (host time): eps, weight_offset, is_rms_norm, x_hat_dtype, bias shape and
        # dtype, x's and the residual's dtypes
        ctx.meta = (eps, weight_offset, is_rms_norm, x_hat_dtype, None if bias is None else bias.shape,
                    None if bias is None else bias.dtype, x.dtype, None if residual is None else residual.dtype)
        if prenorm:
            return out, h
        return out

    @staticmethod
    def backward(ctx, dout, dresidual_out=None):
        h, weight, mean, rstd = ctx.saved_tensors
        eps, weight_offset, is_rms_norm, x_hat_dtype, bias_shape, bias_dtype, x_dtype, residual_dtype = ctx.meta
        dh, dweight, dbias = ops.norm_bwd(
            h, weight, dout, mean=mean, rstd=rstd, dresidual_out=dresidual_out, bias_shape=bias_shape,
            bias_dtype=bias_dtype, eps=eps, weight_offset=weight_offset, is_rms_norm=is_rms_norm,
            x_hat_dtype=x_hat_dtype)
        # h = x + residual: both receive dh (the same tensor when the dtypes agree).
        dx = dh if dh.dtype == x_dtype else dh.to(x_dtype)
        dresidual = None if residual_dtype is None else dh if dh.dtype == residual_dtype else dh.to(residual_dtype)
        needs = ctx.needs_input_grad
        return (dx if needs[0] else None, dweight if needs[1] else None, dbias if needs[2] else None,
                dresidual if needs[3] else None, None, None, None, None, None, None, None)


# Function.apply without its Python wrapper (host time): the wrapper only unwraps dead functorch
# wrappers (done here for the four tensor arguments) and handles functorch transforms and
# torch.compile, for which `_norm_apply` still calls NormFunction.apply itself.
_apply_c = super(torch.autograd.Function, NormFunction).apply
_transforms_active = torch._C._are_functorch_transforms_active
_unwrap_if_dead = torch._C._functorch.unwrap_if_dead


def _norm_apply(x, weight, bias, residual, *rest):
    if torch.compiler.is_compiling() or _transforms_active():  # (dynamo folds is_compiling first)
        return NormFunction.apply(x, weight, bias, residual, *rest)
    return _apply_c(_unwrap_if_dead(x), None if weight is None else _unwrap_if_dead(weight),
                    None if bias is None else _unwrap_if_dead(bias),
                    None if residual is None else _unwrap_if_dead(residual), *rest)


def _apply(x, weight, bias, residual, eps, weight_offset, is_rms_norm, prenorm, out_dtype, residual_dtype,
           casting_mode="fp32"):
    eps = validation.check_fwd(x, weight, bias, residual, eps=eps, weight_offset=weight_offset,
                               out_dtype=out_dtype, residual_dtype=residual_dtype)
    validation.check_casting_mode(casting_mode)
    if prenorm and residual is None:
        raise ValueError("prenorm=True returns (y, residual_out) and needs a residual, got residual=None")
    flat = x.dim() == 2  # already (M, N): no reshape in, no view out (host time)
    n = x.shape[-1]
    outputs = _norm_apply(
        x if flat else x.reshape(-1, n), weight, bias,
        None if residual is None else residual if flat else residual.reshape(-1, n), eps,
        float(weight_offset), is_rms_norm, out_dtype, residual_dtype, bool(prenorm),
        x.dtype if casting_mode == "llama" else None)
    if flat:
        return outputs
    if prenorm:
        return outputs[0].view(x.shape), outputs[1].view(x.shape)
    return outputs.view(x.shape)


def rms_norm(x: Tensor, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
             residual: Optional[Tensor] = None, *, eps: float = 1e-6, prenorm: bool = False,
             weight_offset: float = 0.0, out_dtype: Optional[torch.dtype] = None,
             residual_dtype: Optional[torch.dtype] = None, casting_mode: str = "fp32"
             ) -> Union[Tensor, Tuple[Tensor, Tensor]]:
    """RMSNorm over the last dimension, differentiable in x, weight, bias and residual.

    h = x + residual (added in fp32), y = h / sqrt(mean(h², -1) + eps) · (weight + weight_offset)
    + bias, in out_dtype (default x's). weight/bias are (N,) or per-head (H, N) for x of shape
    (..., H, N). With prenorm=True returns (y, residual_out), residual_out = h in residual_dtype
    (default residual's); otherwise y (gradients still reach the residual).

    casting_mode "fp32" (default) computes y in fp32 and rounds once; "llama" rounds x̂ to x's
    dtype before scaling by the weight, as Hugging Face's Llama-family RMSNorm does (Liger's
    "llama" mode; its "gemma" mode is "fp32" with weight_offset=1).
    """
    return _apply(x, weight, bias, residual, eps, weight_offset, True, prenorm, out_dtype, residual_dtype,
                  casting_mode)


def layer_norm(x: Tensor, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               residual: Optional[Tensor] = None, *, eps: float = 1e-5, prenorm: bool = False,
               out_dtype: Optional[torch.dtype] = None, residual_dtype: Optional[torch.dtype] = None,
               casting_mode: str = "fp32") -> Union[Tensor, Tuple[Tensor, Tensor]]:
    """LayerNorm over the last dimension: y = (h − mean)·rstd·weight + bias with h = x + residual.

    Same conventions as `rms_norm` (dtypes, per-head parameters, prenorm, casting_mode).
    """
    return _apply(x, weight, bias, residual, eps, 0.0, False, prenorm, out_dtype, residual_dtype,
                  casting_mode)
