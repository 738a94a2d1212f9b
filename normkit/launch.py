"""Launching @triton.jit kernels: Triton's normal path, and bound launches that skip it.

`launch(fn, grid, *args, **kwargs)` is ``fn[grid](*args, **kwargs)``; `launch_fitted(fn, grid_for,
...)` the same with the grid chosen from the compiled kernel (the backward's persistent grid asks
how many of its programs fit on a multiprocessor). Both take Triton's normal path every time: its
binder, specialization and cache lookup (about 21 µs a launch on an H200 host, Triton 3.6).

`bind(fn, grid, args, kwargs)` returns ``go(*args)``, a launch of the kernel that those arguments
selected, repeated with other positional arguments *of the same specialization* — what a launch
plan (`normkit.plan`, docs/design.md#launch-path) guarantees: same dtypes, 16-byte alignment,
integer values, None-ness, constexprs and options. ``go`` hands the arguments straight to the
compiled kernel's launcher, as `JITFunction.run` does (grid padded to 3, the current torch stream of
the kernel's device read at each call — CUDA graph capture keeps working —, `kernel.function`,
`kernel.packed_metadata`, then every bound argument in signature order, constexprs included),
with launch metadata and hooks passed as None, which is what the launcher does with Triton's
default empty hook chains. Before each direct launch it checks what can change between calls; when
a launch hook is installed, the kernel has pre-run hooks, a global the kernel read has changed
(Triton raises), or the `debug` / `instrumentation_mode` knobs differ from the bound ones, that call
takes the normal path instead.

Direct launches need a Triton whose `CompiledKernel.run` takes that calling convention (checked on
3.6: `_DIRECT_TRITON`) and a CUDA launcher. Elsewhere — other Triton versions, the interpreter, a
kernel that is not a plain CompiledKernel — ``go`` is ``fn[grid](*args, **kwargs)`` every call:
slower, equally correct.

`NORMKIT_FAST_LAUNCH` (or `set_mode`): "1"/"on" (default) launch plans with direct launches;
"0"/"off" no plans, every call takes the full path and Triton's normal launch; "check" plans, and
every direct launch first re-runs Triton's own binder and cache lookup and raises if Triton would
have picked another kernel or other arguments (for tests).
"""

import os
import threading
from typing import Any, Callable, Optional

import torch

from ._runtime import rounded_casts

__all__ = ["launch", "launch_fitted", "build", "bind", "set_mode", "get_mode", "enabled"]

_Tensor = torch.Tensor
_get_device = getattr(torch._C, "_cuda_getDevice", None)
_get_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)

# Triton versions whose CompiledKernel.run convention `bind` was checked against (3.3-3.5 pass the
# same arguments in their JITFunction.run; add them once mode "check" has passed on one).
_DIRECT_TRITON = ("3.6.",)

_MISSING = object()

_lock = threading.Lock()  # only for the one-time lazy import below
# Triton's interpreter keeps global state per launch (the grid index, `triton.language` builtins
# patched and restored around each launch), so two threads interpreting kernels at once corrupt
# each other (tests/test_reliability.py): interpreted launches (CPU) run one at a time.
_interpreter_lock = threading.Lock()

_mode = os.environ.get("NORMKIT_FAST_LAUNCH", "1").strip().lower()
_enabled = _mode not in ("0", "off", "false", "no")
_check = _mode == "check"

# Bound at the first launch (so that importing normkit never imports triton).
_loaded = False
_direct = False  # this Triton takes direct launches
_JITFunction: Any = None
_InterpretedFunction: Any = None
_CompiledKernel: Any = None
_HookChain: Any = None
_runtime_knobs: Any = None
_compilation_knobs: Any = None


def set_mode(mode: str) -> None:
    """"on" (default), "off" (no plans: the full path and Triton's launch every call) or "check"."""
    global _enabled, _check, _mode
    if mode not in ("on", "off", "check"):
        raise ValueError(f"mode must be 'on', 'off' or 'check', got {mode!r}")
    _mode, _enabled, _check = mode, mode != "off", mode == "check"


def get_mode() -> str:
    return "off" if not _enabled else "check" if _check else "on"


def enabled() -> bool:
    """Whether launch plans are used (mode "on" or "check")."""
    return _enabled


