"""Failure paths (issue #8): out-of-memory during allocation, and a configuration the GPU compiler
rejects.

Out of memory: every allocation normkit makes happens before its first kernel launch, so an OOM
surfaces as PyTorch's own `torch.OutOfMemoryError` and leaves the caller's tensors (inputs,
existing .grad, caller-provided outputs of the low-level launchers) exactly as they were. On the
CPU the error is injected at each allocation in turn (a stand-in for the `torch` module inside
normkit.ops and normkit.launchers, the modules that allocate); on a GPU a real one is provoked.

Compile failure: when Triton cannot build a launch configuration (CompilationError, PTXASError,
OutOfResources, or a RuntimeError "PassManager::run failed" from an MLIR pass that asserted), normkit warns with `normkit.CompileFallbackWarning` once and runs a conservative
configuration; the result is the same function. The interpreter compiles nothing, so on the CPU
the compiler's errors are injected; on a GPU an impossible tile (2**21 elements, above Triton's
tensor size limit) is really rejected by the compiler.
"""

import warnings

import pytest
import torch

import normkit
from normkit import config as cfg
from normkit import launchers, ops, variant
from tests.utils import assert_matches

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
ALLOCATORS = ("empty", "zeros", "empty_like", "zeros_like")
# Where normkit allocates: the outputs (ops), the scratch buffers and a plan's outputs (launchers).
ALLOCATING_MODULES = (ops, launchers)


class _OutOfMemoryAt:
    """Stands in for `torch` inside the modules that allocate: allocation number `at` (1-based; 0: none)
    raises torch.OutOfMemoryError. Counts the allocations it saw."""

    def __init__(self, at: int):
        self.at, self.count = at, 0

    def __getattr__(self, name):
        attr = getattr(torch, name)
        if name not in ALLOCATORS:
            return attr

        def allocate(*args, **kwargs):
            self.count += 1
            if self.count == self.at:
                raise torch.OutOfMemoryError(f"simulated out of memory at allocation {self.at}")
            return attr(*args, **kwargs)

        return allocate


def _allocate_with(monkeypatch, stand_in) -> None:
    """One `torch` for every module that allocates, so allocations are counted in the order they happen."""
    for module in ALLOCATING_MODULES:
        monkeypatch.setattr(module, "torch", stand_in)


def _leaves(norm, seed=0):
    g = torch.Generator().manual_seed(seed)
    x, residual, dy = (torch.randn(6, 40, generator=g).to(DEVICE) for _ in range(3))
    weight, bias = (1 + 0.1 * torch.randn(40, generator=g)).to(DEVICE), (0.1 * torch.randn(40, generator=g)).to(DEVICE)
    leaves = [t.clone().requires_grad_() for t in (x, weight, bias, residual)]
    for leaf in leaves:  # existing gradients must survive a failed backward
        leaf.grad = torch.full_like(leaf, 7.0)
    return leaves, dy


def _fwd_bwd(norm, leaves, dy):
    x, weight, bias, residual = leaves
    y, residual_out = getattr(normkit, norm)(x, weight, bias, residual, prenorm=True)
    torch.autograd.backward([y, residual_out], [dy, dy])
    return y


@pytest.mark.parametrize("norm", ["rms_norm", "layer_norm"])
def test_out_of_memory_at_each_allocation_leaves_caller_tensors_untouched(norm, monkeypatch):
    counter = _OutOfMemoryAt(0)
    _allocate_with(monkeypatch, counter)
    leaves, dy = _leaves(norm)
    _fwd_bwd(norm, leaves, dy)
    allocations = counter.count
    assert allocations >= 4  # y, residual_out, statistics; dx, partials, parameter gradients

    for at in range(1, allocations + 1):
        _allocate_with(monkeypatch, _OutOfMemoryAt(at))
        leaves, dy = _leaves(norm)
        before = [(leaf.detach().clone(), leaf.grad.clone()) for leaf in leaves]
        with pytest.raises(torch.OutOfMemoryError, match=f"allocation {at}"):
            _fwd_bwd(norm, leaves, dy)
        for leaf, (data, grad) in zip(leaves, before):
            assert torch.equal(leaf.detach(), data), f"allocation {at}: an input changed"
            assert torch.equal(leaf.grad, grad), f"allocation {at}: an existing .grad changed"

    # Nothing cached a broken state: the same call now succeeds and matches the reference.
    _allocate_with(monkeypatch, torch)
    leaves, dy = _leaves(norm)
    for leaf in leaves:
        leaf.grad = None
    y = _fwd_bwd(norm, leaves, dy)
    ref = [leaf.detach().double().cpu().requires_grad_() for leaf in leaves]
    h = ref[0] + ref[3]
    if norm == "rms_norm":
        y_ref = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * ref[1] + ref[2]
    else:
        y_ref = torch.nn.functional.layer_norm(h, (40,), ref[1], ref[2], eps=1e-5)
    torch.autograd.backward([y_ref, h], [dy.double().cpu()] * 2)
    assert_matches(y, y_ref, torch.float32, "y")
    for leaf, r in zip(leaves, ref):
        assert_matches(leaf.grad, r.grad, torch.float32, "gradient")


def test_out_of_memory_in_the_low_level_backward_leaves_its_outputs_unwritten(monkeypatch):
    g = torch.Generator().manual_seed(3)
    x, dy = (torch.randn(9, 40, generator=g).to(DEVICE) for _ in range(2))
    weight = torch.ones(40, device=DEVICE)
    dx, dweight, dbias = torch.full_like(x, float("nan")), torch.full_like(weight, 5.0), torch.full_like(weight, 6.0)
    _allocate_with(monkeypatch, _OutOfMemoryAt(1))  # the first buffer: a partial-sum buffer
    with pytest.raises(torch.OutOfMemoryError):
        ops.launch_bwd(x, dy, dx, weight=weight, dweight=dweight, dbias=dbias, eps=1e-5, is_rms_norm=False)
    assert torch.isnan(dx).all() and (dweight == 5.0).all() and (dbias == 6.0).all()


