"""normkit.launch: Triton's normal launch, and bound launches (`bind`) that skip JITFunction.run.

On any machine: the bound launch's whole cycle with a stand-in CompiledKernel and launcher (no GPU
needed) — what it passes the launcher, constexpr order and defaults, the calls that take the normal
path instead (hooks, pre-run hooks, changed globals, changed knobs), what cannot be bound directly
(a callable grid, a runtime argument by keyword, a constexpr passed positionally, no CompiledKernel,
another launcher, a Triton version not checked: the fallback), check mode, threads — and
launch_fitted. On a GPU: launch plans against the normal path, bitwise, for the forward and backward
over shapes, dtypes and flags, misaligned views, CUDA-graph capture and threads, each direct launch
also checked against Triton's own binder and cache lookup (mode "check").
"""


import pytest
import torch

from utils import run_in_threads

import normkit
from normkit import launch as L
from normkit import launchers, ops
from normkit._runtime import interpret, kernels

triton = pytest.importorskip("triton")

CUDA = torch.cuda.is_available()


@pytest.fixture(autouse=True)
def _restore_mode():
    mode = L.get_mode()
    yield
    L.set_mode(mode)


# ----------------------------------------------------------------------------- the cycle, no GPU
class CudaLauncher:  # the launcher class name bind accepts; records what it is called with
    def __init__(self):
        self.calls = []

    def __call__(self, *args):
        self.calls.append(args)


@pytest.fixture
def fake_gpu(monkeypatch):
    """A real JITFunction whose `run` (the normal path) returns a stand-in CompiledKernel with a
    recording launcher; CUDA device and stream stubbed; direct launches allowed."""
    from triton.compiler.compiler import CompiledKernel
    from triton.runtime.jit import JITFunction

    def body(X, Y, n, eps, BLOCK: triton.language.constexpr, FLAG: triton.language.constexpr = 7):
        pass

    fn = JITFunction(body)
    kernel = CompiledKernel.__new__(CompiledKernel)
    kernel._run = CudaLauncher()
    kernel.n_regs = 40  # a loaded kernel's (CompiledKernel._init_handles sets it)
    kernel.function = 0xF00
    kernel.packed_metadata = (4, 1, 0)
    normal = []

    def run(*args, grid, warmup, **kwargs):
        if not warmup:
            normal.append((grid, args, kwargs))
        return kernel

    monkeypatch.setattr(fn, "run", run)
    L._load_triton()
    monkeypatch.setattr(L, "_direct", True)
    monkeypatch.setattr(L, "_get_device", lambda: 0)
    monkeypatch.setattr(L, "_get_stream", lambda device: 0x5000 + device)
    L.set_mode("on")
    return fn, kernel._run, normal


def test_bound_launch_passes_what_jitfunction_run_passes(fake_gpu):
    fn, launcher, normal = fake_gpu
    x, y = torch.zeros(32), torch.zeros(32)
    L.launch(fn, (3, 2), x, y, 32, 1e-6, BLOCK=16)                 # the normal path
    go = L.bind(fn, (3, 2), (x, y, 32, 1e-6), {"BLOCK": 16})       # looks the kernel up, launches nothing
    assert len(normal) == 1 and not launcher.calls and go.kernel is not None
    x2 = torch.zeros(32)
    go(x2, y, 32, 0.5)
    # grid padded to 3, stream, function, packed metadata, launch metadata and hooks (None: no
    # hook set), then every argument in signature order, the constexprs (and defaults) last
    assert launcher.calls == [(3, 2, 1, 0x5000, 0xF00, (4, 1, 0), None, None, None, x2, y, 32, 0.5, 16, 7)]
    assert len(normal) == 1


def test_bound_launch_constexpr_order_and_defaults(fake_gpu):
    fn, launcher, normal = fake_gpu
    x = torch.zeros(32)
    go = L.bind(fn, (1,), (x, None, 5, 2.0), {"FLAG": 3, "BLOCK": 64})
    go(x, None, 5, 2.0)
    assert launcher.calls[0][:3] == (1, 1, 1) and launcher.calls[0][9:] == (x, None, 5, 2.0, 64, 3)