def _load_triton() -> None:
    global _loaded, _direct, _JITFunction, _InterpretedFunction, _CompiledKernel, _HookChain
    global _runtime_knobs, _compilation_knobs
    with _lock:
        if _loaded:
            return
        import triton
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        _JITFunction, _InterpretedFunction = JITFunction, InterpretedFunction
        try:  # (what direct launches read; older Tritons lack some of it and launch the normal way)
            from triton import knobs
            from triton.compiler.compiler import CompiledKernel
            from triton.knobs import HookChain

            _CompiledKernel, _HookChain = CompiledKernel, HookChain
            _runtime_knobs, _compilation_knobs = knobs.runtime, knobs.compilation
            _direct = (triton.__version__.startswith(_DIRECT_TRITON) and _get_device is not None
                       and _get_stream is not None)
        except ImportError:
            _direct = False
        _loaded = True


def _interpreted(fn, grid, args, kwargs) -> None:
    """One interpreted launch: one at a time, its down-casts rounded as on the GPU (_runtime.rounded_casts)."""
    with _interpreter_lock, rounded_casts():
        fn[grid](*args, **kwargs)


def launch(fn, grid, *args, **kwargs) -> None:
    """``fn[grid](*args, **kwargs)`` (interpreted launches one at a time)."""
    if not _loaded:
        _load_triton()
    if isinstance(fn, _InterpretedFunction):
        _interpreted(fn, grid, args, kwargs)
        return
    fn[grid](*args, **kwargs)


def launch_fitted(fn, grid_for: Callable[[Any], tuple], *args, **kwargs) -> tuple:
    """``fn[grid](*args, **kwargs)`` with grid = grid_for(kernel), where kernel is the
    `CompiledKernel` these arguments select (its `n_regs`, `metadata.shared` and
    `metadata.num_warps` say how many of its programs fit on a multiprocessor), or None under the
    interpreter. Compiles before choosing the grid when the kernel is new (`JITFunction.warmup`).
    Returns the grid launched. For persistent grids, whose programs must all be resident."""
    if not _loaded:
        _load_triton()
    if isinstance(fn, _InterpretedFunction):
        grid = grid_for(None)
        _interpreted(fn, grid, args, kwargs)
        return grid
    grid = grid_for(build(fn, *args, **kwargs))
    fn[grid](*args, **kwargs)
    return grid


def build(fn, *args, **kwargs):
    """The loaded `CompiledKernel` that ``fn[grid](*args, **kwargs)`` would launch, compiled if new (a
    compile error raises here), launching nothing; None under the interpreter. A tensor may be given as
    its dtype (Triton's MockTensor: 16-byte aligned)."""
    if not _loaded:
        _load_triton()
    if isinstance(fn, _InterpretedFunction):
        return None
    kernel = fn.warmup(*args, grid=(1,), **kwargs)
    if _CompiledKernel is None or not isinstance(kernel, _CompiledKernel):
        return None
    kernel.run  # loads the binary: n_regs is known from here on
    if not hasattr(kernel, "n_regs"):
        # It failed to load before (OutOfResources: shared memory): Triton keeps that error in
        # `run` instead of raising it again on access. Raise it again.
        kernel.run()
    return kernel


# ----------------------------------------------------------------------------- bound launches
def bind(fn, grid: tuple, args: tuple, kwargs: dict) -> Callable[..., None]:
    """``go(*args)``: ``fn[grid](*args, **kwargs)`` for positional arguments of the specialization
    `args` has, launched directly where this Triton allows (module docstring). Call it right after
    launching (fn, grid, args, kwargs) the normal way: it looks the kernel up, compiling nothing.
    ``go.kernel`` is the bound CompiledKernel, None where ``go`` takes the normal path."""
    if not _loaded:
        _load_triton()
    go = None
    if _direct and isinstance(fn, _JITFunction) and type(grid) is tuple:
        try:
            go = _bind_direct(fn, grid, args, kwargs)
        except Exception:  # anything unexpected: the normal path stays correct
            go = None
    return go or _bind_normal(fn, grid, kwargs)


