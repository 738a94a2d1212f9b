"""Where the challenge runs: the GPU, or the CPU through Triton's interpreter."""

import importlib.util

import torch

_HOW = "(e.g. `TRITON_INTERPRET=1 python -m normkit challenge ...`)"


def challenge_device() -> torch.device:
    """"cuda" when a GPU is visible, "cpu" when Triton's interpreter is on, else a RuntimeError.

    The challenge exists to run Triton kernels; on a CPU without the interpreter normkit would
    silently take its plain-PyTorch path instead, so that is refused. The interpreter is read
    from Triton's own setting (TRITON_INTERPRET), which must not change once kernels are made.
    """
    if torch.cuda.is_available():
        return torch.device("cuda")
    if importlib.util.find_spec("triton") is None:
        raise RuntimeError("the challenge runs Triton kernels, which need a CUDA GPU or Triton's interpreter: no "
                           f"GPU is visible and triton is not installed; pip install triton, then set "
                           f"TRITON_INTERPRET=1 {_HOW}")
    from triton import knobs

    if knobs.runtime.interpret:
        return torch.device("cpu")
    raise RuntimeError("the challenge runs Triton kernels, which need a CUDA GPU or Triton's interpreter: no GPU "
                       f"is visible and TRITON_INTERPRET is off; set TRITON_INTERPRET=1 before Python starts {_HOW}")
