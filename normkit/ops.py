"""Allocation, dispatch and launch; `torch.library` custom ops with fake (meta) implementations.

Layering: functional → ops → kernels. Ops take 2-D (M, N) views (reshaping happens above, so
`torch.compile` sees stable ranks), allocate outputs, and launch the Triton kernels on CUDA
tensors (and on CPU tensors under TRITON_INTERPRET=1) or call `normkit.reference` on CPU.
They do no math of their own.

The public, quack-aligned entry points `rms_norm_fwd` / `rms_norm_bwd` accept (..., N) inputs,
validate, flatten, and call the custom ops.
"""

from typing import Optional, Tuple

import torch

from . import config as cfg
from . import reference
from . import validation
from ._runtime import HAS_TRITON, INTERPRET, multiprocessor_count, uses_triton

if HAS_TRITON:
    import triton
    import triton.language as tl

    from .kernels import norm_bwd_kernel, norm_fwd_kernel, sum_partials_kernel

Tensor = torch.Tensor


# ----------------------------------------------------------------------------- launchers
def _compute_dtype(x: Tensor):
    return tl.float64 if x.dtype == torch.float64 else tl.float32


def _device_guard(device: torch.device):
    """Launch on the tensors' device, not the current one (a no-op for CPU / current device)."""
    if device.type == "cuda" and device.index is not None and device.index != torch.cuda.current_device():
        return torch.cuda.device(device)
    return _NULL_GUARD


class _NullGuard:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


_NULL_GUARD = _NullGuard()


def launch_fwd(x: Tensor, weight: Optional[Tensor], out: Tensor, rstd: Optional[Tensor], eps: float,
               config: Optional[cfg.TileConfig] = None) -> None:
    """Write y (into `out`, row-major (M, N)) and optionally rstd (M,) for x of shape (M, N)."""
    m, n = x.shape
    if m == 0:
        return
    if not uses_triton(x.device):
        y, r = reference.rms_norm_fwd(x, weight, eps)
        out.copy_(y)
        if rstd is not None:
            rstd.copy_(r)
        return
    config = cfg.fit_block_m(config or cfg.tile_config(n, False, INTERPRET), m)
    grid = (triton.cdiv(m, config.block_m),)
    with _device_guard(x.device):
        norm_fwd_kernel[grid](
            x, weight, out, rstd, m, n, x.stride(0), x.stride(1), out.stride(0), eps,
            BLOCK_M=config.block_m, BLOCK_N=config.block_n, ONE_TILE=config.one_tile,
            HAS_WEIGHT=weight is not None, STORE_RSTD=rstd is not None,
            COMPUTE_DTYPE=_compute_dtype(x), num_warps=config.num_warps,
        )


def launch_bwd(x: Tensor, weight: Optional[Tensor], dy: Tensor, rstd: Optional[Tensor], dx: Tensor,
               dweight: Optional[Tensor], eps: float, config: Optional[cfg.TileConfig] = None) -> None:
    """Write dx (row-major (M, N)) and dweight (N,) for x, dy of shape (M, N).

    rstd None recomputes it. dweight must be given exactly when weight is.
    """
    m, n = x.shape
    if m == 0:
        if dweight is not None:
            dweight.zero_()
        return
    if not uses_triton(x.device):
        d_x, d_w = reference.rms_norm_bwd(x, weight, dy, rstd, eps)
        dx.copy_(d_x)
        if dweight is not None:
            dweight.copy_(d_w)
        return
    config = cfg.fit_block_m(config or cfg.tile_config(n, True, INTERPRET), m)
    programs = cfg.backward_grid(config, m, multiprocessor_count(x.device))
    partial = None
    if weight is not None:
        partial = torch.empty((programs, n), dtype=reference.compute_dtype(x.dtype), device=x.device)
    with _device_guard(x.device):
        norm_bwd_kernel[(programs,)](
            x, weight, dy, dx, rstd, partial, m, n,
            x.stride(0), x.stride(1), dy.stride(0), dy.stride(1), dx.stride(0), eps,
            BLOCK_M=config.block_m, BLOCK_N=config.block_n, ONE_TILE=config.one_tile,
            HAS_WEIGHT=weight is not None, RECOMPUTE_RSTD=rstd is None,
            COMPUTE_DTYPE=_compute_dtype(x), num_warps=config.num_warps,
        )
        if weight is not None:
            sum_partials_kernel[(triton.cdiv(n, cfg.FINISH_BLOCK_N),)](
                partial, dweight, programs, n,
                BLOCK_G=cfg.FINISH_BLOCK_G, BLOCK_N=cfg.FINISH_BLOCK_N, num_warps=4,
            )