@pytest.mark.skipif(DEVICE != "cuda", reason="a real CUDA out-of-memory error")
def test_real_cuda_out_of_memory():
    free, _ = torch.cuda.mem_get_info()
    n = 8192
    m = int(free * 0.6) // (2 * n)  # x takes 60 % of what is free: y cannot be allocated
    x = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    x[:: max(1, m // 7)] = 1.5  # a few sampled rows with known contents
    with pytest.raises(torch.OutOfMemoryError):
        normkit.rms_norm(x, torch.ones(n, device="cuda", dtype=torch.bfloat16))
    assert (x[:: max(1, m // 7)] == 1.5).all()
    del x
    torch.cuda.empty_cache()
    small = torch.randn(4, n, device="cuda")
    assert_matches(normkit.rms_norm(small), torch.nn.functional.rms_norm(small.double(), (n,), eps=1e-6),
                   torch.float32, "y after the OOM")


# ----------------------------------------------------------------------------- compile failures
def _compile_error(kind: str) -> Exception:
    from triton.compiler.errors import CompilationError
    from triton.runtime.errors import OutOfResources, PTXASError

    if kind == "CompilationError":
        return CompilationError("def kernel(): ...", None, "simulated front-end failure")
    if kind == "PTXASError":
        return PTXASError("simulated ptxas failure")
    if kind == "PassManager":  # what Triton raises when one of its MLIR passes asserts
        return RuntimeError("PassManager::run failed")
    return OutOfResources(300000, 232448, "shared memory")


@pytest.mark.parametrize("kind", ["CompilationError", "PTXASError", "OutOfResources", "PassManager"])
@pytest.mark.parametrize("norm", ["rms_norm", "layer_norm"])
def test_compile_failure_falls_back_with_one_warning(kind, norm, monkeypatch):
    """Whole-row tiles (what the heuristics pick here) 'fail to compile'; the column-tiled
    fallback computes the same outputs and gradients; the failing configuration is not tried
    again and the warning is not repeated."""
    monkeypatch.setattr(variant, "_failed_configs", set())
    # the forward launches with launch, the backward's persistent grid with launch_fitted
    real, attempts = {"launch": launchers.launch, "launch_fitted": launchers.launch_fitted}, []

    def failing(name):
        def launch(fn, grid, *args, **kwargs):
            if kwargs.get("ONE_TILE"):
                attempts.append(kwargs["BLOCK_N"])
                raise _compile_error(kind)
            return real[name](fn, grid, *args, **kwargs)
        return launch

    leaves, dy = _leaves(norm)
    for leaf in leaves:
        leaf.grad = None
    expected_leaves = [leaf.detach().clone().requires_grad_() for leaf in leaves]
    y_expected = _fwd_bwd(norm, expected_leaves, dy)  # the heuristic's own configuration

    for name in real:
        monkeypatch.setattr(launchers, name, failing(name))
    ops.clear_plans()  # (the expected run's plans launch without launchers.launch)
    with pytest.warns(normkit.CompileFallbackWarning, match=f"failed to compile.*{kind}") as record:
        y = _fwd_bwd(norm, leaves, dy)
    fallbacks = [w for w in record if issubclass(w.category, normkit.CompileFallbackWarning)]
    assert len(fallbacks) == 2 and attempts == [64, 64]  # forward and backward, one attempt each
    assert_matches(y, y_expected.detach().double(), torch.float32, "y")
    for leaf, expected in zip(leaves, expected_leaves):
        assert_matches(leaf.grad, expected.grad.double(), torch.float32, "gradient")

    with warnings.catch_warnings():
        warnings.simplefilter("error", normkit.CompileFallbackWarning)  # no second warning
        for leaf in leaves:
            leaf.grad = None
        _fwd_bwd(norm, leaves, dy)
    assert attempts == [64, 64]  # not retried


def test_other_errors_and_a_failing_fallback_propagate(monkeypatch):
    monkeypatch.setattr(variant, "_failed_configs", set())
    real_launch = launchers.launch
    x = torch.randn(3, 40, device=DEVICE)

    def broken(fn, grid, *args, **kwargs):
        raise RuntimeError("not a compile error")

    monkeypatch.setattr(launchers, "launch", broken)
    with pytest.raises(RuntimeError, match="not a compile error"):
        normkit.rms_norm(x)

    def nothing_compiles(fn, grid, *args, **kwargs):
        raise _compile_error("PTXASError")

    monkeypatch.setattr(launchers, "launch", nothing_compiles)
    with pytest.warns(normkit.CompileFallbackWarning), pytest.raises(type(_compile_error("PTXASError"))):
        normkit.rms_norm(x)
    monkeypatch.setattr(launchers, "launch", real_launch)


@pytest.mark.skipif(DEVICE != "cuda", reason="Triton's GPU compiler")
def test_real_compile_failure_falls_back():
    """A 2**21-element tile is above Triton's tensor limit: the GPU compiler rejects it."""
    x = torch.randn(3, 1000, device="cuda")
    out = torch.full_like(x, float("nan"))
    with pytest.warns(normkit.CompileFallbackWarning, match="CompilationError"):
        ops.launch_fwd(x, out, eps=1e-6, config=cfg.TileConfig(1, 2 ** 21, True, 4))
    assert_matches(out, torch.nn.functional.rms_norm(x.double(), (1000,), eps=1e-6), torch.float32, "y")
