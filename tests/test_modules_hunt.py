"""normkit.RMSNorm / LayerNorm / FusedAddRMSNorm as a user swapping them for torch.nn's modules meets
them: mixed float64 dtypes, torch.autocast and torch.jit, compared with the stock torch.nn module."""

import pytest
import torch

import normkit

F64, F32, BF16 = torch.float64, torch.float32, torch.bfloat16
PAIRS = [(normkit.RMSNorm, torch.nn.RMSNorm), (normkit.LayerNorm, torch.nn.LayerNorm)]
LOW = {F32: dict(rtol=1e-5, atol=1e-6), BF16: dict(rtol=2e-2, atol=2e-2), F64: dict(rtol=1e-12, atol=1e-12)}


def _pair(cls, stock_cls, shape, dtype, device):
    """(normkit module, stock module) with the same random parameters."""
    ours = cls(shape, device=device, dtype=dtype)
    stock = stock_cls(shape, device=device, dtype=dtype)
    with torch.no_grad():
        for p in ours.parameters():
            p.normal_(1.0, 0.3)
    stock.load_state_dict(ours.state_dict())
    return ours, stock


def _run(module, x, dy):
    x = x.clone().requires_grad_()
    y = module(x)
    y.backward(dy.to(y.dtype))
    return y, x.grad, module.weight.grad


def _coarser(a, b):
    return a if torch.finfo(a).eps > torch.finfo(b).eps else b


@pytest.mark.parametrize("weight_dtype,x_dtype", [(F32, F64), (F64, F32), (F64, BF16), (BF16, F64)])
@pytest.mark.parametrize("shape", [8, (2, 4)])
def test_rms_norm_module_takes_float64_beside_other_parameter_dtypes(weight_dtype, x_dtype, shape, device):
    """torch.nn.RMSNorm computes float64 x with a float32 weight (and the other way round): y in x's
    dtype, dweight in the weight's. The drop-in gives the same: torch's forward runs (normkit's kernels
    keep float64 apart)."""
    ours, stock = _pair(normkit.RMSNorm, torch.nn.RMSNorm, shape, weight_dtype, device)
    g = torch.Generator().manual_seed(0)
    tail = (shape,) if isinstance(shape, int) else shape
    x, dy = (torch.randn(3, *tail, generator=g, dtype=F64).to(device=device, dtype=x_dtype) for _ in range(2))
    got, want = _run(ours, x, dy), _run(stock, x, dy)
    tol = LOW[_coarser(weight_dtype, x_dtype)]
    for a, b, what in zip(got, want, ("y", "dx", "dweight")):
        assert a.dtype == b.dtype, what
        torch.testing.assert_close(a, b, msg=what, **tol)
