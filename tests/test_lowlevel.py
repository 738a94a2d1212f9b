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


@pytest.mark.parametrize("call,name", [
    (lambda x, w, dy: normkit.rms_norm_fwd(x, w, store_rstd="no"), "store_rstd"),
    (lambda x, w, dy: normkit.layer_norm_fwd(x, w, store_rstd=1), "store_rstd"),
    (lambda x, w, dy: normkit.rms_norm_bwd(x, w, dy, has_bias="yes"), "has_bias"),
    (lambda x, w, dy: normkit.layer_norm_bwd(x, w, dy, has_residual=None), "has_residual"),
])
def test_bool_arguments_take_bools_only(call, name, device):
    """A truthy string or an int is not a bool: it used to act as True, silently."""
    x, w = torch.randn(2, 8, device=device), torch.rand(8, device=device)
    with pytest.raises(TypeError, match=f"{name} must be a bool"):
        call(x, w, torch.randn_like(x))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_llama_casting_through_the_low_level_calls(dtype, device):
    """casting_mode="llama" in rms_norm_fwd / rms_norm_bwd is the autograd function's: the same y and
    the same gradients, bitwise; and it differs from "fp32" casting (x̂ rounded before the weight)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 96, generator=g).to(device=device, dtype=dtype).requires_grad_()
    w = (1 + 0.3 * torch.randn(96, generator=g)).to(device=device, dtype=dtype).requires_grad_()
    dy = torch.randn(6, 96, generator=g).to(device=device, dtype=dtype)
    y = normkit.rms_norm(x, w, eps=1e-6, casting_mode="llama")
    dx, dw = torch.autograd.grad(y, (x, w), dy)
    out, _, rstd = normkit.rms_norm_fwd(x.detach(), w.detach(), eps=1e-6, store_rstd=True, casting_mode="llama")
    dx_low, dw_low, _, _ = normkit.rms_norm_bwd(x.detach(), w.detach(), dy, rstd, eps=1e-6, casting_mode="llama")
    assert torch.equal(out, y) and torch.equal(dx_low, dx) and torch.equal(dw_low, dw)
    fp32, _, _ = normkit.rms_norm_fwd(x.detach(), w.detach(), eps=1e-6)
    assert not torch.equal(fp32, out)
    with pytest.raises(ValueError, match="casting_mode must be one of"):
        normkit.rms_norm_fwd(x.detach(), w.detach(), casting_mode="gemma")
