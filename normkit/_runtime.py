"""Where kernels execute in this process.

Triton decides between compiled kernels and its CPU interpreter when a kernel is decorated, from
TRITON_INTERPRET. normkit therefore imports its kernels lazily, at the first launch, so that a
caller (or `python -m normkit` on a machine without a GPU) can still set TRITON_INTERPRET=1 after
`import normkit`. From then on the mode is fixed: with the interpreter the Triton kernels take
CPU tensors (how CI tests them); otherwise CPU tensors take the plain-PyTorch path in
`normkit.reference`. Interpreted launches round their down-casts to 2-byte floats as the GPU does
(`rounded_casts`, below).

Also what the launches need to know of a GPU, read once per device: its `config.Device` record (`target`)
and whether its kernels may carry inline PTX (`inline_ptx`; docs/design.md#heuristics). Two environment
variables, read once: NORMKIT_PORTABLE=1 compiles the portable Triton in place of every piece of inline PTX
on NVIDIA GPUs too; NORMKIT_ARCH=generic (or sm90) forces the heuristics' table set.
"""

import functools
import importlib.util
import os
import re
import sys
import warnings

import torch

HAS_TRITON = importlib.util.find_spec("triton") is not None  # optional on CPU-only machines


_INTERPRETED = None  # the mode, decided at the first question (see interpret)
_OFF = ("", "0", "false", "no", "off", "n")  # TRITON_INTERPRET values Triton reads as off


@functools.lru_cache(maxsize=None)
def kernels():
    """The `normkit.kernels` module, imported on first use (TRITON_INTERPRET is read then)."""
    from . import kernels as module

    if _INTERPRETED is False and module.INTERPRETED:
        raise RuntimeError("TRITON_INTERPRET was turned on after normkit's first call had chosen its plain-PyTorch "
                           "CPU path: set it before the first call, or not at all when using a GPU")
    return module


def interpret() -> bool:
    """True when the kernels execute in Triton's interpreter (on CPU tensors). Decided once: with
    TRITON_INTERPRET off and Triton not yet imported, without importing either (a CPU-only first call
    on the plain-PyTorch path then costs no Triton import); otherwise from how the kernels were built."""
    global _INTERPRETED
    if _INTERPRETED is None:
        if not HAS_TRITON:
            _INTERPRETED = False
        elif "triton" not in sys.modules and os.environ.get("TRITON_INTERPRET", "").strip().lower() in _OFF:
            _INTERPRETED = False
        else:
            _INTERPRETED = kernels().INTERPRETED
    return _INTERPRETED


# The oldest Triton each way of running the kernels is checked with: compiled, 3.3 (`tools/compile_check.py
# --targets …` passes under 3.3-3.6; 3.2 rejects a None pipelining depth); the CPU interpreter, 3.4 (3.3's cannot
# build a boolean constant). With an older one normkit warns once and takes the plain-PyTorch path.
MIN_TRITON = {"compiled": (3, 3), "interpreter": (3, 4)}


def uses_triton(device: torch.device) -> bool:
    """True when tensors on `device` are handled by the Triton kernels."""
    if not HAS_TRITON:
        return False
    if device.type == "cuda":
        return triton_supported("compiled")
    return device.type == "cpu" and interpret() and triton_supported("interpreter")


@functools.lru_cache(maxsize=None)
def triton_supported(way: str) -> bool:
    """Whether the installed Triton is at least MIN_TRITON[way]; if not, one warning naming both versions."""
    import triton

    found = tuple(int(part) for part in re.findall(r"\d+", triton.__version__)[:2])
    if found >= MIN_TRITON[way]:
        return True
    oldest = ".".join(map(str, MIN_TRITON[way]))
    hint = " (PyTorch >= 2.7 ships it)" if way == "compiled" else ""
    warnings.warn(f"normkit's {way} kernels need Triton >= {oldest}, found {triton.__version__}: normkit runs its "
                  f"plain-PyTorch path instead (correct, slower). pip install 'triton>={oldest}'{hint}",
                  RuntimeWarning, stacklevel=3)
    return False


