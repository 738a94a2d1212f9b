"""Forced launches against float64, shared by the tests and the GPU tools.

`run_forced` runs one configuration (tests/config_cases.py) of the forward or backward launcher
with every output pre-filled with NaN inside a band of sentinels and compares the result with
`reference`, a float64 autograd of the plain formula. tests/test_properties.py uses it on the CPU
(Triton's interpreter), tools/sanitize_sweep.py under compute-sanitizer on the GPU.
"""

import contextlib
from typing import Optional
from unittest import mock

import torch

from normkit import config as cfg
from normkit import launchers, ops
from normkit import reference as normkit_reference
from tests.feature_cases import _assert_rounded_sum
from tests.utils import ELEM_TOL, REL_TOL

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
NAN = float("nan")
SENTINEL = -77.25  # exactly representable in every dtype: guard bands must keep it


# ----------------------------------------------------------------------------- float64 reference
def _rounded(t: torch.Tensor, dtype: Optional[torch.dtype]) -> torch.Tensor:
    """Round to `dtype` and back, gradient passing straight through (Llama casting of x̂)."""
    if dtype is None:
        return t
    return t + (t.detach().to(dtype).double() - t.detach())


def reference(x, weight, bias, residual, dy, dresidual_out=None, *, rms, eps, weight_offset=0.0,
              x_hat_dtype=None):
    """Float64 autograd of the plain formula. Returns a dict: y, h, rstd, mean, x_hat, grads
    [dx, dweight, dbias, dresidual] and the scales each gradient is measured against."""
    leaves = [None if t is None else t.detach().double().cpu().requires_grad_()
              for t in (x, weight, bias, residual)]
    x64, w64, b64, r64 = leaves
    h = x64 if r64 is None else x64 + r64
    mean = None if rms else h.mean(-1, keepdim=True)
    centered = h if rms else h - mean
    rstd = torch.rsqrt(centered.square().mean(-1, keepdim=True) + eps)
    x_hat = _rounded(centered * rstd, x_hat_dtype)
    y = x_hat
    scale = 1.0 if w64 is None else (w64 + weight_offset)
    if w64 is not None:
        y = y * scale
    if b64 is not None:
        y = y + b64
    outputs, grads = [y], [dy.detach().double().cpu()]
    if dresidual_out is not None:
        outputs.append(h)
        grads.append(dresidual_out.detach().double().cpu())
    if y.requires_grad:
        torch.autograd.backward(outputs, grads)
    with torch.no_grad():
        # Rounding errors are relative to the terms that cancel, not to the (possibly small) result:
        # |h|·rstd ≥ |ĥ| (LayerNorm's h − mean cancels when |mean| ≫ std), rstd·|g| in dh.
        dy64 = grads[0]
        hs = h.detach().abs() * rstd.detach()
        w_abs = 1.0 if w64 is None else (w64.detach() + weight_offset).abs()
        g_abs = dy64.abs() * w_abs
        dx_scale = rstd.detach() * (g_abs + hs * (g_abs * hs).mean(-1, keepdim=True))
        if dresidual_out is not None:
            dx_scale = dx_scale + grads[1].abs()
        param = w64 if w64 is not None else b64
        lead = tuple(range(x64.dim() - param.dim())) if param is not None else ()
        total = (lambda t: t.sum(lead) if lead else t)  # noqa: E731  (sum(()) would sum everything)
        y_scale = hs * w_abs + (0.0 if b64 is None else b64.detach().abs())
        return dict(
            y=y.detach(), h=h.detach(), rstd=rstd.squeeze(-1).detach(),
            mean=None if rms else mean.squeeze(-1).detach(), x_hat=x_hat.detach(), y_scale=y_scale,
            grads=[None if t is None else (t.grad if t.grad is not None else torch.zeros_like(t)) for t in leaves],
            scales=[dx_scale, None if w64 is None else total(dy64.abs() * hs),
                    None if b64 is None else total(dy64.abs()), dx_scale])


