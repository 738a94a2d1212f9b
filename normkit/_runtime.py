"""Where kernels can run in this process, decided once at import.

Triton reads TRITON_INTERPRET when a kernel is decorated, so normkit reads it once too: with
TRITON_INTERPRET=1 the Triton kernels run on CPU tensors through Triton's interpreter (how CI
tests them); otherwise CPU tensors take the plain-PyTorch path in `normkit.reference`.
"""

import functools
import os

import torch

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"

try:  # Triton is optional on CPU-only machines (the PyTorch path needs none).
    import triton  # noqa: F401

    HAS_TRITON = True
except ImportError:  # pragma: no cover - depends on the install
    HAS_TRITON = False


def uses_triton(device: torch.device) -> bool:
    """True when tensors on `device` are handled by the Triton kernels."""
    if not HAS_TRITON:
        return False
    return device.type == "cuda" or (INTERPRET and device.type == "cpu")


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