@pytest.mark.parametrize("case", ["enter_hook", "exit_hook", "pre_run_hook", "global_changed", "debug_knob",
                                  "instrumentation_knob"])
def test_bound_launch_takes_the_normal_path_when_something_changed(fake_gpu, monkeypatch, case):
    fn, launcher, normal = fake_gpu
    x = torch.zeros(32)
    scope = {"G": 1}
    if case == "global_changed":  # a global the kernel read when it was compiled
        monkeypatch.setattr(fn, "used_global_vals", {("G", 0): (1, scope)})
    go = L.bind(fn, (1,), (x, x, 32, 1.0), {"BLOCK": 16})
    go(x, x, 32, 1.0)
    assert len(launcher.calls) == 1 and not normal
    if case == "enter_hook":
        monkeypatch.setattr(triton.knobs.runtime, "launch_enter_hook", lambda metadata: None)
    if case == "exit_hook":
        monkeypatch.setattr(triton.knobs.runtime.launch_exit_hook, "calls", [print])
    if case == "pre_run_hook":
        monkeypatch.setattr(fn, "pre_run_hooks", [lambda *a, **k: None])
    if case == "global_changed":
        scope["G"] = 2
    if case == "debug_knob":
        monkeypatch.setattr(triton.knobs.runtime, "debug", True)
    if case == "instrumentation_knob":
        monkeypatch.setattr(triton.knobs.compilation, "instrumentation_mode", "consan")
    go(x, x, 48, 1.0)
    assert len(launcher.calls) == 1 and len(normal) == 1 and normal[0][1] == (x, x, 48, 1.0)
    assert normal[0][2] == {"BLOCK": 16}


@pytest.mark.parametrize("case", ["callable_grid", "runtime_kwarg", "constexpr_positional", "not_compiled",
                                  "other_launcher", "other_triton"])
def test_what_cannot_launch_directly_takes_the_normal_path(fake_gpu, monkeypatch, case):
    """bind falls back to ``fn[grid](...)`` on every call — slower, equally correct — where a
    direct launch is not known to be right: among them a Triton version it was not checked against."""
    fn, launcher, normal = fake_gpu
    x = torch.zeros(32)
    args, kwargs, grid = (x, x, 32, 1.0), {"BLOCK": 16}, (1,)
    if case == "runtime_kwarg":
        args, kwargs = (x, x, 32), {"eps": 1.0, "BLOCK": 16}
    if case == "constexpr_positional":
        args, kwargs = (x, x, 32, 1.0, 16), {}
    if case == "callable_grid":
        grid = lambda meta: (1,)  # noqa: E731
    if case == "not_compiled":  # e.g. an async-compile future
        monkeypatch.setattr(fn, "run", lambda *a, grid, warmup, **k: None if warmup else normal.append((grid, a, k)))
    if case == "other_launcher":
        fn.run(grid=(1,), warmup=True)._run = lambda *a: launcher.calls.append(a)
    if case == "other_triton":
        monkeypatch.setattr(L, "_loaded", False)
        L._load_triton()
        assert L._direct  # (this Triton, 3.6: direct launches)
        monkeypatch.setattr(triton, "__version__", "3.2.0")
        monkeypatch.setattr(L, "_loaded", False)
        L._load_triton()
        assert not L._direct
    go = L.bind(fn, grid, args, kwargs)
    assert go.kernel is None
    for _ in range(2):
        go(*args)
    assert len(normal) == 2 and not launcher.calls
    assert all(call[1] == args and call[2] == kwargs for call in normal)