def _bind_normal(fn, grid, kwargs):
    interpreted = isinstance(fn, _InterpretedFunction)

    def go(*args) -> None:
        if interpreted:
            _interpreted(fn, grid, args, kwargs)
        else:
            fn[grid](*args, **kwargs)

    go.kernel = None
    return go


def _knobs(fn) -> tuple:
    """The two options JITFunction.run adds from knobs (part of Triton's cache key)."""
    return fn.debug or _runtime_knobs.debug, _compilation_knobs.instrumentation_mode


def _bind_direct(fn, grid, args, kwargs) -> Optional[Callable[..., None]]:
    device, knobs = _get_device(), _knobs(fn)
    kernel = fn.warmup(*args, grid=grid, **kwargs)  # Triton's own lookup: the kernel just launched
    if not isinstance(kernel, _CompiledKernel) or _knobs(fn) != knobs or _get_device() != device:
        return None  # (an async-compile future, or a knob flipped meanwhile: no direct launch)
    tail = _constexpr_tail(fn, args, kwargs)
    launcher = kernel.run  # initialises the handles (already done by the launch just made)
    if tail is None or type(launcher).__name__ != "CudaLauncher" or kernel.function is None:
        return None
    globals_ = tuple((g, name, val) for (name, _), (val, g) in fn.used_global_vals.items())
    function, packed = kernel.function, kernel.packed_metadata
    g0, g1, g2 = grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1

    def go(*args) -> None:
        if fn.pre_run_hooks or not _hooks_clear() or _knobs(fn) != knobs or _globals_changed(globals_):
            fn[grid](*args, **kwargs)  # hooks to call, another kernel, or Triton's "global changed" error
            return
        if _check:
            _verify(fn, device, args, kwargs, kernel, tail)
        launcher(g0, g1, g2, _get_stream(device), function, packed, None, None, None, *args, *tail)

    go.kernel = kernel
    return go


def _constexpr_tail(fn, args, kwargs) -> Optional[tuple]:
    """The constexprs after the positional arguments, in signature order (keyword values, else
    defaults); None when the call is not positional runtime arguments + keyword constexprs."""
    params = fn.params
    if len(args) > len(params) or any(p.is_constexpr for p in params[:len(args)]):
        return None
    tail = []
    for p in params[len(args):]:
        if not p.is_constexpr:
            return None  # a runtime argument passed by keyword
        if p.name in kwargs:
            tail.append(kwargs[p.name])
        elif p.has_default:
            tail.append(p.default)
        else:
            return None
    return tuple(tail)


def _hooks_clear() -> bool:
    """True when no launch hook would do anything (Triton's default: empty HookChains)."""
    for hook in (_runtime_knobs.launch_enter_hook, _runtime_knobs.launch_exit_hook):
        if hook is not None and (type(hook) is not _HookChain or hook.calls):
            return False
    return True


def _globals_changed(globals_) -> bool:
    for g, name, val in globals_:
        if g.get(name, _MISSING) != val:
            return True
    return False


def _verify(fn, device, args, kwargs, kernel, tail) -> None:
    """check mode: Triton's own binder and cache lookup must pick this kernel and these arguments."""
    from triton.runtime.jit import compute_cache_key

    kernel_cache, kernel_key_cache, _, _, binder = fn.device_caches[device]
    kw = dict(kwargs)
    kw["debug"], kw["instrumentation_mode"] = _knobs(fn)
    bound, specialization, options = binder(*args, **kw)
    if kernel_cache.get(compute_cache_key(kernel_key_cache, specialization, options)) is not kernel:
        raise AssertionError(f"normkit.launch: Triton would launch another kernel for {fn} "
                             f"(specialization {specialization})")
    passed = tuple(args) + tail
    if len(passed) != len(bound) or not all(map(_same_argument, passed, bound.values())):
        raise AssertionError(f"normkit.launch: arguments differ from Triton's bound arguments for {fn}")


def _same_argument(passed, bound) -> bool:
    """check mode: the direct launch passes what Triton bound — the object itself (the positional
    arguments), or for the constexprs bound once, one of the same type and value: an int above 256
    is a new object each time it is computed (BLOCK_N = 1024 from another width)."""
    return passed is bound or (type(passed) is type(bound) and not isinstance(passed, _Tensor) and passed == bound)
