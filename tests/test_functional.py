"""Autograd (`normkit.rms_norm`), the module drop-in, torch.compile and the CPU PyTorch path."""

import pytest
import torch

import normkit
from normkit import launchers
from tests.utils import assert_matches, make_inputs

DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _reference_autograd(x, w, dy, eps):
    """float64 autograd of the plain formula: the gradients everything is compared with."""
    x64 = x.detach().double().cpu().requires_grad_()
    w64 = None if w is None else w.detach().double().cpu().requires_grad_()
    y = x64 * torch.rsqrt(x64.square().mean(-1, keepdim=True) + eps)
    if w64 is not None:
        y = y * w64
    y.backward(dy.double().cpu())
    return y.detach(), x64.grad, None if w64 is None else w64.grad


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (6, 130), (2, 3, 1000)])
def test_rms_norm_autograd_matches_float64(shape, dtype, device):
    m, n = int(torch.tensor(shape[:-1]).prod()), shape[-1]
    x, w, dy = make_inputs(m, n, dtype, device)
    x, dy = x.view(shape).requires_grad_(), dy.view(shape)
    w.requires_grad_()
    y = normkit.rms_norm(x, w, eps=1e-6)
    y.backward(dy)
    y_ref, dx_ref, dw_ref = _reference_autograd(x, w, dy, 1e-6)
    assert y.shape == shape and y.dtype == dtype
    assert_matches(y, y_ref, dtype, "y")
    if n > 1:
        assert_matches(x.grad, dx_ref, dtype, "dx")
    assert_matches(w.grad, dw_ref, dtype, "dweight")


def test_rms_norm_without_weight_and_only_weight_grad(device):
    x, w, dy = make_inputs(5, 64, torch.float32, device)
    xg = x.clone().requires_grad_()
    normkit.rms_norm(xg, None).backward(dy)
    assert_matches(xg.grad, _reference_autograd(x, None, dy, 1e-6)[1], torch.float32)
    wg = w.clone().requires_grad_()  # x needs no grad: dweight still flows
    normkit.rms_norm(x, wg).backward(dy)
    assert_matches(wg.grad, _reference_autograd(x, w, dy, 1e-6)[2], torch.float32)


def test_no_grad_forward_saves_nothing(device):
    x, w, _ = make_inputs(4, 32, torch.float32, device)
    with torch.no_grad():
        y = normkit.rms_norm(x.requires_grad_(), w)
    assert y.grad_fn is None


@pytest.mark.parametrize("n", [1, 7, 300, 20000])
def test_gradcheck_float64(n, device):
    """Finite differences against the analytical backward (trueno-gpu's P-RMS-BACK-001).

    Small N: the full Jacobian. Large N (including rows walked in column tiles): gradcheck's
    fast mode, which checks random projections of the Jacobian (every element interpreted one at
    a time would take hours in Triton's interpreter).
    """
    g = torch.Generator().manual_seed(n)
    x = torch.randn(3, n, generator=g, dtype=torch.float64).to(device).requires_grad_()
    w = torch.randn(n, generator=g, dtype=torch.float64).to(device).requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b: normkit.rms_norm(a, b, eps=1e-5), (x, w),
                                    fast_mode=n > 64)