def multiprocessor_count(device: torch.device) -> int:
    """SM (CU) count of a GPU (cached per index: no device query on every call's hot path).

    Off CUDA (the interpreter) it answers 4: a few programs exercise the persistent loop of the
    backward without making the interpreter slow.
    """
    if device.type != "cuda":
        return 4
    return _device(_index(device)).multiprocessors


def _index(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


def target(device: torch.device):
    """The `config.Device` record of a GPU (None off CUDA): what the heuristics read of it (cached per index)."""
    if device.type != "cuda":
        return None
    return _device(_index(device))


@functools.lru_cache(maxsize=None)
def _device(index: int):
    from .config.device import from_properties

    return from_properties(torch.cuda.get_device_properties(index), hip=torch.version.hip is not None,
                           forced_ladder=_environment("NORMKIT_ARCH", ("", "sm90", "generic")))


def _environment(name: str, allowed: tuple) -> str:
    value = os.environ.get(name, "").strip().lower()
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(repr(a) for a in allowed)}, got {value!r}")
    return value


@functools.lru_cache(maxsize=None)
def portable() -> bool:
    """NORMKIT_PORTABLE=1: no inline PTX on NVIDIA GPUs either (read once: launch plans keep what ran)."""
    return _environment("NORMKIT_PORTABLE", ("", "0", "1")) == "1"


def inline_ptx(device: torch.device) -> bool:
    """Whether kernels launched on `device` may carry inline PTX (kernels/ptx.py): compiled kernels on an NVIDIA
    GPU — not under ROCm (whose GPUs torch also calls "cuda"), not in the interpreter, not with
    NORMKIT_PORTABLE=1."""
    return device.type == "cuda" and torch.version.hip is None and not interpret() and not portable()


def dependent_launch(device: torch.device) -> bool:
    """Whether the backward's finisher may use programmatic dependent launch on `device`: inline PTX allowed
    (`griddepcontrol` is PTX) on a GPU of compute capability 9.0 or newer."""
    if not inline_ptx(device):
        return False
    return _cuda_capability(_index(device)) >= (9, 0)


@functools.lru_cache(maxsize=None)
def _cuda_capability(index: int) -> tuple:
    return torch.cuda.get_device_capability(index)


def multiprocessor_limits(device: torch.device) -> tuple:
    """(registers, threads, shared-memory bytes) one multiprocessor of a GPU holds (cached per device index)."""
    record = target(device)
    return record.registers_per_multiprocessor, record.threads_per_multiprocessor, record.shared_per_multiprocessor


def resident_programs(kernel, device: torch.device) -> int:
    """How many programs of a compiled kernel one multiprocessor of `device` holds at once (registers,
    threads, shared memory: `config.Device.resident`)."""
    return target(device).resident(kernel.n_regs, kernel.metadata.num_warps, kernel.metadata.shared)


# ---- The interpreter's down-casts (docs/design.md#cpu-path) -----------------------------------------
# Triton 3.6's interpreter truncates float32 → bfloat16 (and mangles float64 → bfloat16, subnormals and
# signalling NaNs); the GPU's cvt.rn rounds to nearest even. normkit's launches run with `cast_impl`
# of the interpreter's builder replaced by `_rounded_cast` (launch.py), so CPU results are the GPU's bits.

_CANONICAL_NAN = 0x7FFF  # what cvt.rn.bf16.f32 / cvt.rn.f16.f32 write for every NaN (torch's CPU casts vary)


def bfloat16_bits(values):
    """The bfloat16 bit patterns (numpy uint16) of float32 or float64 `values`, rounded to nearest even
    as the GPU's cvt.rn.bf16 and torch's `.to(torch.bfloat16)`: float64 is first rounded to odd in
    float32, whose 24 bits (≥ 8 + 2) make the second rounding exact."""
    import numpy as np

    if values.dtype == np.float64:
        values = _round_to_odd_float32(values)
    bits = np.array(values, dtype=np.float32, order="C").view(np.uint32).astype(np.uint64)  # (0-d stays 0-d)
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # + half an ulp, less one where the kept lsb is 0
    return np.where(nan, _CANONICAL_NAN, rounded).astype(np.uint16)


