"""Low-level, quack-aligned entry points (no autograd), so a library can use normkit as a backend.

They accept x of shape (..., N) with weight/bias of shape (N,) or per-head (H, N) for x of shape
(..., H, N), validate, flatten to (M, N) and call the ops. None marks what was not produced.
All take `casting_mode` ("fp32" or "llama", as `normkit.rms_norm`); the RMSNorm pair takes a `gate`
(Qwen3-Next's gated norm), whose backward returns dgate after the quack-aligned four. `backend(device)`,
`runtime_info()` and `multiprocessors(device)` say which implementation those calls run here.
"""

from typing import Dict, Optional, Tuple, Union

import torch

from . import _runtime, ops, validation

Tensor = torch.Tensor


def _x_hat_dtype(x, casting_mode):
    """Where x̂ is rounded before the weight: x's dtype in "llama" casting (docs/design.md#casting)."""
    validation.check_casting_mode(casting_mode)
    return x.dtype if casting_mode == "llama" else None


def _norm_fwd(x, weight, bias, residual, out_dtype, residual_dtype, eps, store_stats, weight_offset,
              is_rms_norm, casting_mode, gate=None):
    eps = validation.check_fwd(x, weight, bias, residual, eps=eps, weight_offset=weight_offset,
                               out_dtype=out_dtype, residual_dtype=residual_dtype, gate=gate)
    store_stats = validation.check_bool("store_rstd", store_stats)
    options = dict(eps=eps, weight_offset=float(weight_offset), is_rms_norm=is_rms_norm, store_stats=store_stats,
                   out_dtype=out_dtype, residual_dtype=residual_dtype, x_hat_dtype=_x_hat_dtype(x, casting_mode))
    if x.dim() == 2:  # already (M, N): no reshape in, no view out (host time)
        out, residual_out, mean, rstd = ops.norm_fwd(x, weight, bias, residual, gate=gate, **options)
        return out, x if residual_out is None else residual_out, mean, rstd
    n = x.shape[-1]
    out, residual_out, mean, rstd = ops.norm_fwd(
        x.reshape(-1, n), weight, bias, None if residual is None else residual.reshape(-1, n),
        gate=None if gate is None else gate.reshape(-1, n), **options)
    residual_out = x if residual_out is None else residual_out.view(x.shape)
    return out.view(x.shape), residual_out, mean, rstd


def _norm_bwd(x, weight, dout, mean, rstd, dresidual_out, has_bias, has_residual, weight_offset, eps,
              is_rms_norm, casting_mode, gate=None, bias=None):
    eps = validation.check_bwd(x, weight, dout, mean=mean, rstd=rstd, dresidual_out=dresidual_out,
                               eps=eps, weight_offset=weight_offset, is_rms_norm=is_rms_norm, gate=gate, bias=bias)
    has_bias = validation.check_bool("has_bias", has_bias) or bias is not None
    has_residual = validation.check_bool("has_residual", has_residual)
    n = x.shape[-1]
    two_d = x.dim() == 2  # already (M, N): no reshape in, no view out (host time)
    flat = lambda t: t if t is None or two_d else t.reshape(-1, n)  # noqa: E731
    # dbias takes the forward bias's shape and dtype when it is passed, else weight's (x's dtype, (N,)).
    like = bias if bias is not None else weight
    bias_dtype = (like.dtype if like is not None else x.dtype) if has_bias else None
    if has_bias and gate is not None:
        raise ValueError("has_bias=True asks for dbias, but a gated norm takes no bias (gate is given)")
    dx, dweight, dbias, *dgate = ops.norm_bwd(
        flat(x), weight, flat(dout), mean=mean, rstd=rstd, dresidual_out=flat(dresidual_out),
        bias_shape=like.shape if like is not None else (n,), bias_dtype=bias_dtype, eps=eps,
        weight_offset=float(weight_offset), is_rms_norm=is_rms_norm, x_hat_dtype=_x_hat_dtype(x, casting_mode),
        gate=flat(gate))
    if not two_d:
        dx = dx.view(x.shape)
        dgate = [t.view(x.shape) for t in dgate]
    # h = x + residual: both get the same gradient, returned as the same tensor, not written twice.
    return (dx, dweight, dbias, (dx if has_residual else None), *dgate)


