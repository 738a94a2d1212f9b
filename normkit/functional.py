"""Autograd-aware `rms_norm` and `layer_norm`, with fused residual add, bias, weight offset and a gate.

One autograd.Function serves both norms. It works on 2-D (M, N) views (reshapes stay outside
it, so torch.compile sees stable ranks), saves h (x, or residual_out = x + residual), the
parameters and the float32 statistics, and calls the backward op with them. It never launches
kernels itself: that is `normkit.ops`. When the backward must itself be differentiable (double
backward, torch.func) it is built from torch ops instead (`graphs.backward_graph`); the Function
also has a forward-mode rule (`graphs.jvp`) and a vmap rule (`_vmap`).
"""

from typing import Optional, Tuple, Union

import torch

from . import calls, graphs, ops, validation

Tensor = torch.Tensor


def _stores_stats(x: Tensor, residual: Optional[Tensor], is_rms_norm: bool,
                  residual_dtype: Optional[torch.dtype]) -> bool:
    """Whether the forward saves mean and rstd for the backward. Not for LayerNorm whose h = x +
    residual is stored rounded (residual_out narrower than the fp32 / fp64 sum the statistics came
    from): the backward recomputes them from the saved h. Applying the exact statistics to the
    rounded h would turn the rounding of a (near-)constant row into x̂ = noise / sqrt(eps)
    (tests/test_properties.py)."""
    if is_rms_norm:
        return True
    stored = residual_dtype or (residual.dtype if residual is not None else x.dtype)
    if residual is None and stored == x.dtype:
        return True  # no residual_out: h is x itself
    return stored.itemsize >= (8 if x.dtype == torch.float64 else 4)


class NormFunction(torch.autograd.Function):
    """(x, weight, bias, residual, gate) → (y, residual_out, (mean, rstd)); gradients for the five tensors.

    residual_out (None when h is x itself) is an output even when the caller drops it: what is
    saved must be an input or an output (torch.func's rule), and double backward reaches x and
    the residual through it. The statistics travel as one non-tensor output, a tuple, so autograd
    neither wraps nor differentiates them. `_apply` keeps what the caller asked for.
    """

    @staticmethod
    def forward(x, weight, bias, residual, gate, eps, weight_offset, is_rms_norm, out_dtype, residual_dtype,
                x_hat_dtype, call=None):
        if call is not None and call.plan is not None:  # a planned call (normkit.calls)
            out, residual_out, mean, rstd = call.forward(x, weight, bias, residual, gate)
            return out, residual_out, (mean, rstd)
        store_stats = _stores_stats(x, residual, is_rms_norm, residual_dtype)
        if call is None:
            out, residual_out, mean, rstd = ops.norm_fwd(
                x, weight, bias, residual, eps=eps, weight_offset=weight_offset, is_rms_norm=is_rms_norm,
                store_stats=store_stats, out_dtype=out_dtype, residual_dtype=residual_dtype, x_hat_dtype=x_hat_dtype,
                gate=gate)
        else:  # a call being planned: the launch plan it ran
            (out, residual_out, mean, rstd), call.plan = ops._run_fwd(
                x, weight, bias, residual, eps, weight_offset, is_rms_norm, store_stats, out_dtype, residual_dtype,
                x_hat_dtype, gate)
        return out, residual_out, (mean, rstd)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, weight, bias, residual, gate, eps, weight_offset, is_rms_norm, out_dtype, _, x_hat_dtype = inputs[:11]
        residual_out = output[1]
        h = x if residual_out is None else residual_out
        call = inputs[11] if len(inputs) > 11 else None
        ctx.save_for_backward(h, weight, gate, *output[2])
        if call is None:  # (a planned call never runs under forward-mode AD: no jvp to save for)
            ctx.save_for_forward(h, weight, gate)
        ctx.set_materialize_grads(False)  # an unused output's gradient stays None: no zeros to add
        # one attribute (host time): eps, weight_offset, is_rms_norm, x_hat_dtype, bias shape and
        # dtype, x's and the residual's dtypes, y's dtype, whether h is residual_out
        ctx.meta = (eps, weight_offset, is_rms_norm, x_hat_dtype, None if bias is None else bias.shape,
                    None if bias is None else bias.dtype, x.dtype, None if residual is None else residual.dtype,
                    out_dtype or x.dtype, residual_out is not None, call)

    @staticmethod
    def backward(ctx, dout, dresidual_out=None, _stats=None):
        # the torch-op form for create_graph=True, torch.func, or torch's older vmap (gradcheck's
        # batched checks, torch.autograd.functional with vectorize=True)
        graph = torch.is_grad_enabled() or _transforms_active() or _batched(dout, dresidual_out)
        return _backward(ctx, dout, dresidual_out, graph)

    @staticmethod
    def jvp(ctx, x_t, weight_t, bias_t, residual_t, gate_t, *_):
        return graphs.jvp(*ctx.saved_tensors, x_t, weight_t, bias_t, residual_t, gate_t, ctx.meta)

    @staticmethod
    def vmap(info, in_dims, x, weight, bias, residual, gate, *rest):
        return _vmap(info.batch_size, in_dims, x, weight, bias, residual, gate, rest)


