"""Host paths: the forward's checks on a grid of odd arguments, and the autograd shortcuts.

* `validation.check_fwd` over a grid of valid and invalid arguments (subclasses, meta tensors,
  unhashable dtype arguments, bools, NaN/inf): it returns eps or raises ValueError/TypeError with
  a message naming the argument — never another exception.
* `functional` calls NormFunction through the C-level apply and skips reshape/view for 2-D
  inputs: same values, gradients, output shapes and autograd errors as `NormFunction.apply`.
"""

import itertools
import math

import pytest
import torch

import normkit
from normkit import functional, validation


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as exc:  # noqa: BLE001 - the outcome is what is compared
        return (type(exc), str(exc))


class _Sub(torch.Tensor):
    pass


def _tensors(n):
    yield None
    for dtype in (torch.float32, torch.bfloat16, torch.float64, torch.int32):
        yield torch.zeros(n, dtype=dtype)
    yield torch.zeros(n + 1)
    yield torch.zeros(3, n)
    yield torch.zeros((), dtype=torch.float32)
    yield torch.zeros(n, device="meta")
    yield torch.nn.Parameter(torch.zeros(n))
    yield torch.zeros(n).as_subclass(_Sub)
    yield [0.0] * n


NAMES = ("x", "weight", "bias", "residual", "eps", "weight_offset", "out_dtype", "residual_dtype", "dtype")


def _assert_clear(outcome, args, kwargs):
    """eps back as a float, or a ValueError/TypeError whose message names an argument."""
    kind, value = outcome
    if kind == "ok":
        assert isinstance(value, float) and value == float(kwargs["eps"]), (args, kwargs)
    else:
        assert kind in (ValueError, TypeError), (kind, value, args, kwargs)
        assert any(name in value for name in NAMES), (value, args, kwargs)


def test_check_fwd_on_a_grid_of_odd_arguments():
    n = 8
    xs = [torch.zeros(4, n), torch.zeros(2, 3, n), torch.zeros(4, n, dtype=torch.float64),
          torch.zeros(4, n, dtype=torch.bfloat16), torch.nn.Parameter(torch.zeros(4, n)), torch.zeros(4, 0),
          torch.zeros(()), torch.zeros(4, n, dtype=torch.int64), torch.zeros(4, n, device="meta"),
          torch.zeros(4, n).as_subclass(_Sub), "x"]
    weights = list(_tensors(n))
    residuals = [None, torch.zeros(4, n), torch.zeros(4, n, dtype=torch.float64), torch.zeros(4, n + 1),
                 torch.zeros(4, n, device="meta"), torch.zeros(2, 3, n)]
    scalars = [(1e-6, 0.0), (0.0, 1.0), (-0.0, -1.5), (-1e-6, 0.0), (math.nan, 0.0), (math.inf, 0.0), (1e-6, math.nan),
               (1e-6, math.inf), (1, 0.0), (1e-6, 0), (True, 0.0), (1e-6, False), ("e", 0.0), (1e-6, 2.0)]
    dtype_args = [(None, None), (torch.float16, None), (None, torch.float64), (None, torch.float32), (torch.int8, None),
                  ([1], None), (None, "fp32")]
    cases = 0
    for x, (eps, offset) in itertools.product(xs, scalars):
        for weight, bias in itertools.product(weights, weights[:4] + [torch.zeros(3, n)]):
            for residual, (out_dtype, residual_dtype) in itertools.product(residuals[:2], dtype_args[:3]):
                args = (x, weight, bias, residual)
                kwargs = dict(eps=eps, weight_offset=offset, out_dtype=out_dtype, residual_dtype=residual_dtype)
                _assert_clear(_outcome(lambda: validation.check_fwd(*args, **kwargs)), args, kwargs)
                cases += 1
        for residual, (out_dtype, residual_dtype) in itertools.product(residuals, dtype_args):
            args = (x, weights[1], None, residual)
            kwargs = dict(eps=eps, weight_offset=offset, out_dtype=out_dtype, residual_dtype=residual_dtype)
            _assert_clear(_outcome(lambda: validation.check_fwd(*args, **kwargs)), args, kwargs)
            cases += 1
    assert cases > 5000