def test_gradcheck_recomputed_rstd_float64(device):
    g = torch.Generator().manual_seed(11)
    x = torch.randn(4, 40, generator=g, dtype=torch.float64).to(device)
    w = torch.randn(40, generator=g, dtype=torch.float64).to(device)
    dy = torch.randn(4, 40, generator=g, dtype=torch.float64).to(device)
    dx, dweight, _, _ = normkit.rms_norm_bwd(x, w, dy, None, eps=1e-5)
    _, dx_ref, dw_ref = _reference_autograd(x, w, dy, 1e-5)
    torch.testing.assert_close(dx.cpu(), dx_ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(dweight.cpu(), dw_ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("normalized_shape,eps,affine", [
    (64, None, True), ((4, 16), 1e-5, True), (64, 1e-6, False), ([1], None, True)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_module_matches_torch_rmsnorm(normalized_shape, eps, affine, dtype, device):
    torch.manual_seed(0)
    ours = normkit.RMSNorm(normalized_shape, eps=eps, elementwise_affine=affine, device=device, dtype=dtype)
    theirs = torch.nn.RMSNorm(normalized_shape, eps=eps, elementwise_affine=affine, device=device, dtype=dtype)
    assert isinstance(ours, torch.nn.RMSNorm)
    if affine:
        with torch.no_grad():
            ours.weight.copy_(torch.randn_like(ours.weight))
            theirs.weight.copy_(ours.weight)
    theirs.load_state_dict(ours.state_dict())
    tail = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    x = torch.randn(3, 5, *tail, device=device, dtype=dtype)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya, yb = ours(xa), theirs(xb)
    dy = torch.randn_like(ya)
    ya.backward(dy)
    yb.backward(dy)
    tol = dict(rtol=2e-2, atol=2e-2) if dtype == torch.bfloat16 else dict(rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ya, yb, **tol)
    torch.testing.assert_close(xa.grad, xb.grad, **tol)
    if affine:
        torch.testing.assert_close(ours.weight.grad, theirs.weight.grad, **tol)


def test_module_rejects_wrong_trailing_shape(device):
    with pytest.raises(ValueError, match="normalized_shape"):
        normkit.RMSNorm(64, device=device)(torch.randn(4, 63, device=device))


def test_torch_compile_fullgraph(device):
    """No graph break: the custom ops are traced, forward and backward."""
    backend = "inductor" if device == "cuda" else "aot_eager"  # CPU: no C++ build needed
    x, w, dy = make_inputs(6, 96, torch.float32, device)

    def f(a, b):
        return normkit.rms_norm(a * 2.0, b, eps=1e-6).sum(-1)

    compiled = torch.compile(f, fullgraph=True, backend=backend)
    xa, wa = x.clone().requires_grad_(), w.clone().requires_grad_()
    xb, wb = x.clone().requires_grad_(), w.clone().requires_grad_()
    out_c, out_e = compiled(xa, wa), f(xb, wb)
    torch.testing.assert_close(out_c, out_e)
    out_c.square().sum().backward()
    out_e.square().sum().backward()
    torch.testing.assert_close(xa.grad, xb.grad)
    torch.testing.assert_close(wa.grad, wb.grad)


def test_custom_ops_pass_opcheck(device):
    """torch.library's own consistency checks: schema, fake tensors, dispatch."""
    x, w, dy = make_inputs(4, 48, torch.float32, device)
    r = torch.randn_like(x)
    fwd, bwd = torch.ops.normkit.norm_fwd.default, torch.ops.normkit.norm_bwd.default
    rstd = normkit.rms_norm_fwd(x, w, store_rstd=True)[2]
    _, _, mean_ln, rstd_ln = normkit.layer_norm_fwd(x, w, store_rstd=True)
    torch.library.opcheck(fwd, (x, w, None, None, 1e-6, 0.0, True, True, None, None, None))
    torch.library.opcheck(fwd, (x, None, None, None, 1e-6, 0.0, True, False, None, None, torch.bfloat16))
    torch.library.opcheck(fwd, (x, w, w, r, 1e-5, 1.0, False, True, torch.bfloat16, torch.float32, None))
    torch.library.opcheck(bwd, (x, w, dy, None, rstd, None, None, None, 1e-6, 0.0, True, torch.bfloat16))
    torch.library.opcheck(bwd, (x, None, dy, None, None, None, None, None, 1e-6, 0.0, True, None))
    torch.library.opcheck(bwd, (x, w, dy, mean_ln, rstd_ln, r, [48], torch.float64, 1e-5, 0.0, False, None))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_cuda_graph_capture_and_replay():
    x, w, dy = make_inputs(256, 1024, torch.bfloat16, "cuda")
    x.requires_grad_()
    w.requires_grad_()
    normkit.rms_norm(x, w).backward(dy)  # compile kernels outside the capture
    x.grad = w.grad = None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = normkit.rms_norm(x, w)
        dx, dw = torch.autograd.grad(y, (x, w), dy)
    with torch.no_grad():
        x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    y_ref = normkit.rms_norm(x.detach(), w.detach())
    dx_ref, dw_ref, _, _ = normkit.rms_norm_bwd(x.detach(), w.detach(), dy)
    assert torch.equal(y, y_ref)
    torch.testing.assert_close(dx, dx_ref)
    torch.testing.assert_close(dw, dw_ref)


def test_cpu_pytorch_path_without_interpreter(monkeypatch):
    """Without TRITON_INTERPRET, CPU tensors take the plain-PyTorch path: same semantics."""
    monkeypatch.setattr(launchers, "uses_triton", lambda device: False)
    x, w, dy = make_inputs(7, 50, torch.bfloat16, "cpu")
    x.requires_grad_()
    w.requires_grad_()
    y = normkit.rms_norm(x, w)
    y.backward(dy)
    y_ref, dx_ref, dw_ref = _reference_autograd(x, w, dy, 1e-6)
    assert_matches(y, y_ref, torch.bfloat16, "y")
    assert_matches(x.grad, dx_ref, torch.bfloat16, "dx")
    assert_matches(w.grad, dw_ref, torch.bfloat16, "dweight")
    dx, dweight, _, _ = normkit.rms_norm_bwd(x.detach(), w.detach(), dy)  # recompute path
    assert_matches(dx, dx_ref, torch.bfloat16, "dx recomputed")
    out, _, rstd = normkit.rms_norm_fwd(x.detach()[:0], w.detach(), store_rstd=True)
    assert out.shape == (0, 50) and rstd.shape == (0,)


@pytest.mark.parametrize("plain", [False, True])
def test_low_level_entry_points_return_no_graph(plain, device, monkeypatch):
    """rms_norm_fwd / _bwd and layer_norm_fwd / _bwd have no autograd: their outputs carry no graph even
    for inputs that require grad — on the plain-PyTorch CPU path too, which computes with torch ops."""
    if plain:
        monkeypatch.setattr(launchers, "uses_triton", lambda device: False)
        device = "cpu"
    x, w, dy = make_inputs(4, 32, torch.float32, device)
    r = torch.randn_like(x)
    for t in (x, w, r, dy):
        t.requires_grad_()
    out, residual_out, rstd = normkit.rms_norm_fwd(x, w, residual=r, store_rstd=True)
    grads = normkit.rms_norm_bwd(residual_out, w, dy, rstd, has_residual=True)
    ln = normkit.layer_norm_fwd(x, w, w, r, store_rstd=True)
    ln_grads = normkit.layer_norm_bwd(ln[1], w, dy, ln[2], ln[3], has_bias=True, has_residual=True)
    for t in (out, residual_out, rstd, *grads[:2], *ln, *ln_grads):
        assert not t.requires_grad and t.grad_fn is None


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_llama_casting_mode_matches_hugging_face_numerics(dtype, device):
    """casting_mode="llama": x̂ in fp32, rounded to x's dtype, then times the weight — the
    LlamaRMSNorm recipe. On CUDA every output is within one ulp of it and ≥ 99 % bit-identical;
    Triton's CPU interpreter truncates fp32 → 16-bit conversions instead of rounding to nearest,
    which compounds to up to three ulps over the two roundings (measured), so there the bound is
    four ulps. Gradients within float tolerance."""
    x, w, dy = make_inputs(16, 320, dtype, device, seed=21)

    def llama(x, w):  # transformers' LlamaRMSNorm.forward
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        return w * h.to(x.dtype)

    xa, wa = x.clone().requires_grad_(), w.clone().requires_grad_()
    xb, wb = x.clone().requires_grad_(), w.clone().requires_grad_()
    ya, yb = normkit.rms_norm(xa, wa, eps=1e-6, casting_mode="llama"), llama(xb, wb)
    ulp = torch.finfo(dtype).eps * torch.exp2(torch.floor(torch.log2(yb.detach().float().abs().clamp_min(1e-30))))
    ulps = 1 if device == "cuda" else 4
    assert ((ya.detach().float() - yb.detach().float()).abs() <= ulps * ulp).all()
    if device == "cuda":
        assert (ya == yb).float().mean().item() >= 0.99
    ya.backward(dy)
    yb.backward(dy)
    torch.testing.assert_close(xa.grad, xb.grad, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(wa.grad, wb.grad, rtol=2e-2, atol=5e-2)
    # dweight sees the rounded x̂: Σ dy·bf16(x̂), not Σ dy·x̂ (the default mode)
    x_hat = x.double() * torch.rsqrt(x.double().square().mean(-1, keepdim=True) + 1e-6)
    rounded = (dy.double() * x_hat.float().to(dtype).double()).sum(0)
    torch.testing.assert_close(wa.grad.double(), rounded, rtol=2e-2, atol=2e-2)


def _bf16_as_the_kernel_rounds(t: torch.Tensor, device: str) -> torch.Tensor:
    """fp32 → bf16 → fp32 the way the kernel's conversion does it: round to nearest even, on CUDA and
    (normkit's rounding shim) in Triton's CPU interpreter alike."""
    return t.float().bfloat16().float()


def test_llama_casting_mode_weight_gradient_uses_the_rounded_x_hat(device):
    """dweight = Σ dy·bf16(x̂) (what LlamaRMSNorm's autograd gives), not Σ dy·x̂: with an fp32
    weight the two differ far beyond fp32 rounding, so this pins which one the kernel computes."""
    g = torch.Generator().manual_seed(22)
    x = torch.randn(512, 64, generator=g).to(device=device, dtype=torch.bfloat16)
    w = (1 + 0.1 * torch.randn(64, generator=g)).to(device).requires_grad_()
    dy = torch.randn(512, 64, generator=g).to(device=device, dtype=torch.float32)
    normkit.rms_norm(x, w, eps=1e-6, casting_mode="llama", out_dtype=torch.float32).backward(dy)
    x_hat = x.float() * torch.rsqrt(x.float().square().mean(-1, keepdim=True) + 1e-6)
    rounded = (dy * _bf16_as_the_kernel_rounds(x_hat, device)).double().sum(0)
    unrounded = (dy * x_hat).double().sum(0)
    assert (rounded - unrounded).abs().max() > 1e-2  # the test can tell them apart
    torch.testing.assert_close(w.grad.double().cpu(), rounded.cpu(), rtol=1e-5, atol=1e-4)


def test_casting_mode_is_validated(device):
    x, w, _ = make_inputs(2, 8, torch.float32, device)
    with pytest.raises(ValueError, match=r"casting_mode must be one of 'fp32', 'llama', got 'gemma'"):
        normkit.rms_norm(x, w, casting_mode="gemma")


def test_inference_calls_skip_the_autograd_function_and_match_it(device):
    """Without grad mode, or without an input that requires grad, rms_norm / layer_norm call the op
    directly (no autograd.Function: host time): the same bits, no graph; forward-mode AD still goes
    through the Function (its dual tensors need not require grad)."""
    import torch.autograd.forward_ad as fwAD

    g = torch.Generator().manual_seed(5)
    x = torch.randn(4, 3, 32, generator=g).to(device)
    w = torch.rand(32, generator=g).to(device)
    r = torch.randn(4, 3, 32, generator=g).to(device)
    with_graph = normkit.rms_norm(x, w.clone().requires_grad_(), residual=r, prenorm=True)
    for plain in (normkit.rms_norm(x, w, residual=r, prenorm=True),):
        assert all(torch.equal(a, b.detach()) for a, b in zip(plain, with_graph))
        assert all(t.grad_fn is None and not t.requires_grad for t in plain)
    with torch.no_grad():
        y = normkit.layer_norm(x, w.clone().requires_grad_(), w)
    assert y.grad_fn is None and torch.equal(y, normkit.layer_norm(x, w, w))
    tangent = torch.randn_like(x)
    with fwAD.dual_level():
        out = fwAD.unpack_dual(normkit.rms_norm(fwAD.make_dual(x, tangent), w)).tangent
    assert out is not None and out.abs().sum() > 0
    with pytest.raises(TypeError, match="prenorm must be a bool"):
        normkit.rms_norm(x, w, residual=r, prenorm="no")
