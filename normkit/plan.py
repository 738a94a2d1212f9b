"""Launch plans: what one call signature launched, kept so the next call with it launches directly.

A call's *signature* is everything that decides its launches (docs/design.md#launch-path): x's
shape; for each tensor argument its strides where the kernel takes them (a parameter's shape), its
dtype, whether its data is 16-byte aligned (Triton specialises on it) and its type, or None; the
flags (norm, x̂ rounding, whether weight_offset is 0, the backward's dependent launch); x's device
and the current CUDA device. What a device fixes (its SM count, limits and capability) comes with
the device. A forced configuration (tests, tuning tools) takes the full path every call and
records no plan.

A *plan* holds what the full path chose and ran for it: the bound launches (`launch.bind`: the
kernel, its configuration — a compile fallback included — and grid), the integer arguments (shape
and strides, fixed by the key) and the sizes of the buffers a call allocates (the backward's
partial sums, a split configuration's zeroed exchange slots). A hit allocates those and launches,
passing the call's tensors, eps and weight_offset; it runs no configuration pick, grid fit or
argument classification — the key proves the full path would choose the same.

The cache is bounded (`MAX_PLANS`, oldest first out), shared by threads (plans are not changed
once stored; dict reads and writes are atomic under the GIL, evictions take a lock; concurrent
misses store equal plans) and keyed by device and current device; each launch reads the current
stream. `NORMKIT_FAST_LAUNCH=0` (or `normkit.launch.set_mode("off")`) turns plans off.
"""

import threading
from typing import Any, Callable, Optional, Tuple

import torch

from . import launch

_Tensor, _Parameter = torch.Tensor, torch.nn.Parameter
_get_device = getattr(torch._C, "_cuda_getDevice", None)

# A model holds a few signatures (norms × dtypes × shapes, forward and backward); varying sequence
# lengths add a few per M. A plan with its key takes 3-6 KB (sys.getsizeof, CPU): 1024 stay under 6 MB.
MAX_PLANS = 1024


class FwdPlan:
    """The forward's launch: go(x, residual, weight, bias, gate, out, residual_out, mean, rstd, xchg,
    *ints, eps, weight_offset); xchg: the exchange slots' length (split rows), else 0."""
    __slots__ = ("go", "ints", "xchg", "device")

    def __init__(self, go: Callable, ints: tuple, xchg: int, device: Optional[torch.device]):
        self.go, self.ints, self.xchg, self.device = go, ints, xchg, device


class BwdPlan:
    """The backward's launches: go(x, weight, dy, dresidual_out, mean, rstd, gate, dx, dw_partial,
    db_partial, dgate, xchg, *ints, eps, weight_offset), then finish(partials, dweight or dbias, dbias or
    dweight, *finish_ints) when there are parameter gradients; partials: the partial sums' (shape,
    dtype), None without parameter gradients."""
    __slots__ = ("go", "ints", "partials", "xchg", "finish", "finish_ints", "device")

    def __init__(self, go: Callable, ints: tuple, partials: Optional[Tuple[int, int, int]], xchg: int,
                 finish: Optional[Callable], finish_ints: tuple, device: Optional[torch.device]):
        self.go, self.ints, self.partials, self.xchg = go, ints, partials, xchg
        self.finish, self.finish_ints, self.device = finish, finish_ints, device


class PlanCache:
    """A bounded dict of plans with hit and miss counts (counts are approximate under threads)."""

    def __init__(self, maxsize: int = MAX_PLANS):
        self.maxsize = maxsize
        self._plans: dict = {}
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, key) -> Any:
        if key is None:
            return None
        plan = self._plans.get(key)
        if plan is None:
            self.misses += 1
        else:
            self.hits += 1
        return plan

    def put(self, key, plan) -> None:
        with self._lock:
            while len(self._plans) >= self.maxsize:
                del self._plans[next(iter(self._plans))]
            self._plans[key] = plan

    def clear(self) -> None:
        with self._lock:
            self._plans.clear()
            self.hits = self.misses = 0

    def info(self) -> dict:
        return {"size": len(self._plans), "maxsize": self.maxsize, "hits": self.hits, "misses": self.misses,
                "enabled": launch.enabled()}