def test_a_triton_without_knobs_still_launches(fake_gpu, monkeypatch):
    """Older Tritons lack `triton.knobs`: normkit launches the normal way there."""
    import builtins

    real_import = builtins.__import__
    monkeypatch.setattr(L, "_loaded", False)
    L._load_triton()
    assert L._direct  # (this Triton, 3.6, with knobs: direct launches)

    def no_knobs(name, globals=None, locals=None, fromlist=(), level=0):
        if name == "triton" and fromlist and "knobs" in fromlist or name == "triton.knobs":
            raise ImportError("no knobs in this Triton")
        return real_import(name, globals, locals, fromlist, level)

    monkeypatch.setattr(L, "_loaded", False)
    monkeypatch.setattr(builtins, "__import__", no_knobs)
    L._load_triton()
    monkeypatch.setattr(builtins, "__import__", real_import)
    assert L._loaded and not L._direct
    fn, launcher, normal = fake_gpu
    x = torch.zeros(32)
    go = L.bind(fn, (1,), (x, x, 32, 1.0), {"BLOCK": 16})
    go(x, x, 32, 1.0)
    assert go.kernel is None and len(normal) == 1 and not launcher.calls


def test_check_mode_verifies_every_direct_launch(fake_gpu, monkeypatch):
    """check mode re-binds every direct launch with Triton's binder: the same kernel and the same
    arguments (a constexpr of the same type and value counts as the same: an int above 256 is a new
    object each time it is computed), else AssertionError."""
    import triton.runtime.jit as jit

    fn, launcher, normal = fake_gpu
    names = ("X", "Y", "n", "eps", "BLOCK", "FLAG")

    def binder(*args, debug=None, instrumentation_mode=None, **kwargs):
        bound = dict(zip(names, args), **kwargs)
        bound.setdefault("FLAG", 7)
        return {name: bound[name] for name in names}, "spec", "options"

    kernel_cache = {}
    monkeypatch.setattr(fn, "device_caches", {0: (kernel_cache, {}, None, None, binder)})
    monkeypatch.setattr(jit, "compute_cache_key", lambda *args: "key")
    L.set_mode("check")
    x, y = torch.zeros(32), torch.zeros(32)
    go = L.bind(fn, (1,), (x, y, 32, 1.0), {"BLOCK": int("1024")})
    kernel_cache["key"] = go.kernel                          # what Triton's own lookup returns
    go(x, y, 48, 1.0)                                        # direct, checked: passes
    assert len(launcher.calls) == 1 and not normal
    assert L._same_argument(int("1024"), int("1024")) and not L._same_argument(1024, 1024.0)
    assert not L._same_argument(1024, True) and not L._same_argument(x, x.clone())
    monkeypatch.setattr(fn, "device_caches", {0: (kernel_cache, {}, None, None,
                                                  lambda *a, **k: ({**binder(*a, **k)[0], "X": x.clone()}, "", ""))})
    with pytest.raises(AssertionError, match="arguments differ"):  # a tensor must be the same object
        go(x, y, 48, 1.0)
    kernel_cache["key"] = object()
    with pytest.raises(AssertionError, match="another kernel"):
        go(x, y, 48, 1.0)
    assert len(launcher.calls) == 1


def test_launch_fitted_chooses_the_grid_from_the_compiled_kernel(fake_gpu):
    """On every call the kernel is looked up (compiled if new: warmup, no launch), the grid chosen
    from it, then launched the normal way."""
    from triton.compiler.compiler import CompiledKernel

    fn, launcher, normal = fake_gpu
    seen = []

    def grid_for(kernel):
        seen.append(kernel)
        return (5, 2)

    x = torch.zeros(32)
    assert L.launch_fitted(fn, grid_for, x, x, 32, 1.0, BLOCK=16) == (5, 2)
    assert [grid for grid, _, _ in normal] == [(5, 2)] and not launcher.calls
    assert len(seen) == 1 and isinstance(seen[0], CompiledKernel) and seen[0].n_regs == 40


