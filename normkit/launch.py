"""A launcher cache for @triton.jit kernels: the eager host path without JITFunction.run's work.

`launch(fn, grid, *args, **kwargs)` does what ``fn[grid](*args, **kwargs)`` does. The first time
a *specialization* is seen it takes exactly that normal path (which compiles if needed) and keeps
the `CompiledKernel` Triton returned; later calls with the same specialization hand the arguments
straight to that kernel's launcher, skipping Triton's binder, the per-argument
`native_specialize_impl` calls, cache-key building, the option parsing and the launch-metadata
dict. Measured on an H200 host (norm_fwd_kernel, Triton 3.6): `fn[grid](...)` 21 µs, this path
12.5 µs, of which 6 µs is Triton's own C launcher (cuLaunchKernelEx and the pointer checks) and
about 5 µs this key.

The key: what Triton 3.6's `JITFunction.run` specialises on, computed from the same arguments
(`create_function_from_signature` + `native_specialize_impl`, `compute_cache_key`), or something
finer (a finer key costs one more normal launch, never a wrong kernel):

* the kernel object and the current CUDA device (`device_caches[device]`);
* the keyword arguments, names and values: the constexprs (``("constexpr", value)`` in Triton's
  specialization) and the launch options (num_warps, num_stages, …: ``str(options)``), plus the
  two options `run` adds from knobs (`debug` — also the kernel's own — and
  `instrumentation_mode`);
* per positional argument, its kind and what Triton derives from its value:
    - tensor: its dtype (the ``*bf16`` pointer type) and ``data_ptr() % 16 == 0`` (the "D"
      divisibility attribute);
    - int: ``== 1`` (Triton turns it into the constexpr 1), otherwise the integer type
      (i32 in [-2³¹, 2³¹), i64 in [-2⁶³, 2⁶³), else u64) and ``% 16 == 0`` ("D");
    - float (fp32, or the type the parameter is annotated with; value not specialised), bool (u1,
      not specialised), None (constexpr None).
  Per-parameter settings (`do_not_specialize`, `do_not_specialize_on_alignment`, annotations)
  only *drop* value specialization, so this key stays at least as fine as Triton's for them.
  Anything else (numpy scalars, tuples, descriptors, tensor subclasses Triton may treat
  otherwise, a constexpr passed positionally, a runtime argument passed by keyword, a callable
  grid) takes the normal path every time.

The fast call passes the launcher what `JITFunction.run` passes `kernel.run` — grid padded to 3,
the current torch stream of the current device (`torch._C._cuda_getCurrentRawStream`, Triton's own
`get_current_stream`: stream capture keeps working), `kernel.function`, `kernel.packed_metadata`,
then every bound argument in signature order, constexprs included — except that launch metadata
and the launch hooks are passed as None, which is what the launcher does with Triton's default
empty hook chains. Whenever a launch hook is installed (`triton.knobs.runtime.launch_enter_hook` /
`launch_exit_hook` set to a function or a non-empty chain), a kernel has pre-run hooks, a global
the kernel read has changed (Triton raises), the interpreter is active (`InterpretedFunction`),
the Triton version has not been checked against this key (only 3.6), or anything unexpected
happens while building the key, the normal `fn[grid](...)` path runs instead.

Thread safety: the cache is a dict read and written whole under the GIL; an entry is derived
only from its own key and the kernel Triton returned for those arguments, and is stored only when
the key computed after the normal launch equals the one computed before (knobs changing in
between cannot file a kernel under the wrong key). Concurrent misses store equal entries.

`launch_fitted(fn, grid_for, *args, **kwargs)` is the same launch with the grid chosen from the
compiled kernel (grid_for(kernel)): the backward's persistent grid asks how many of the kernel's
programs fit on a multiprocessor (its registers and shared memory) before it is launched. On a
miss the kernel is compiled first (`JITFunction.warmup`), then launched the normal way.

`NORMKIT_FAST_LAUNCH=0` disables the cache (every launch takes the normal path);
`NORMKIT_FAST_LAUNCH=check` keeps it but re-runs Triton's own binder and cache lookup on every fast
launch and raises if Triton would have picked another kernel or other arguments (for tests).
"""

import os
import threading
from typing import Any, Dict, Optional

import torch

from ._runtime import rounded_casts

__all__ = ["launch", "launch_fitted", "set_mode", "get_mode", "clear_cache", "cache_size", "spec_key"]

_Tensor = torch.Tensor
_Parameter = torch.nn.Parameter
_get_device = getattr(torch._C, "_cuda_getDevice", None)
_get_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)

_VERIFIED_TRITON = ("3.6.",)  # versions whose specialization rules this key was checked against

_SLOW = object()  # cache value: this key always takes the normal path
_MISSING = object()

_cache: Dict[Any, Any] = {}
_lock = threading.Lock()  # only for the one-time lazy import below; compiled launches never take it
# Triton's interpreter keeps global state per launch (the grid index, `triton.language` builtins
# patched and restored around each launch), so two threads interpreting kernels at once corrupt
# each other (tests/test_reliability.py): interpreted launches (CPU) take turns.
_interpreter_lock = threading.Lock()