# ----------------------------------------------------------------------------- custom ops
def _empty_stats(x: Tensor, store: bool) -> Tensor:
    rows = x.shape[0] if store else 0
    return torch.empty((rows,), dtype=validation.stats_dtype(x.dtype), device=x.device)


def _dweight_like(weight: Optional[Tensor], x: Tensor) -> Tensor:
    # Custom ops cannot return None: an empty tensor stands for "no weight, no dweight".
    if weight is None:
        return torch.empty((0,), dtype=x.dtype, device=x.device)
    return torch.empty_like(weight, memory_format=torch.contiguous_format)


def _rms_norm_fwd_impl(x: Tensor, weight: Optional[Tensor], eps: float, store_rstd: bool
                     ) -> Tuple[Tensor, Tensor]:
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    rstd = _empty_stats(x, store_rstd)
    launch_fwd(x, weight, out, rstd if store_rstd else None, eps)
    return out, rstd


_rms_norm_fwd_op = torch.library.custom_op("normkit::rms_norm_fwd", _rms_norm_fwd_impl, mutates_args=())


@_rms_norm_fwd_op.register_fake
def _(x, weight, eps, store_rstd):
    return torch.empty(x.shape, dtype=x.dtype, device=x.device), _empty_stats(x, store_rstd)


def _rms_norm_bwd_impl(x: Tensor, weight: Optional[Tensor], dout: Tensor, rstd: Optional[Tensor],
                     eps: float) -> Tuple[Tensor, Tensor]:
    dx = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    dweight = _dweight_like(weight, x)
    launch_bwd(x, weight, dout, rstd, dx, dweight if weight is not None else None, eps)
    return dx, dweight


_rms_norm_bwd_op = torch.library.custom_op("normkit::rms_norm_bwd", _rms_norm_bwd_impl, mutates_args=())


@_rms_norm_bwd_op.register_fake
def _(x, weight, dout, rstd, eps):
    return torch.empty(x.shape, dtype=x.dtype, device=x.device), _dweight_like(weight, x)


def fwd_2d(x: Tensor, weight: Optional[Tensor], eps: float, store_rstd: bool) -> Tuple[Tensor, Tensor]:
    """The forward op on validated 2-D input. Eager calls skip the dispatcher (host overhead);
    under torch.compile the registered op is what gets traced."""
    if torch.compiler.is_compiling():
        return torch.ops.normkit.rms_norm_fwd(x, weight, eps, store_rstd)
    return _rms_norm_fwd_impl(x, weight, eps, store_rstd)


def bwd_2d(x: Tensor, weight: Optional[Tensor], dout: Tensor, rstd: Optional[Tensor], eps: float
           ) -> Tuple[Tensor, Tensor]:
    if torch.compiler.is_compiling():
        return torch.ops.normkit.rms_norm_bwd(x, weight, dout, rstd, eps)
    return _rms_norm_bwd_impl(x, weight, dout, rstd, eps)


# ----------------------------------------------------------------------------- public, quack-aligned
def rms_norm_fwd(x: Tensor, weight: Optional[Tensor] = None, *, eps: float = 1e-6, store_rstd: bool = False
                 ) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
    """RMSNorm forward without autograd: returns (out, residual_out, rstd).

    out = x / sqrt(mean(x², -1) + eps) · weight, in x's dtype and shape. residual_out is x itself
    (the fused residual path comes later). rstd is a float32 tensor of shape (M,) with M the
    number of rows (float64 for float64 x) when `store_rstd`, else None.
    """
    eps = validation.check_fwd(x, weight, eps)
    n = x.shape[-1]
    out, rstd = fwd_2d(x.reshape(-1, n), weight, eps, bool(store_rstd))
    return out.view(x.shape), x, (rstd if store_rstd else None)


def rms_norm_bwd(x: Tensor, weight: Optional[Tensor], dout: Tensor, rstd: Optional[Tensor] = None, *,
                 eps: float = 1e-6) -> Tuple[Tensor, Optional[Tensor], None, None]:
    """RMSNorm backward without autograd: returns (dx, dweight, dbias, dresidual).

    rstd=None recomputes rstd from x inside the kernel (nothing saved from the forward); a saved
    rstd (from `rms_norm_fwd(..., store_rstd=True)`) skips that work. dweight has weight's dtype
    (None when weight is None), accumulated in float32. dbias and dresidual are None here.
    """
    eps = validation.check_bwd(x, weight, dout, rstd, eps)
    n = x.shape[-1]
    dx, dweight = bwd_2d(x.reshape(-1, n), weight, dout.reshape(-1, n), rstd, eps)
    return dx.view(x.shape), (dweight if weight is not None else None), None, None