def test_fitted_launch_of_a_kernel_that_failed_to_load_raises_its_error_again(fake_gpu):
    """A kernel Triton could not load (more shared memory than the device has) keeps the error
    in its `run` and has no n_regs: the next launch_fitted of it (say, the same tile with another
    programs_per_sm) raises that OutOfResources again (which the launchers' compile fallback handles), not
    an AttributeError from the grid function."""
    import functools

    from triton.compiler.compiler import _raise_error
    from triton.runtime.errors import OutOfResources

    fn, launcher, normal = fake_gpu
    kernel = fn.run(grid=(1,), warmup=True)
    del kernel.n_regs
    kernel._run = functools.partial(_raise_error, OutOfResources(264192, 232448, "shared memory"))
    seen = []
    with pytest.raises(OutOfResources, match="shared memory"):
        L.launch_fitted(fn, lambda k: seen.append(k.n_regs) or (1,), torch.zeros(32), torch.zeros(32), 32, 1.0,
                        BLOCK=16)
    assert not seen and not launcher.calls and not normal


def test_bound_launches_from_threads_pass_their_own_arguments(fake_gpu):
    fn, launcher, normal = fake_gpu
    tensors = [torch.zeros(64)[i:] for i in range(4)]
    go = L.bind(fn, (1,), (tensors[0], tensors[0], 32, 1.0), {"BLOCK": 16})
    errors = []

    def work(i):
        try:
            for j in range(200):
                go(tensors[i], tensors[(i + j) % 4], 32, float(i))
        except Exception as exc:  # pragma: no cover
            errors.append(exc)

    run_in_threads(work, 4, fast_switch=True)
    assert not errors and not normal and len(launcher.calls) == 800
    for call in launcher.calls:
        i = int(call[12])
        assert call[9] is tensors[i] and call[11] == 32 and call[13:] == (16, 7)


# ----------------------------------------------------------------------------- interpreter, CPU
@pytest.mark.skipif(CUDA, reason="interpreter path")
def test_interpreter_binds_the_normal_path():
    if not interpret():
        pytest.skip("plain-PyTorch CPU path (TRITON_INTERPRET unset): no kernel launched")
    x = torch.randn(4, 64)
    w = torch.randn(64)
    out, rstd = torch.empty_like(x), torch.empty(4)
    ops.launch_fwd(x, out, weight=w, rstd=rstd, eps=1e-6)
    ops.launch_fwd(x, out, weight=w, rstd=rstd, eps=1e-6)
    assert ops.plan_cache_info()["hits"] == 1
    (planned,) = ops.PLANS._plans.values()
    assert planned.go.kernel is None  # the interpreter has no compiled kernel to launch directly
    ref = torch.nn.functional.rms_norm(x.double(), (64,), w.double(), 1e-6)
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- GPU: fast vs normal
gpu = pytest.mark.skipif(not CUDA, reason="needs a CUDA device")

CASES = [
    # m, n, dtype, kwargs for rms_norm / layer_norm
    (8, 4096, torch.bfloat16, {}),
    (64, 256, torch.float32, {}),
    (1, 128, torch.float16, {}),
    (3, 1000, torch.float16, {"bias": True}),
    (257, 8192, torch.bfloat16, {"residual": True}),
    (33, 24576, torch.float32, {"residual": True, "bias": True}),
    (16, 4096, torch.bfloat16, {"weight_offset": 1.0}),
    (16, 4096, torch.bfloat16, {"casting_mode": "llama"}),
    (12, 64, torch.float32, {"heads": 4}),
    (5, 333, torch.float64, {"residual": True}),
    (40, 2048, torch.bfloat16, {"layer_norm": True, "bias": True}),
]