def test_per_head_parameters_pass_the_checks():
    x = torch.zeros(2, 4, 8)
    assert validation.check_fwd(x, torch.zeros(4, 8), torch.zeros(4, 8), eps=1e-6) == 1e-6
    with pytest.raises(ValueError, match=r"bias must have weight's shape \(4, 8\), got \(8,\)"):
        validation.check_fwd(x, torch.zeros(4, 8), torch.zeros(8), eps=1e-6)
    with pytest.raises(ValueError, match=r"weight of shape \(4, 8\) is a per-head"):
        validation.check_fwd(torch.zeros(32), torch.zeros(4, 8), eps=1e-6)


@pytest.mark.parametrize("shape", [(6, 16), (2, 3, 16), (16,)])
@pytest.mark.parametrize("prenorm", [False, True])
def test_c_level_apply_matches_function_apply(shape, prenorm, device):
    g = torch.Generator().manual_seed(0)
    make = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64).to(device).requires_grad_()  # noqa: E731
    x, r, w, b = make(*shape), make(*shape), make(16), make(16)
    dy = torch.randn(*shape, generator=g, dtype=torch.float64).to(device)
    out_fast = normkit.rms_norm(x, w, b, r, prenorm=prenorm)
    y = out_fast[0] if prenorm else out_fast
    assert y.shape == x.shape
    grads_fast = torch.autograd.grad(y, (x, w, b, r), dy)
    # the same through the Python Function.apply and the reshape/view path
    n = shape[-1]
    ref = functional.NormFunction.apply(x.reshape(-1, n), w, b, r.reshape(-1, n), None, 1e-6, 0.0, True, None, None,
                                        None)
    y_ref = ref[0].view(x.shape)
    grads_ref = torch.autograd.grad(y_ref, (x, w, b, r), dy)
    assert torch.equal(y, y_ref)
    if prenorm:
        assert out_fast[1].shape == x.shape and torch.equal(out_fast[1], ref[1].view(x.shape))
    for a, c in zip(grads_fast, grads_ref):
        assert torch.equal(a, c)


def test_functorch_transform_still_reaches_function_apply():
    """Under torch.vmap the C-level apply would see batched tensors; NormFunction.apply runs its vmap rule."""
    x = torch.randn(3, 4, 8, dtype=torch.float64)
    w = torch.randn(8, dtype=torch.float64)
    torch.testing.assert_close(torch.vmap(lambda t: normkit.rms_norm(t, w))(x), normkit.rms_norm(x, w),
                               rtol=1e-14, atol=1e-14)


def test_a_plain_cpu_call_imports_no_triton():
    """With TRITON_INTERPRET off, a CPU call takes the plain-PyTorch path without importing Triton or
    building the kernels (the first call's cost) or Dynamo (import normkit's), gives torch's values, and the mode stays fixed:
    turning the interpreter on afterwards is refused with a clear error, not half-applied."""
    import os
    import subprocess
    import sys

    code = """
import os, sys, torch, normkit
from normkit import _runtime
x, w = torch.randn(8, 64, dtype=torch.float64), torch.randn(64, dtype=torch.float64)
y = normkit.rms_norm(x, w)
torch.testing.assert_close(y, torch.nn.functional.rms_norm(x, (64,), w, 1e-6), rtol=1e-12, atol=1e-12)
assert "triton" not in sys.modules and not _runtime.interpret()
assert "torch._dynamo" not in sys.modules  # (import time: Dynamo alone costs about a second)
os.environ["TRITON_INTERPRET"] = "1"
try:
    _runtime.kernels()
except RuntimeError as error:
    assert "set it before the first call" in str(error), error
else:
    raise AssertionError("no error")
assert normkit.lowlevel.backend("cpu") == "reference"
"""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