def check(out, ref, tol_dtype, what, scale=None, slack=1.0):
    """out ≈ ref (float64) within the dtype's tolerance (tests/utils.py), measured against
    max(‖ref‖, ‖scale‖): `scale` is the size of the terms that cancel into ref (rounding error is
    relative to them, not to a small difference of them)."""
    assert tuple(out.shape) == tuple(ref.shape), f"{what}: shape {tuple(out.shape)} != {tuple(ref.shape)}"
    out64, ref64 = out.detach().double().cpu(), ref.detach().double().cpu()
    assert torch.isfinite(out64).all(), f"{what}: {(~torch.isfinite(out64)).sum().item()} non-finite elements"
    size = ref64.abs() if scale is None else torch.maximum(ref64.abs(), scale.detach().double().cpu().abs())
    norm, peak = size.norm().item(), (size.max().item() if size.numel() else 0.0)
    if peak == 0.0:
        assert (out64 == 0).all(), f"{what}: expected exact zeros"
        return
    err = (out64 - ref64).norm().item() / norm
    assert err <= slack * REL_TOL[tol_dtype], f"{what}: relative error {err:.3e} > {slack * REL_TOL[tol_dtype]:.1e}"
    worst = (out64 - ref64).abs().max().item() / peak
    assert worst <= slack * ELEM_TOL[tol_dtype], f"{what}: worst element {worst:.3e} of max > " \
                                                 f"{slack * ELEM_TOL[tol_dtype]:.1e}"


def assert_rounded_sum(residual_out, x, residual, dtype):
    """residual_out == x + residual added in the compute dtype (float64 for float64 x, else
    float32: tests/feature_cases.py) and rounded once to `dtype`. From float64 each element may
    be the correctly rounded value (numpy's conversion, the kernels') or PyTorch's, which goes
    through float32 (two roundings) for 16-bit dtypes."""
    if x.dtype != F64:
        return _assert_rounded_sum(residual_out, x, residual, dtype)
    exact = (x.detach() + residual.detach().double()).cpu()
    got = residual_out.detach().cpu()
    ok = got == exact.to(dtype)
    if dtype == F16:
        import numpy as np

        ok |= got == torch.from_numpy(exact.numpy().astype(np.float16))
    assert ok.all(), f"residual_out: {(~ok).sum().item()} elements are not x + residual (float64) rounded to {dtype}"


def randn(g, shape, dtype, scale=1.0, shift=0.0):
    return (torch.randn(shape, generator=g, dtype=F64) * scale + shift).to(device=DEVICE, dtype=dtype)


def guarded(shape, dtype, *, rows=False, poison=NAN):
    """A view of `shape` inside a larger buffer of SENTINELs, itself filled with `poison`. Row-major
    (M, N) outputs (rows=True: y, residual_out, dx) get a row stride > N, as the launchers allow;
    dense ones (statistics, parameter gradients) an offset."""
    if rows:
        m, n = shape
        buf = torch.full((m + 2, n + 5), SENTINEL, dtype=dtype, device=DEVICE)
        view = buf[1:m + 1, 2:n + 2]
    else:
        size = 1
        for s in shape:
            size *= s
        buf = torch.full((size + 7,), SENTINEL, dtype=dtype, device=DEVICE)
        view = buf[3:3 + size].view(shape)
    view.fill_(poison)
    return buf, view


def assert_written(buf, view, what):
    """Every element of the view written (no poison left), every other element of buf untouched."""
    assert not torch.isnan(view.double()).any(), f"{what}: {torch.isnan(view.double()).sum().item()} elements " \
                                                 f"not written (still NaN) of {view.numel()}"
    outside = torch.ones(buf.shape, dtype=torch.bool, device=buf.device)
    if buf.dim() == 2:
        outside[1:1 + view.shape[0], 2:2 + view.shape[1]] = False
    else:
        outside[3:3 + view.numel()] = False
    bad = buf[outside] != SENTINEL
    assert not bad.any(), f"{what}: {bad.sum().item()} elements written outside the output"


@contextlib.contextmanager
def grid(multiprocessors: Optional[int], gpu_finisher: bool):
    """The persistent backward grid as on a GPU with this many SMs (None: the device's own);
    optionally the GPU's dweight finisher tiles (G rows × 16 or more columns) instead of the interpreter's."""
    with contextlib.ExitStack() as stack:
        if multiprocessors is not None:
            stack.enter_context(mock.patch.object(launchers, "multiprocessor_count", lambda device: multiprocessors))
        if gpu_finisher:
            real = cfg.finish_config
            stack.enter_context(mock.patch.object(cfg, "finish_config", lambda interpret, rows, n: real(False, rows, n)))
        yield