def rms_norm_fwd(x: Tensor, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
                 residual: Optional[Tensor] = None, out_dtype: Optional[torch.dtype] = None,
                 residual_dtype: Optional[torch.dtype] = None, eps: float = 1e-6,
                 store_rstd: bool = False, weight_offset: float = 0.0, casting_mode: str = "fp32",
                 gate: Optional[Tensor] = None) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
    """RMSNorm forward: returns (out, residual_out, rstd).

    h = x + residual (in fp32); out = h·rstd·(weight + weight_offset) + bias in out_dtype (default
    x's), rstd = 1/sqrt(mean(h²) + eps). residual_out is h in residual_dtype (default residual's,
    else x's) — x itself when there is no residual and no dtype change. rstd is float32 (M,)
    (float64 for float64 x) when `store_rstd`, else None. With a gate (x's shape, no bias),
    out = u·silu(gate) for u = h·rstd·(weight + weight_offset) (`normkit.rms_norm`'s gate).
    """
    out, residual_out, _, rstd = _norm_fwd(x, weight, bias, residual, out_dtype, residual_dtype, eps,
                                           store_rstd, weight_offset, True, casting_mode, gate)
    return out, residual_out, rstd


def rms_norm_bwd(x: Tensor, weight: Optional[Tensor], dout: Tensor, rstd: Optional[Tensor] = None,
                 dresidual_out: Optional[Tensor] = None, has_bias: bool = False, has_residual: bool = False,
                 weight_offset: float = 0.0, eps: float = 1e-6, casting_mode: str = "fp32",
                 gate: Optional[Tensor] = None, bias: Optional[Tensor] = None) -> Tuple[Optional[Tensor], ...]:
    """RMSNorm backward: returns (dx, dweight, dbias, dresidual), and dgate (gate's dtype) as a fifth
    when the forward had a `gate` (pass the same one).

    x is the normalised input (residual_out when there was a residual). rstd=None recomputes it
    inside the kernel (nothing saved from the forward). dresidual_out, the gradient arriving on
    residual_out, is added to dx; with `has_residual` dresidual is dx itself. dweight and dbias
    come in weight's dtype (x's without weight), accumulated in fp32; None where not asked for.
    Passing the forward's `bias` asks for dbias in that bias's shape and dtype (needed for an
    (H, N) or differently typed bias when weight is None). casting_mode "llama" gives the
    gradients of the forward with that casting (dweight sums dy·round(x̂)).
    """
    return _norm_bwd(x, weight, dout, None, rstd, dresidual_out, has_bias, has_residual, weight_offset,
                     eps, True, casting_mode, gate, bias)


def layer_norm_fwd(x: Tensor, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
                   residual: Optional[Tensor] = None, out_dtype: Optional[torch.dtype] = None,
                   residual_dtype: Optional[torch.dtype] = None, eps: float = 1e-5,
                   store_rstd: bool = False, casting_mode: str = "fp32"
                   ) -> Tuple[Tensor, Tensor, Optional[Tensor], Optional[Tensor]]:
    """LayerNorm forward: returns (out, residual_out, mean, rstd).

    out = (h − mean)·rstd·weight + bias with h = x + residual; mean and rstd (float32 (M,)) are
    returned when `store_rstd`, else None.
    """
    return _norm_fwd(x, weight, bias, residual, out_dtype, residual_dtype, eps, store_rstd, 0.0, False,
                     casting_mode)