_mode = os.environ.get("NORMKIT_FAST_LAUNCH", "1").strip().lower()
_enabled = _mode not in ("0", "off", "false", "no")
_check = _mode == "check"

# Bound at the first launch (so that importing normkit never imports triton): Triton's classes
# and knob namespaces, and whether this Triton is one the key was checked against.
_loaded = False
_usable = False
_JITFunction: Any = None
_InterpretedFunction: Any = None
_CompiledKernel: Any = None
_HookChain: Any = None
_runtime_knobs: Any = None
_compilation_knobs: Any = None


def set_mode(mode: str) -> None:
    """"on" (default), "off" (always the normal path) or "check" (fast, verified against Triton)."""
    global _enabled, _check, _mode
    if mode not in ("on", "off", "check"):
        raise ValueError(f"mode must be 'on', 'off' or 'check', got {mode!r}")
    _mode, _enabled, _check = mode, mode != "off", mode == "check"


def get_mode() -> str:
    return "off" if not _enabled else "check" if _check else "on"


def clear_cache() -> None:
    _cache.clear()


def cache_size() -> int:
    """Entries that launch directly (keys that always take the normal path not counted)."""
    return sum(1 for v in list(_cache.values()) if v is not _SLOW)


def _load_triton() -> None:
    global _loaded, _usable, _JITFunction, _InterpretedFunction, _CompiledKernel, _HookChain, _runtime_knobs
    global _compilation_knobs
    with _lock:
        if _loaded:
            return
        import triton
        from triton import knobs
        from triton.compiler.compiler import CompiledKernel
        from triton.knobs import HookChain
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        _JITFunction, _CompiledKernel, _HookChain = JITFunction, CompiledKernel, HookChain
        _InterpretedFunction = InterpretedFunction
        _runtime_knobs, _compilation_knobs = knobs.runtime, knobs.compilation
        _usable = (triton.__version__.startswith(_VERIFIED_TRITON) and _get_device is not None
                   and _get_stream is not None)
        _loaded = True


# Integer classes (interned strings: cheap to hash and compare).
_I32_LO, _I32_HI = -(1 << 31), (1 << 31) - 1
_I64_LO, _I64_HI = -(1 << 63), (1 << 63) - 1
_U64_HI = (1 << 64) - 1


class _Unsupported(Exception):
    pass


def spec_key(fn, device, args, kwargs, debug, instrumentation_mode):
    """The cache key of one launch (see the module docstring). Raises _Unsupported (or whatever
    an argument raises) for arguments it does not classify."""
    spec = [fn, device, debug, instrumentation_mode, len(args), len(kwargs)]
    spec += kwargs  # the names
    spec += kwargs.values()
    append = spec.append
    for a in args:
        t = type(a)
        if t is int:
            if a == 1:
                append("1")
            elif _I32_LO <= a <= _I32_HI:
                append("i32D" if a & 15 == 0 else "i32")
            elif _I64_LO <= a <= _I64_HI:
                append("i64D" if a & 15 == 0 else "i64")
            elif 0 <= a <= _U64_HI:
                append("u64D" if a & 15 == 0 else "u64")
            else:
                raise _Unsupported("integer out of range")
        elif a is None:
            append(None)
        elif t is float:
            append("fp32")
        elif t is _Tensor or t is _Parameter:
            append(a.dtype)
            append(a.data_ptr() & 15 == 0)
        elif t is bool:
            append("u1")
        else:
            raise _Unsupported(t.__name__)
    return tuple(spec)


def _hooks_clear() -> bool:
    """True when no launch hook would do anything (Triton's default: empty HookChains)."""
    for hook in (_runtime_knobs.launch_enter_hook, _runtime_knobs.launch_exit_hook):
        if hook is not None and (type(hook) is not _HookChain or hook.calls):
            return False
    return True


def _make_entry(fn, kernel, args, kwargs):
    """The launch entry for a kernel Triton just launched with these arguments, or _SLOW."""
    if not isinstance(kernel, _CompiledKernel):
        return None  # e.g. an async-compile future: try again next time
    params = fn.params
    if len(args) > len(params) or any(p.is_constexpr for p in params[:len(args)]):
        return _SLOW
    tail = []
    for p in params[len(args):]:
        if not p.is_constexpr:
            return _SLOW  # a runtime argument passed by keyword (its value is not in the key)
        if p.name in kwargs:
            tail.append(kwargs[p.name])
        elif p.has_default:
            tail.append(p.default)
        else:
            return _SLOW
    launcher = kernel.run  # initialises the handles (already done by the launch just made)
    if type(launcher).__name__ != "CudaLauncher" or kernel.function is None:
        return _SLOW
    globals_ = tuple((g, name, val) for (name, _), (val, g) in fn.used_global_vals.items())
    return (fn, launcher, kernel.function, kernel.packed_metadata, tuple(tail), globals_, kernel)