def _run_case(m, n, dtype, opts, seed=0, misaligned=False):
    """fwd outputs and (dx, dweight, dbias, dresidual) through autograd, and the low-level
    backward with rstd recomputed."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    heads = opts.get("heads", 1)

    def rand(*shape):
        if misaligned:
            flat = torch.randn(int(torch.tensor(shape).prod()) + 1, generator=g, device="cuda").to(dtype)
            return flat[1:].view(*shape)
        return torch.randn(*shape, generator=g, device="cuda").to(dtype)

    x = rand(m, heads, n) if heads > 1 else rand(m, n)
    w = rand(*x.shape[-2 if heads > 1 else -1:]) + 1
    b = rand(*w.shape) if opts.get("bias") else None
    r = rand(*x.shape) if opts.get("residual") else None
    dy = rand(*x.shape)
    leaves = [t.detach().requires_grad_() if t is not None else None for t in (x, w, b, r)]
    if opts.get("layer_norm"):
        y = normkit.layer_norm(*leaves)
    else:
        y = normkit.rms_norm(*leaves, weight_offset=opts.get("weight_offset", 0.0),
                             casting_mode=opts.get("casting_mode", "fp32"))
    wanted = [t for t in leaves if t is not None]
    grads = torch.autograd.grad(y, wanted, dy)
    low = []
    if not opts.get("layer_norm") and heads == 1:
        low = list(normkit.rms_norm_bwd(x, w, dy, None, has_bias=b is not None))
        low += list(normkit.rms_norm_fwd(x, w, b, r, store_rstd=True))
    return [y.detach(), *grads, *[t for t in low if t is not None]]


def _same(a, b):
    assert len(a) == len(b)
    for i, (u, v) in enumerate(zip(a, b)):
        assert u.dtype == v.dtype and u.shape == v.shape, i
        assert torch.equal(u, v), f"output {i} differs"


@gpu
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}-{str(c[2])[6:]}-{'-'.join(c[3]) or 'plain'}")
def test_fast_launch_bitwise_equal_to_normal(case):
    m, n, dtype, opts = case
    L.set_mode("off")
    normal = _run_case(m, n, dtype, opts)
    assert ops.plan_cache_info()["size"] == 0
    L.set_mode("check")  # every direct launch re-checked against Triton's binder and cache lookup
    first = _run_case(m, n, dtype, opts)    # records the plans (full path, normal launches)
    assert ops.plan_cache_info()["size"] > 0
    second = _run_case(m, n, dtype, opts)   # plans: direct launches
    _same(normal, first)
    _same(normal, second)
    third = _run_case(m, n, dtype, opts, misaligned=True)   # views starting at element 1
    L.set_mode("off")
    _same(_run_case(m, n, dtype, opts, misaligned=True), third)


@gpu
def test_fast_path_skips_jitfunction_run(monkeypatch):
    x = torch.randn(8, 4096, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(4096, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn_like(x)
    L.set_mode("on")
    torch.autograd.grad(normkit.rms_norm(x, w), (x, w), dy)   # records the plans
    calls = []
    for name in ("norm_fwd_kernel", "norm_bwd_kernel", "sum_partials_kernel"):
        fn = getattr(kernels(), name)
        original = fn.run
        monkeypatch.setattr(fn, "run", lambda *a, _o=original, **k: (calls.append(1), _o(*a, **k))[1])
    for _ in range(3):
        torch.autograd.grad(normkit.rms_norm(x, w), (x, w), dy)
    assert not calls
    # a misaligned x is another signature: the full path once, then direct again
    xm = torch.randn(8 * 4096 + 1, device="cuda", dtype=torch.bfloat16)[1:].view(8, 4096).requires_grad_()
    torch.autograd.grad(normkit.rms_norm(xm, w), (xm, w), dy)
    assert len(calls) >= 2
    n = len(calls)
    torch.autograd.grad(normkit.rms_norm(xm, w), (xm, w), dy)
    assert len(calls) == n


@gpu
def test_launch_hook_forces_normal_path(monkeypatch):
    x = torch.randn(8, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    L.set_mode("on")
    expected = normkit.rms_norm_fwd(x, w)[0]
    normkit.rms_norm_fwd(x, w)
    seen = []
    monkeypatch.setattr(triton.knobs.runtime, "launch_enter_hook", lambda metadata: seen.append(metadata.get()["name"]))
    out = normkit.rms_norm_fwd(x, w)[0]
    assert seen and "norm_fwd_kernel" in seen[0]
    assert torch.equal(out, expected)


@gpu
def test_cuda_graph_capture_uses_the_current_stream():
    m, n = 64, 1024
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    dy = torch.randn_like(x)
    L.set_mode("on")

    def step():
        out, _, rstd = normkit.rms_norm_fwd(x, w, store_rstd=True)
        dx, dw, _, _ = normkit.rms_norm_bwd(x, w, dy, rstd)
        return out, dx, dw

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            step()  # warm-up on the side stream: a plan for each launch of step()
    torch.cuda.current_stream().wait_stream(side)
    assert ops.plan_cache_info()["size"] == 2
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static = step()
    x.copy_(torch.randn_like(x))
    dy.copy_(torch.randn_like(dy))
    graph.replay()
    torch.cuda.synchronize()
    L.set_mode("off")
    for got, want in zip(static, step()):
        assert torch.equal(got, want)


@gpu
def test_threads_launch_their_own_specializations():
    L.set_mode("check")
    shapes = [(8, 4096, torch.bfloat16), (64, 256, torch.float32), (3, 1000, torch.float16), (17, 512, torch.float32)]
    inputs = [(torch.randn(m, n, device="cuda", dtype=d), torch.randn(n, device="cuda", dtype=d)) for m, n, d in shapes]
    L.set_mode("off")
    expected = [normkit.rms_norm_fwd(x, w, store_rstd=True) for x, w in inputs]
    torch.cuda.synchronize()
    L.set_mode("check")
    errors = []

    def work(i):
        try:
            for j in range(30):
                x, w = inputs[(i + j) % len(inputs)]
                out = normkit.rms_norm_fwd(x, w, store_rstd=True)
                torch.cuda.current_stream().synchronize()
                want = expected[(i + j) % len(inputs)]
                assert torch.equal(out[0], want[0]) and torch.equal(out[2], want[2])
        except Exception as exc:  # pragma: no cover
            errors.append(exc)

    run_in_threads(work, 4)
    assert not errors, errors[0]


@gpu
def test_ops_results_do_not_depend_on_the_mode():
    # the lower level entry point the autograd path uses, with a None statistic (recompute)
    x = torch.randn(32, 2048, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(2048, device="cuda", dtype=torch.bfloat16)
    dy = torch.randn_like(x)
    results = {}
    for mode in ("off", "check", "check"):
        L.set_mode(mode)
        dx, dw, _ = ops.norm_bwd(x, w, dy, rstd=None, eps=1e-6)
        results.setdefault(mode, []).append((dx, dw))
    for dx, dw in results["check"]:
        assert torch.equal(dx, results["off"][0][0]) and torch.equal(dw, results["off"][0][1])


def test_dependent_launch_is_for_compiled_kernels_only():
    """Programmatic dependent launch (the finisher waiting in griddepcontrol.wait) is sm_90+ PTX:
    never asked for off CUDA (the interpreter runs CPU tensors)."""
    from normkit._runtime import dependent_launch

    assert dependent_launch(torch.device("cpu")) is False


@gpu
@pytest.mark.parametrize("family", ["rms", "layer_norm"])
def test_dependent_launch_changes_no_bit(family, monkeypatch):
    """The finisher as a dependent launch (sm_90+) gives the same dx, dweight and dbias, bit for
    bit, as the finisher launched after the backward has completed; also inside a CUDA graph."""
    from normkit._runtime import dependent_launch

    if not dependent_launch(torch.device("cuda")):
        pytest.skip("programmatic dependent launch needs compute capability 9.0")
    g = torch.Generator(device="cuda").manual_seed(12)
    m, n = 3000, 2048
    x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16, generator=g)
    dy = torch.randn(m, n, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(n, device="cuda", dtype=torch.bfloat16, generator=g)
    rms = family == "rms"

    def backward():
        dx, dw, db = torch.empty_like(x), torch.empty_like(w), None if rms else torch.empty_like(w)
        ops.launch_bwd(x, dy, dx, weight=w, dweight=dw, dbias=db, eps=1e-6, is_rms_norm=rms)
        return [t for t in (dx, dw, db) if t is not None]

    with_pdl = backward()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        backward()  # warm-up on the capture stream
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            captured = backward()
    graph.replay()
    torch.cuda.synchronize()
    monkeypatch.setattr(launchers, "dependent_launch", lambda device: False)
    without = backward()
    torch.cuda.synchronize()
    _same(without, with_pdl)
    _same(without, captured)