def _round_to_odd_float32(values):
    """float64 → float32 rounded toward zero, with the last bit set where that was inexact."""
    import numpy as np

    with np.errstate(over="ignore", invalid="ignore"):
        nearest = np.array(values, dtype=np.float32, order="C")
        back = nearest.astype(np.float64)
        inexact = back != values  # (NaN stays NaN whatever its last bit)
        bits = nearest.view(np.uint32)
        toward_zero = np.where(inexact & (np.abs(back) > np.abs(values)), bits - np.uint32(1), bits)
    return np.array(toward_zero | inexact.astype(np.uint32), dtype=np.uint32).view(np.float32)


def float16_bits(values):
    """The float16 bit patterns (numpy uint16) of float32 or float64 `values`, rounded to nearest even
    (numpy's cast, directly from float64 too), NaN as the GPU writes it."""
    import numpy as np

    with np.errstate(over="ignore", invalid="ignore"):
        half = np.array(values, dtype=np.float16, order="C").view(np.uint16)
    return np.where(np.isnan(values), _CANONICAL_NAN, half).astype(np.uint16)


def _rounded_cast(inner):
    """A `cast_impl(src, dst_type)` for the interpreter's builder: float32 / float64 → bfloat16 / float16
    rounded to nearest even; every other cast by `inner` (the builder's own)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    def cast_impl(src, dst_type):
        source, target = src.dtype.scalar, dst_type.scalar
        if source in (tl.float32, tl.float64) and isinstance(src.data, np.ndarray):
            if target == tl.bfloat16:
                return TensorHandle(bfloat16_bits(src.data), target)  # (the interpreter holds bf16 as uint16)
            if target == tl.float16:
                return TensorHandle(float16_bits(src.data).view(np.float16), target)
        return inner(src, dst_type)

    return cast_impl


@functools.lru_cache(maxsize=None)
def _interpreter_builder():
    """The builder of Triton's interpreter when `_rounded_cast` can take over its casts — it has a
    `cast_impl` that `create_fp_trunc` calls, and with it replaced a float32 → bfloat16 cast of a
    tie and of a round-up comes out rounded to nearest even — else None: the interpreter's own casts
    stand (another Triton version; nothing is patched, nothing warned)."""
    try:
        import numpy as np
        import triton.language as tl
        from triton.runtime import interpreter

        builder = interpreter.interpreter_builder
        probe = interpreter.TensorHandle(np.array([1.00390625, 1.01171875, 1.0 + 2.0 ** -8 + 2.0 ** -20],
                                                  dtype=np.float32), tl.float32)
        trial = type(builder)()  # a builder of its own: the probe patches nothing a launch may be using
        with _casts_replaced(trial):
            out = trial.create_fp_trunc(probe, tl.bfloat16)
        if out.dtype != tl.bfloat16 or np.asarray(out.data).view(np.uint16).tolist() != [0x3F80, 0x3F82, 0x3F81]:
            return None
        return builder
    except Exception:  # different internals: leave the interpreter as it is
        return None


class _casts_replaced:
    """`builder.cast_impl` replaced by `_rounded_cast` of the one it had, for the `with` block."""

    def __init__(self, builder):
        self.builder = builder

    def __enter__(self):
        self.saved = self.builder.__dict__.get("cast_impl")
        self.builder.cast_impl = _rounded_cast(self.builder.cast_impl)
        return True

    def __exit__(self, *exc):
        if self.saved is None:
            del self.builder.cast_impl
        else:
            self.builder.cast_impl = self.saved
        return False


class _Unchanged:
    """`rounded_casts` where the interpreter's casts cannot be replaced: nothing happens."""

    def __enter__(self):
        return False

    def __exit__(self, *exc):
        return False


def rounded_casts():
    """Context for an interpreted launch (launch.py holds the interpreter's lock around it): inside,
    the interpreter's float32 / float64 → bfloat16 / float16 casts round to nearest even, as the GPU's;
    outside, Triton code that is not normkit's keeps the interpreter's own. `with` gives True when the
    casts were replaced, False where this Triton's interpreter could not be (`_interpreter_builder`)."""
    builder = _interpreter_builder()
    return _casts_replaced(builder) if builder is not None else _Unchanged()


def interpreter_rounds_to_nearest() -> bool:
    """True when normkit's interpreted launches round down-casts to nearest even (`rounded_casts`)."""
    return HAS_TRITON and _interpreter_builder() is not None