FAMILIES = ["rms", "fused_add", "layer_norm"]
# tools/sanitize_sweep.py's families: these and the fused LayerNorm (a residual read, residual_out
# stored; the backward reads dresidual_out), which the property tests leave to tests/test_split_rows.py
# and tests/test_features.py.
SANITIZE_FAMILIES = FAMILIES + ["fused_layer_norm"]


def family_inputs(family, m, n, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    layer_norm, fused = family in ("layer_norm", "fused_layer_norm"), family in ("fused_add", "fused_layer_norm")
    x = randn(g, (m, n), dtype, shift=2.0 if layer_norm else 0.0)
    weight = (1.0 + 0.5 * randn(g, (n,), F64)).to(dtype)
    bias = 0.5 * randn(g, (n,), dtype) if layer_norm else None
    residual = randn(g, (m, n), dtype) if fused else None
    dy = (0.5 * x.double() + randn(g, (m, n), F64)).to(dtype)
    dres = randn(g, (m, n), dtype) if fused else None
    return x, weight, bias, residual, dy, dres


def run_forced(problem, family, dtype, *, recompute, seed=0):
    """Forward (when the problem is a forward config) or backward with problem.config forced, outputs
    poisoned, against float64. Returns nothing; asserts."""
    m, n, config = problem.m, problem.n, problem.config
    rms = family in ("rms", "fused_add")
    offset = 1.0 if family == "fused_add" else 0.0  # Gemma's offset rides with the fused add
    x, weight, bias, residual, dy, dres = family_inputs(family, m, n, dtype, seed)
    if offset:
        weight = weight - 1.0
    eps = 1e-6 if rms else 1e-5
    if not problem.backward:
        out_buf, out = guarded((m, n), dtype, rows=True)
        ro_buf, residual_out = guarded((m, n), dtype, rows=True) if residual is not None else (None, None)
        rstd_buf, rstd = guarded((m,), F32)
        mean_buf, mean = guarded((m,), F32) if not rms else (None, None)
        ops.launch_fwd(x, out, weight=weight, bias=bias, residual=residual, residual_out=residual_out, mean=mean,
                       rstd=rstd, eps=eps, weight_offset=offset, is_rms_norm=rms, config=config)
        ref = reference(x, weight, bias, residual, torch.zeros_like(x), rms=rms, eps=eps, weight_offset=offset)
        for buf, view in ((out_buf, out), (ro_buf, residual_out), (rstd_buf, rstd), (mean_buf, mean)):
            if view is not None:
                assert_written(buf, view, "forward output")
        check(out, ref["y"], dtype, "y", ref["y_scale"])
        check(rstd, ref["rstd"], F32, "rstd")
        if residual_out is not None:
            _assert_rounded_sum(residual_out, x, residual, dtype)
        return
    h = x if residual is None else (x.float() + residual.float()).to(dtype)
    stats = None if recompute else normkit_reference.norm_fwd(h, None, eps=eps, is_rms_norm=rms)
    dx_buf, dx = guarded((m, n), dtype, rows=True)
    dw_buf, dweight = guarded((n,), dtype)
    db_buf, dbias = guarded((n,), dtype) if bias is not None else (None, None)
    # The GPU's finisher tile (128 columns) costs a Python loop iteration per 128 columns here.
    # Split rows need every part resident: the device's own SM count, never a patched one.
    with grid(None if problem.split else problem.multiprocessors, gpu_finisher=n <= 1024):
        ops.launch_bwd(h, dy, dx, weight=weight, dweight=dweight, dbias=dbias, dresidual_out=dres,
                       mean=None if stats is None else stats[2], rstd=None if stats is None else stats[3],
                       eps=eps, weight_offset=offset, is_rms_norm=rms, config=config)
    ref = reference(h, weight, bias, None, dy, dres, rms=rms, eps=eps, weight_offset=offset)
    assert_written(dx_buf, dx, "dx")
    assert_written(dw_buf, dweight, "dweight")
    check(dx, ref["grads"][0], dtype, "dx", ref["scales"][0])
    check(dweight, ref["grads"][1], dtype, "dweight", ref["scales"][1])
    if dbias is not None:
        assert_written(db_buf, dbias, "dbias")
        check(dbias, ref["grads"][2], dtype, "dbias", ref["scales"][2])