# What enters a launch of each tensor: its strides where the kernel takes them (row-major outputs
# and dense parameters / statistics take none; a parameter's shape gives the heads), its dtype,
# 16-byte alignment and type. (Inline, not a helper per tensor: this is most of a hit's host time.)
def fwd_key(x, out, weight, bias, residual, residual_out, mean, rstd, gate, is_rms_norm, x_hat_dtype, weight_offset,
            config) -> Optional[tuple]:
    """The forward's signature (module docstring); None: no plan (plans off, a forced config)."""
    if config is not None or not launch._enabled:
        return None
    device = x.device
    return (
        "fwd", device, _get_device() if device.type == "cuda" else None,
        x.shape, x.stride(), x.dtype, x.data_ptr() & 15 == 0, type(x),
        out.stride(), out.dtype, out.data_ptr() & 15 == 0, type(out),
        None if weight is None else (weight.shape, weight.dtype, weight.data_ptr() & 15 == 0, type(weight)),
        None if bias is None else (bias.shape, bias.dtype, bias.data_ptr() & 15 == 0, type(bias)),
        None if residual is None else (residual.stride(), residual.dtype, residual.data_ptr() & 15 == 0,
                                       type(residual)),
        None if residual_out is None else (residual_out.stride(), residual_out.dtype,
                                           residual_out.data_ptr() & 15 == 0, type(residual_out)),
        None if mean is None else (mean.dtype, mean.data_ptr() & 15 == 0, type(mean)),
        None if rstd is None else (rstd.dtype, rstd.data_ptr() & 15 == 0, type(rstd)),
        None if gate is None else (gate.stride(), gate.dtype, gate.data_ptr() & 15 == 0, type(gate)),
        is_rms_norm, x_hat_dtype, weight_offset == 0.0)


def bwd_key(x, dy, dx, weight, dweight, dbias, dresidual_out, mean, rstd, gate, dgate, is_rms_norm, x_hat_dtype,
            pdl, config) -> Optional[tuple]:
    """The backward's signature (module docstring); None: no plan (plans off, a forced config)."""
    if config is not None or not launch._enabled:
        return None
    device = x.device
    return (
        "bwd", device, _get_device() if device.type == "cuda" else None,
        x.shape, x.stride(), x.dtype, x.data_ptr() & 15 == 0, type(x),
        dy.stride(), dy.dtype, dy.data_ptr() & 15 == 0, type(dy),
        dx.stride(), dx.dtype, dx.data_ptr() & 15 == 0, type(dx),
        None if weight is None else (weight.shape, weight.dtype, weight.data_ptr() & 15 == 0, type(weight)),
        None if dweight is None else (dweight.dtype, dweight.data_ptr() & 15 == 0, type(dweight)),
        None if dbias is None else (dbias.shape, dbias.dtype, dbias.data_ptr() & 15 == 0, type(dbias)),
        None if dresidual_out is None else (dresidual_out.stride(), dresidual_out.dtype,
                                            dresidual_out.data_ptr() & 15 == 0, type(dresidual_out)),
        None if mean is None else (mean.dtype, mean.data_ptr() & 15 == 0, type(mean)),
        None if rstd is None else (rstd.dtype, rstd.data_ptr() & 15 == 0, type(rstd)),
        None if gate is None else (gate.stride(), gate.dtype, gate.data_ptr() & 15 == 0, type(gate)),
        None if dgate is None else (dgate.stride(), dgate.dtype, dgate.data_ptr() & 15 == 0, type(dgate)),
        is_rms_norm, x_hat_dtype, pdl)


def plain(*tensors: Optional[_Tensor]) -> bool:
    """Whether every tensor is a plain Tensor or Parameter (subclasses get no plan: the launcher
    reads their data_ptr itself, and what they do there is theirs to decide)."""
    return all(t is None or type(t) is _Tensor or type(t) is _Parameter for t in tensors)


def guard_device(x: _Tensor) -> Optional[torch.device]:
    """x's device when launching there needs a switch of the current CUDA device, else None."""
    device = x.device
    if device.type == "cuda" and device.index is not None and device.index != _get_device():
        return device
    return None


PLANS = PlanCache()
CALLS = PlanCache()  # call plans (normkit.calls): signature → FwdCall