def layer_norm_bwd(x: Tensor, weight: Optional[Tensor], dout: Tensor, mean: Optional[Tensor] = None,
                   rstd: Optional[Tensor] = None, dresidual_out: Optional[Tensor] = None,
                   has_bias: bool = False, has_residual: bool = False, eps: float = 1e-5,
                   casting_mode: str = "fp32", bias: Optional[Tensor] = None
                   ) -> Tuple[Tensor, Optional[Tensor], Optional[Tensor], Optional[Tensor]]:
    """LayerNorm backward: returns (dx, dweight, dbias, dresidual); None statistics are recomputed.

    dx = rstd·(g − x̂·mean(g·x̂) − mean(g)) with g = dout·weight (+ dresidual_out). dweight and
    dbias as in `rms_norm_bwd` (pass the forward's `bias` for dbias in its shape and dtype).
    """
    return _norm_bwd(x, weight, dout, mean, rstd, dresidual_out, has_bias, has_residual, 0.0, eps, False,
                     casting_mode, bias=bias)


# ----------------------------------------------------------------------------- where calls run
def _device(device) -> torch.device:
    if not isinstance(device, (torch.device, str)):
        raise TypeError(f"device must be a torch.device or a str, got {type(device).__name__}")
    try:
        return torch.device(device)
    except RuntimeError:
        raise ValueError(f"device must name a device ('cpu', 'cuda:0', ...), got {device!r}") from None


def backend(device: Union[torch.device, str]) -> str:
    """Which implementation handles tensors on `device` in this process.

    "triton": the compiled Triton kernels (a CUDA device); "interpreter": the same kernels in
    Triton's interpreter, on CPU tensors (TRITON_INTERPRET=1 before the first launch);
    "reference": the plain-PyTorch path of `normkit.reference` (no triton, or a CPU without the
    interpreter). On CPU the answer imports the kernels, which fixes the interpreter mode
    (docs/design.md#cpu-path).
    """
    device = _device(device)
    if not _runtime.uses_triton(device):
        return "reference"
    return "interpreter" if device.type == "cpu" else "triton"


def runtime_info() -> Dict[str, Optional[str]]:
    """Versions and backends of this process, for reports and bug reports.

    {"normkit", "torch", "triton" (None when not installed), "cuda_device" (the current GPU's
    name, None without one), "cpu_backend", "cuda_backend" (None without a GPU)}; the backends
    are `backend()`'s answers.
    """
    from . import __version__

    triton_version = None
    if _runtime.HAS_TRITON:
        import triton

        triton_version = triton.__version__
    on_gpu = torch.cuda.is_available()
    return {"normkit": __version__, "torch": torch.__version__, "triton": triton_version,
            "cuda_device": torch.cuda.get_device_name() if on_gpu else None,
            "cpu_backend": backend("cpu"), "cuda_backend": backend("cuda") if on_gpu else None}


def multiprocessors(device: Union[torch.device, str]) -> int:
    """The multiprocessor count the launch heuristics size grids with on `device` (a CUDA device's
    SM count; 4 in Triton's interpreter, whose programs run one after another)."""
    return _runtime.multiprocessor_count(_device(device))


def tile_config(n: int, backward: bool, interpret: bool, **scenario):
    """The launch heuristics' pick for rows of length `n` (`normkit.config.tile_config`; `scenario`:
    heads, multiprocessors, residual, layer_norm, element_size, vector_aligned, out_element_size,
    recompute, residual_element_size), for this process's GPU's tables when there is one (as a launch
    on it reads them). For reports and tools that say which kernel path a shape takes."""
    from . import config

    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n must be an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not interpret and "device" not in scenario and torch.cuda.is_available():
        scenario["device"] = _runtime.target(torch.device("cuda"))
    return config.tile_config(n, backward, interpret, **scenario)


def may_stage(n: int, element_size: int) -> bool:
    """Whether the backward's pick for rows of `n` may depend on 16-byte vector alignment."""
    from . import config

    return config.may_stage(n, element_size)
