"""normkit.RMSNorm / LayerNorm / FusedAddRMSNorm as a user swapping them for torch.nn's modules meets
them: mixed float64 dtypes, torch.autocast and torch.jit, compared with the stock torch.nn module."""

import pytest
import torch

import normkit
from normkit import modules

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


@pytest.mark.parametrize("cls,stock_cls", PAIRS, ids=["rms", "layer"])
def test_modules_under_gpu_autocast_rule_give_stock_dtype(cls, stock_cls, monkeypatch):
    """On GPUs torch registers layer_norm and rms_norm as autocast float32 ops: torch.nn's modules give a
    bf16 x a float32 y there. The drop-ins follow the rule torch's dispatcher states; here the CPU is given
    the GPU's registration, and stock is run as autocast runs it."""
    monkeypatch.setattr(modules, "_has_autocast_kernel", lambda op, device_type: True)
    ours, stock = _pair(cls, stock_cls, 16, F32, "cpu")
    g = torch.Generator().manual_seed(1)
    x, dy = (torch.randn(4, 16, generator=g).to(BF16) for _ in range(2))
    with torch.autocast("cpu", dtype=BF16):
        y, dx, dweight = _run(ours, x, dy.float())
    y_ref, dx_ref, dweight_ref = _run(stock, x.float(), dy.float())  # autocast's float32 policy: x.float()
    assert y.dtype == F32 and dx.dtype == BF16 and dweight.dtype == F32
    torch.testing.assert_close(y, y_ref, **LOW[F32])
    torch.testing.assert_close(dx, dx_ref.to(BF16))
    torch.testing.assert_close(dweight, dweight_ref, **LOW[F32])


@pytest.mark.parametrize("cls,stock_cls", PAIRS, ids=["rms", "layer"])
def test_modules_under_autocast_compute_what_stock_computes(cls, stock_cls, device):
    """Under torch.autocast y has the dtype stock gives (float32 on GPUs, bf16 on the CPU)."""
    ours, stock = _pair(cls, stock_cls, 64, F32, device)
    g = torch.Generator().manual_seed(2)
    x, dy = (torch.randn(6, 64, generator=g).to(device=device, dtype=BF16) for _ in range(2))
    with torch.autocast(device, dtype=BF16):
        got, want = _run(ours, x, dy), _run(stock, x, dy)
    for a, b, what in zip(got, want, ("y", "dx", "dweight")):
        assert a.dtype == b.dtype, what
        torch.testing.assert_close(a.double(), b.double(), msg=what, **LOW[_coarser(a.dtype, BF16)])


def test_autocast_rule_is_read_from_torch_dispatcher():
    """normkit's modules, patched ones too, cast x to float32 under autocast where torch registers the op for
    autocast: layer_norm on CUDA; rms_norm on CUDA as the installed torch says (torch 2.11 does not register
    it, 2.13 does); neither on the CPU. On a GPU, test_patch_hunt checks the dtype against stock's."""
    assert modules._has_autocast_kernel("aten::layer_norm", "cuda")
    for op in ("aten::layer_norm", "aten::rms_norm"):
        assert not modules._has_autocast_kernel(op, "cpu")
        assert modules._has_autocast_kernel(op, "cuda") is torch._C._dispatch_has_kernel_for_dispatch_key(
            op, "AutocastCUDA")


@pytest.mark.parametrize("cls", [normkit.RMSNorm, normkit.LayerNorm])
def test_modules_under_autocast_compile_without_a_graph_break(cls, device):
    """torch.compile(fullgraph=True) raises on a graph break: the dispatcher query is not traced."""
    module = cls((2, 8), device=device)
    compiled = torch.compile(module, fullgraph=True, backend="inductor" if device == "cuda" else "aot_eager")
    x = torch.randn(3, 2, 8, device=device, dtype=BF16)
    with torch.autocast(device, dtype=BF16):
        y, y_eager = compiled(x), module(x)
    assert y.dtype == y_eager.dtype
    torch.testing.assert_close(y, y_eager)


@pytest.mark.parametrize("make", [lambda: normkit.RMSNorm(8), lambda: normkit.LayerNorm(8),
                                  lambda: normkit.FusedAddRMSNorm(8),
                                  lambda: torch.nn.Sequential(torch.nn.Linear(8, 8), normkit.RMSNorm(8))],
                         ids=["rms", "layer", "fused_add", "inside_a_model"])
def test_torch_jit_script_is_a_type_error_naming_what_works(make):
    """TorchScript cannot compile normkit's autograd Functions and Triton launches: one TypeError that
    says so and names what does work, not a TorchScript error about the module's source."""
    with pytest.raises(TypeError, match=r"^normkit\.\w+ cannot be compiled by torch\.jit\.script .*torch\.jit\.trace"):
        torch.jit.script(make())


@pytest.mark.parametrize("cls,stock_cls", PAIRS, ids=["rms", "layer"])
def test_torch_jit_trace_computes_what_stock_computes(cls, stock_cls):
    ours, stock = _pair(cls, stock_cls, (2, 4), F32, "cpu")
    with pytest.warns(torch.jit.TracerWarning):  # (the shape checks become constants of the trace)
        traced = torch.jit.trace(ours, torch.randn(3, 2, 4))
    x = torch.randn(5, 2, 4)
    torch.testing.assert_close(traced(x), stock(x), **LOW[F32])


def test_fused_add_module_names_a_missing_residual():
    """forward(x, residual) without a residual: the error names residual, not rms_norm's prenorm."""
    with pytest.raises(TypeError, match=r"^residual must be a torch\.Tensor of x's shape \(2, 8\), got NoneType$"):
        normkit.FusedAddRMSNorm(8)(torch.randn(2, 8), None)
