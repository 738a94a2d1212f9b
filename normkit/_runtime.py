"""Where kernels execute in this process.

Triton decides between compiled kernels and its CPU interpreter when a kernel is decorated, from
TRITON_INTERPRET. normkit therefore imports its kernels lazily, at the first launch, so that a
caller (or `python -m normkit` on a machine without a GPU) can still set TRITON_INTERPRET=1 after
`import normkit`. From then on the mode is fixed: with the interpreter the Triton kernels take
CPU tensors (how CI tests them); otherwise CPU tensors take the plain-PyTorch path in
`normkit.reference`.
"""

import functools
import importlib.util

import torch

HAS_TRITON = importlib.util.find_spec("triton") is not None  # optional on CPU-only machines


@functools.lru_cache(maxsize=None)
def kernels():
    """The `normkit.kernels` module, imported on first use (TRITON_INTERPRET is read then)."""
    from . import kernels as module

    return module


def interpret() -> bool:
    """True when the kernels execute in Triton's interpreter (on CPU tensors)."""
    return HAS_TRITON and kernels().INTERPRETED


def uses_triton(device: torch.device) -> bool:
    """True when tensors on `device` are handled by the Triton kernels."""
    if not HAS_TRITON:
        return False
    return device.type == "cuda" or (device.type == "cpu" and interpret())


def multiprocessor_count(device: torch.device) -> int:
    """SM count of a CUDA device (cached per index: no device query on every call's hot path).

    Off CUDA (the interpreter) it answers 4: a few programs exercise the persistent loop of the
    backward without making the interpreter slow.
    """
    if device.type != "cuda":
        return 4
    return _cuda_multiprocessor_count(device.index if device.index is not None else torch.cuda.current_device())


@functools.lru_cache(maxsize=None)
def _cuda_multiprocessor_count(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def dependent_launch(device: torch.device) -> bool:
    """Whether the backward's finisher may use programmatic dependent launch on `device`: compiled
    kernels on a GPU of compute capability 9.0 or newer (`griddepcontrol` is sm_90+ PTX)."""
    if device.type != "cuda" or interpret():
        return False
    return _cuda_capability(device.index if device.index is not None else torch.cuda.current_device()) >= (9, 0)


@functools.lru_cache(maxsize=None)
def _cuda_capability(index: int) -> tuple:
    return torch.cuda.get_device_capability(index)


def multiprocessor_limits(device: torch.device) -> tuple:
    """(registers, threads, shared-memory bytes) one multiprocessor of a CUDA device holds — what
    bounds how many programs of a compiled kernel are resident at once (`config.resident_programs`).
    Cached per device index."""
    return _cuda_multiprocessor_limits(device.index if device.index is not None else torch.cuda.current_device())


@functools.lru_cache(maxsize=None)
def _cuda_multiprocessor_limits(index: int) -> tuple:
    props = torch.cuda.get_device_properties(index)
    # (older torch builds lack some fields: the sm_80/sm_90 values stand in)
    return (getattr(props, "regs_per_multiprocessor", 65536), props.max_threads_per_multi_processor,
            getattr(props, "shared_memory_per_multiprocessor", 233472))