def _backward(ctx, dout, dresidual_out, graph: bool):
    """NormFunction's gradients: the backward op (kernels), or with `graph` the differentiable
    torch-op form (`graphs.backward_graph`)."""
    h, weight, gate, mean, rstd = ctx.saved_tensors
    dout, dresidual_out = _values(dout), _values(dresidual_out)
    eps, weight_offset, is_rms_norm, x_hat_dtype, bias_shape, bias_dtype, x_dtype, residual_dtype = ctx.meta[:8]
    dgate = None
    if dout is None:  # only residual_out was used: y contributes nothing
        dh, dweight, dbias = dresidual_out, None, None
    elif graph:
        dh, dweight, dbias, *dgate = graphs.backward_graph(h, weight, gate, dout, dresidual_out, ctx.meta)
    # a planned call (normkit.calls); not while compiled autograd traces this backward: its launch is no op
    elif ctx.meta[10] is not None and not torch.compiler.is_compiling():
        dh, dweight, dbias, *dgate = ctx.meta[10].backward(h, weight, gate, mean, rstd, dout, dresidual_out,
                                                           bias_shape, bias_dtype, x_hat_dtype)
    else:
        dh, dweight, dbias, *dgate = ops.norm_bwd(
            h, weight, dout, mean=mean, rstd=rstd, dresidual_out=dresidual_out, bias_shape=bias_shape,
            bias_dtype=bias_dtype, eps=eps, weight_offset=weight_offset, is_rms_norm=is_rms_norm,
            x_hat_dtype=x_hat_dtype, gate=gate)
    needs = ctx.needs_input_grad
    # h = x + residual: both receive dh (the same tensor when the dtypes agree).
    dx = None if dh is None or not needs[0] else dh if dh.dtype == x_dtype else dh.to(x_dtype)
    dresidual = None if dh is None or not needs[3] else dh if dh.dtype == residual_dtype else dh.to(residual_dtype)
    return (dx, dweight if needs[1] else None, dbias if needs[2] else None, dresidual,
            dgate[0] if dgate and needs[4] else None, None, None, None, None, None, None, None)


def _values(grad: Optional[Tensor]) -> Optional[Tensor]:
    """grad, resolved where it is a negative view: autograd hands a gradient on as the caller gave it
    (`z.conj().imag`'s, torch._neg_view), and the kernels read memory, which holds the negated values.
    (Dynamo cannot trace is_neg(); a traced backward is not checked, as validation.py's inputs.)"""
    if grad is None or torch.compiler.is_compiling() or not grad.is_neg():
        return grad
    return grad.resolve_neg()


def _traces_autograd() -> bool:
    """Whether Dynamo traces torch.autograd.grad into the graph (`trace_autograd_ops`): a gradient taken with
    create_graph=True there does not differentiate an autograd.Function's backward (torch 2.13: wrong second-order
    gradients, no error), so the norm traces as `_forward_graph`'s torch ops."""
    return getattr(torch._dynamo.config, "trace_autograd_ops", False)


