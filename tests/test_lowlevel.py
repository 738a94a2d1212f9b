"""`normkit.lowlevel.backend` and `runtime_info`: which implementation runs, in each process setup."""

import os
import subprocess
import sys

import pytest
import torch

import normkit
from normkit import lowlevel

ON_GPU = torch.cuda.is_available()


def _in_fresh_process(code: str, interpret=None, hide_triton: bool = False) -> str:
    """stdout of `code` in a new interpreter; TRITON_INTERPRET unset (None) or set to `interpret`."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    if interpret is not None:
        env["TRITON_INTERPRET"] = interpret
    if hide_triton:  # as in a venv without triton: find_spec("triton") answers None
        code = "import sys; sys.modules['triton'] = None\n" + code
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_backend_in_this_process():
    # tests/conftest.py turns the interpreter on without a GPU
    assert lowlevel.backend("cpu") == ("reference" if ON_GPU else "interpreter")
    assert lowlevel.backend(torch.device("cpu")) == lowlevel.backend("cpu")
    if ON_GPU:
        assert lowlevel.backend("cuda") == "triton"
    info = lowlevel.runtime_info()
    assert info["normkit"] == normkit.__version__ and info["torch"] == torch.__version__
    assert info["triton"] is not None and info["cpu_backend"] == lowlevel.backend("cpu")
    assert (info["cuda_backend"] is None) == (info["cuda_device"] is None) == (not ON_GPU)


def test_backend_rejects_what_is_not_a_device():
    with pytest.raises(TypeError, match="device must be a torch.device or a str, got int"):
        lowlevel.backend(0)


@pytest.mark.skipif(ON_GPU, reason="the CPU setups")
@pytest.mark.parametrize("interpret, hide_triton, expected", [
    ("1", False, "interpreter"), ("0", False, "reference"), (None, False, "reference"),
    ("1", True, "reference"),
])
def test_backend_follows_the_interpreter_and_triton(interpret, hide_triton, expected):
    code = "from normkit import lowlevel; info = lowlevel.runtime_info(); print(lowlevel.backend('cpu'), info['triton'])"
    backend, triton_version = _in_fresh_process(code, interpret, hide_triton).split()
    assert backend == expected
    assert (triton_version == "None") == hide_triton