def _verify(fn, device, args, kwargs, entry):
    """check mode: Triton's own binder and cache lookup must pick this kernel and these arguments."""
    from triton.runtime.jit import compute_cache_key

    kernel_cache, kernel_key_cache, _, _, binder = fn.device_caches[device]
    kw = dict(kwargs)
    kw["debug"] = kw.get("debug", fn.debug) or _runtime_knobs.debug
    kw["instrumentation_mode"] = _compilation_knobs.instrumentation_mode
    bound, specialization, options = binder(*args, **kw)
    expected = kernel_cache.get(compute_cache_key(kernel_key_cache, specialization, options))
    if expected is not entry[6]:
        raise AssertionError(f"normkit.launch: Triton would launch another kernel for {fn} "
                             f"(specialization {specialization})")
    passed = tuple(args) + entry[4]
    if len(passed) != len(bound) or not all(map(_same_argument, passed, bound.values())):
        raise AssertionError(f"normkit.launch: arguments differ from Triton's bound arguments for {fn}")


def _same_argument(passed, bound) -> bool:
    """check mode: the fast launch passes what Triton bound — the object itself (the positional
    arguments), or for the constexprs the entry was filed with, one of the same type and value:
    an int above 256 is a new object each time it is computed (BLOCK_N = 1024 from another width)."""
    return passed is bound or (type(passed) is type(bound) and not isinstance(passed, _Tensor) and passed == bound)


def launch(fn, grid, *args, **kwargs) -> None:
    """``fn[grid](*args, **kwargs)``, through the launcher cache when it applies (module docstring)."""
    _launch(fn, grid, None, args, kwargs)


def launch_fitted(fn, grid_for, *args, **kwargs) -> tuple:
    """``fn[grid](*args, **kwargs)`` with grid = grid_for(kernel), where kernel is the
    `CompiledKernel` these arguments select (its `n_regs`, `metadata.shared` and
    `metadata.num_warps` say how many of its programs fit on a multiprocessor), or None under the
    interpreter. Compiles before choosing the grid when the kernel is new (`JITFunction.warmup`).
    Returns the grid launched. For persistent grids, whose programs must all be resident."""
    return _launch(fn, None, grid_for, args, kwargs)


def _launch(fn, grid, grid_for, args, kwargs):
    if not _loaded:
        _load_triton()
    if isinstance(fn, _InterpretedFunction):
        if grid_for is not None:
            grid = grid_for(None)
        with _interpreter_lock, rounded_casts():  # down-casts rounded as on the GPU (_runtime.rounded_casts)
            fn[grid](*args, **kwargs)
        return grid
    key = None
    if _enabled and _usable and (grid_for is not None or type(grid) is tuple) and isinstance(fn, _JITFunction):
        try:
            device = _get_device()
            # id(fn), not fn: JITFunction.__hash__ takes a lock; the entry holds fn and is
            # checked by identity below, so a recycled id cannot launch another kernel.
            key = spec_key(id(fn), device, args, kwargs, fn.debug or _runtime_knobs.debug,
                           _compilation_knobs.instrumentation_mode)
            entry = _cache.get(key)
        except Exception:  # unclassifiable argument, unhashable constexpr, no CUDA, …
            key = entry = None
        if entry is not None and entry is not _SLOW and entry[0] is fn and not fn.pre_run_hooks and _hooks_clear():
            _, launcher, function, packed, tail, globals_, _ = entry
            for g, name, val in globals_:
                if g.get(name, _MISSING) != val:
                    break  # Triton raises "Global variable ... has changed": let it
            else:
                if _check:
                    _verify(fn, device, args, kwargs, entry)
                if grid_for is not None:
                    grid = grid_for(entry[6])
                n = len(grid)
                launcher(grid[0], grid[1] if n > 1 else 1, grid[2] if n > 2 else 1, _get_stream(device),
                         function, packed, None, None, None, *args, *tail)
                return grid
    if grid_for is not None:
        kernel = fn.warmup(*args, grid=(1,), **kwargs)  # compiles (or finds) the kernel, launches nothing
        if isinstance(kernel, _CompiledKernel):
            kernel.run  # loads the binary: n_regs is known from here on
            if not hasattr(kernel, "n_regs"):
                # It failed to load before (OutOfResources: shared memory): Triton keeps that
                # error in `run` instead of raising it again on access. Raise it again.
                kernel.run()
        grid = grid_for(kernel if isinstance(kernel, _CompiledKernel) else None)
    kernel = fn[grid](*args, **kwargs)
    if key is not None and (entry is None or (entry is not _SLOW and entry[0] is not fn)):
        try:
            # Store only if nothing the key reads changed during the launch (another thread
            # flipping a knob, say): the kernel must be the one for this key.
            again = spec_key(id(fn), _get_device(), args, kwargs, fn.debug or _runtime_knobs.debug,
                             _compilation_knobs.instrumentation_mode)
            if again == key:
                entry = _make_entry(fn, kernel, args, kwargs)
                if entry is not None:
                    _cache[key] = entry
        except Exception:
            pass
    return grid