def _vmap(size, in_dims, x, weight, bias, residual, gate, rest):
    """NormFunction under torch.vmap: the vmapped dimension becomes more rows. When weight or
    bias is vmapped too, its B parameter sets (of H heads each) become B·H per-head parameters,
    with x's rows ordered (row, set, head) to match."""
    x_dim, weight_dim, bias_dim, residual_dim, gate_dim = in_dims[:5]

    def front(t, dim):  # the vmapped dimension first; expanded where t is not vmapped
        return None if t is None else t.movedim(dim, 0) if dim is not None else t.expand(size, *t.shape)

    x, residual, gate = front(x, x_dim), front(residual, residual_dim), front(gate, gate_dim)  # (B, M, N)
    _, m, n = x.shape
    per_set = weight_dim is not None or bias_dim is not None
    heads = 1
    if per_set:
        weight, bias = front(weight, weight_dim), front(bias, bias_dim)  # (B, N) or (B, H, N)
        heads = (weight if weight is not None else bias)[0].numel() // n
        weight, bias = (None if t is None else t.reshape(size * heads, n) for t in (weight, bias))

    def fold(t):  # (B, M, N) → rows of (M·B, N)
        if t is None or not per_set:
            return None if t is None else t.reshape(size * m, n)
        return t.reshape(size, m // heads, heads, n).transpose(0, 1).reshape(size * m, n)

    def unfold(t):  # the inverse, for (M·B, N) outputs and (M·B,) statistics
        if t is None or not per_set:
            return None if t is None else t.view(size, m, *t.shape[1:])
        tail = t.shape[1:]
        return t.reshape(m // heads, size, heads, *tail).transpose(0, 1).reshape(size, m, *tail)

    out, residual_out, (mean, rstd) = NormFunction.apply(fold(x), weight, bias, fold(residual), fold(gate),
                                                         *rest[:6])
    outputs = unfold(out), unfold(residual_out), (unfold(mean), unfold(rstd))
    return outputs, (0, None if residual_out is None else 0, (None if mean is None else 0,
                                                              None if rstd is None else 0))


class _CompiledNormFunction(NormFunction):
    """NormFunction as torch.compile traces it: Dynamo refuses an autograd.Function with a jvp and
    cannot trace the older-vmap check (no compiled graph batches that way)."""

    jvp = torch.autograd.Function.jvp

    @staticmethod
    def backward(ctx, dout, dresidual_out=None, _stats=None):
        return _backward(ctx, dout, dresidual_out, torch.is_grad_enabled() or _transforms_active())


class _CompiledNormFunctionDroppingH(_CompiledNormFunction):
    """_CompiledNormFunction for a call that drops residual_out (a residual, prenorm=False): no gradient
    reaches it, but AOTAutograd (which does not honour set_materialize_grads(False)) hands the backward a
    materialised M × N zero gradient for it. Ignored here, the zeros are dead code the compiler removes;
    read, they cost an allocation, a fill and a read of M × N that the eager call does not make."""

    @staticmethod
    def backward(ctx, dout, dresidual_out=None, _stats=None):
        return _backward(ctx, dout, None, torch.is_grad_enabled() or _transforms_active())


class _TracedNormFunction(NormFunction):
    """NormFunction as torch.jit.trace records it. TorchScript's Python op returns tensors only, so
    the statistics stay behind (the backward recomputes them); the forward calls the registered op,
    which the tracer records as one node and runs with plain sizes (traced sizes are tensors)."""

    @staticmethod
    def forward(x, weight, bias, residual, gate, eps, weight_offset, is_rms_norm, out_dtype, residual_dtype,
                x_hat_dtype, call=None):
        out, residual_out, _, _ = torch.ops.normkit.norm_fwd(
            x, weight, bias, residual, eps, weight_offset, is_rms_norm, False, out_dtype, residual_dtype, x_hat_dtype,
            gate)
        return (out,) if residual_out.dim() != 2 else (out, residual_out)  # (an empty one: not produced)

    @staticmethod
    def setup_context(ctx, inputs, output):
        NormFunction.setup_context(ctx, inputs, (output[0], output[1] if len(output) == 2 else None, (None, None)))

    jvp = torch.autograd.Function.jvp


# Function.apply without its Python wrapper (host time): the wrapper only unwraps dead functorch
# wrappers (done here for the five tensor arguments) and handles functorch transforms, for which
# `_norm_apply` still calls NormFunction.apply itself (as it calls the variants above under
# torch.compile and torch.jit.trace).
_apply_c = super(torch.autograd.Function, NormFunction).apply
_transforms_active = torch._C._are_functorch_transforms_active
_tracing_state = torch._C._get_tracing_state
_unwrap_if_dead = torch._C._functorch.unwrap_if_dead
_is_legacy_batched = torch._C._functorch.is_legacy_batchedtensor
_forward_ad = torch.autograd.forward_ad


def _batched(dout: Optional[Tensor], dresidual_out: Optional[Tensor]) -> bool:
    """Whether a gradient is batched by torch's older vmap (gradcheck's batched checks,
    torch.autograd.functional with vectorize=True), which torch.func's check does not see."""
    return ((dout is not None and _is_legacy_batched(dout))
            or (dresidual_out is not None and _is_legacy_batched(dresidual_out)))


def _needs_autograd(x, weight, bias, residual, gate) -> bool:
    """Whether the call must go through the autograd Function: grad mode with an input that requires
    grad, or forward-mode AD active (dual tensors need not require grad)."""
    if _forward_ad._current_level >= 0:
        return True
    return torch.is_grad_enabled() and (x.requires_grad or (weight is not None and weight.requires_grad)
                                        or (bias is not None and bias.requires_grad)
                                        or (residual is not None and residual.requires_grad)
                                        or (gate is not None and gate.requires_grad))


def _unwrapped(x, weight, bias, residual, gate) -> tuple:
    return (_unwrap_if_dead(x), None if weight is None else _unwrap_if_dead(weight),
            None if bias is None else _unwrap_if_dead(bias), None if residual is None else _unwrap_if_dead(residual),
            None if gate is None else _unwrap_if_dead(gate))


def _norm_apply(x, weight, bias, residual, gate, *rest, prenorm=True):
    """(y, residual_out, (mean, rstd)) for 2-D inputs; rest: NormFunction's non-tensor arguments, the
    call being planned (`normkit.calls`) or None last. prenorm=False: the caller drops residual_out."""
    if torch.compiler.is_compiling():  # (dynamo folds it first)
        if _transforms_active() or _forward_ad._current_level >= 0 or _traces_autograd():
            return graphs.forward_graph(x, weight, bias, residual, gate, *rest[:6])
        function = _CompiledNormFunction if prenorm else _CompiledNormFunctionDroppingH
        return function.apply(x, weight, bias, residual, gate, *rest)
    if _transforms_active():
        return NormFunction.apply(x, weight, bias, residual, gate, *rest)
    if _tracing_state() is not None:
        return _TracedNormFunction.apply(x, weight, bias, residual, gate, *rest)
    if not _needs_autograd(x, weight, bias, residual, gate):  # inference: the op alone (an apply costs ~10 µs)
        eps, weight_offset, is_rms_norm, out_dtype, residual_dtype, x_hat_dtype, call = rest
        (out, residual_out, _, _), planned = ops._run_fwd(x, weight, bias, residual, eps, weight_offset, is_rms_norm,
                                                          False, out_dtype, residual_dtype, x_hat_dtype, gate)
        if call is not None:
            call.plan = planned
        return out, residual_out, (None, None)
    return _apply_c(*_unwrapped(x, weight, bias, residual, gate), *rest)


def _planned(call: calls.FwdCall, x, weight, bias, residual, gate):
    """rms_norm / layer_norm's result for a planned call signature (`normkit.calls`)."""
    if not call.autograd:  # the caller's tensors as they are (any rank): the plan knows their strides
        out, residual_out, _, _ = call.forward(x, weight, bias, residual, gate)
        return (out, residual_out) if call.prenorm else out
    if call.flat:
        out, residual_out, _ = _apply_c(*_unwrapped(x, weight, bias, residual, gate), *call.rest)
        return (out, residual_out) if call.prenorm else out
    n = x.shape[-1]
    out, residual_out, _ = _apply_c(*_unwrapped(x.reshape(-1, n), weight, bias,
                                                None if residual is None else residual.reshape(-1, n),
                                                None if gate is None else gate.reshape(-1, n)), *call.rest)
    return (out.view(x.shape), residual_out.view(x.shape)) if call.prenorm else out.view(x.shape)


def _apply(x, weight, bias, residual, eps, weight_offset, is_rms_norm, prenorm, out_dtype, residual_dtype,
           casting_mode="fp32", gate=None):
    try:
        key = calls.signature(is_rms_norm, x, weight, bias, residual, gate, eps, weight_offset, prenorm, out_dtype,
                              residual_dtype, casting_mode)
        call = None if key is None else calls.CALLS.get(key)
    except (RuntimeError, TypeError):  # a tensor without strides, an unhashable argument: validation names it
        key = call = None
    if call is not None:  # this signature passed validation and launched before (docs/design.md#launch-path)
        return _planned(call, x, weight, bias, residual, gate)
    if type(x) is not Tensor and type(x) is not torch.nn.Parameter and validation._is_dtensor(x):  # each rank its rows
        from . import distributed
        return distributed.apply(_apply, x, weight, bias, residual, gate, eps, weight_offset, is_rms_norm, prenorm,
                                 out_dtype, residual_dtype, casting_mode)
    eps = validation.check_fwd(x, weight, bias, residual, eps=eps, weight_offset=weight_offset,
                               out_dtype=out_dtype, residual_dtype=residual_dtype, gate=gate)
    validation.check_casting_mode(casting_mode)
    prenorm = validation.check_bool("prenorm", prenorm)
    if prenorm and residual is None:
        raise ValueError("prenorm=True returns (y, residual_out) and needs a residual, got residual=None")
    if residual is None:  # h = x, and no residual_out is returned: no copy of x in residual_dtype (the
        residual_dtype = None  # backward would differentiate that rounded copy, not x)
    flat = x.dim() == 2  # already (M, N): no reshape in, no view out (host time)
    n = x.shape[-1]
    x2 = x if flat else x.reshape(-1, n)
    residual2 = None if residual is None else residual if flat else residual.reshape(-1, n)
    gate2 = None if gate is None else gate if flat else gate.reshape(-1, n)
    x_hat_dtype = x.dtype if casting_mode == "llama" else None
    call = None
    if key is not None and calls.plannable(weight, bias) and all(
            a is None or a.data_ptr() == b.data_ptr() for a, b in ((x, x2), (residual, residual2), (gate, gate2))):
        autograd = _needs_autograd(x, weight, bias, residual, gate)
        call = calls.FwdCall(x, residual, eps, weight_offset, is_rms_norm, out_dtype, residual_dtype, x_hat_dtype,
                             autograd and _stores_stats(x, residual, is_rms_norm, residual_dtype), autograd, prenorm)
    outputs = _norm_apply(x2, weight, bias, residual2, gate2, eps, float(weight_offset), is_rms_norm, out_dtype,
                          residual_dtype, x_hat_dtype, call, prenorm=prenorm)
    if call is not None and call.plan is not None:
        calls.CALLS.put(key, call)
    if flat:
        return outputs[:2] if prenorm else outputs[0]
    if prenorm:
        return outputs[0].view(x.shape), outputs[1].view(x.shape)
    return outputs[0].view(x.shape)


def rms_norm(x: Tensor, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
             residual: Optional[Tensor] = None, *, eps: float = 1e-6, prenorm: bool = False,
             weight_offset: float = 0.0, out_dtype: Optional[torch.dtype] = None,
             residual_dtype: Optional[torch.dtype] = None, casting_mode: str = "fp32",
             gate: Optional[Tensor] = None) -> Union[Tensor, Tuple[Tensor, Tensor]]:
    """RMSNorm over the last dimension, differentiable in x, weight, bias, residual and gate.

    h = x + residual (added in fp32), y = h / sqrt(mean(h², -1) + eps) · (weight + weight_offset)
    + bias, in out_dtype (default x's).

    Shapes and dtypes: x (..., N), any number of leading dimensions (rows), float16, bfloat16,
    float32 or float64; weight and bias (N,), or per-head (H, N) for x of shape (..., H, N), in a
    dtype of their own (float64 only with float64 x; None: no scale, no shift); residual and gate
    x's shape. y has x's shape.

    With prenorm=True returns (y, residual_out), residual_out = h in residual_dtype (default
    residual's; prenorm needs a residual); otherwise y (gradients still reach the residual).

    casting_mode "fp32" (default) computes y in fp32 and rounds once; "llama" rounds x̂ to x's
    dtype before scaling by the weight, as Hugging Face's Llama-family RMSNorm does (Liger's
    "llama" mode; its "gemma" mode is "fp32" with weight_offset=1).

    gate (x's shape; no bias with it): the gated RMSNorm of Qwen3-Next and Qwen3.5,
    y = u·silu(gate.float()) with u = x̂·(weight + weight_offset), in out_dtype (default x's). With
    casting_mode "llama" u is computed as Hugging Face's `Qwen3NextRMSNormGated` does,
    `weight * x̂.to(x.dtype)`, rounded to promote(weight, x)'s dtype before the gate.

    Bad input raises TypeError / ValueError naming the argument, before anything is written.
    """
    return _apply(x, weight, bias, residual, eps, weight_offset, True, prenorm, out_dtype, residual_dtype,
                  casting_mode, gate)


def layer_norm(x: Tensor, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               residual: Optional[Tensor] = None, *, eps: float = 1e-5, prenorm: bool = False,
               out_dtype: Optional[torch.dtype] = None, residual_dtype: Optional[torch.dtype] = None,
               casting_mode: str = "fp32") -> Union[Tensor, Tuple[Tensor, Tensor]]:
    """LayerNorm over the last dimension, differentiable in x, weight, bias and residual.

    h = x + residual (added in fp32), mean = mean(h, -1), rstd = 1 / sqrt(mean((h − mean)², -1) + eps),
    y = (h − mean)·rstd·weight + bias, in out_dtype (default x's).

    Same conventions as `rms_norm`: x (..., N) in float16, bfloat16, float32 or float64; weight and
    bias (N,) or per-head (H, N), None for none; prenorm=True returns (y, residual_out); casting_mode
    "fp32" or "llama" (x̂ rounded to x's dtype before the weight). No weight_offset, no gate.
    """
    return _apply(x, weight, bias, residual, eps, 0.0, False, prenorm, out_dtype, residual_dtype, casting_mode)
