"""Where the challenge runs: the GPU, or the CPU through Triton's interpreter."""

import torch

from .._runtime import uses_triton


def challenge_device() -> torch.device:
    """"cuda" when a GPU is visible, "cpu" under TRITON_INTERPRET=1, else a RuntimeError.

    The challenge exists to run normkit's Triton kernels; on a CPU without the interpreter they
    would silently be replaced by the plain-PyTorch path, so that is refused instead.
    """
    if torch.cuda.is_available():
        return torch.device("cuda")
    if uses_triton(torch.device("cpu")):
        return torch.device("cpu")
    raise RuntimeError(
        "the challenge runs normkit's Triton kernels, which need a CUDA GPU or Triton's interpreter: "
        "no GPU is visible, so set TRITON_INTERPRET=1 in the environment before Python starts "
        "(e.g. `TRITON_INTERPRET=1 python -m normkit challenge ...`) and install triton")
