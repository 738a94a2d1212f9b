"""normkit.launch: the launcher cache that skips JITFunction.run once a specialization is known.

On any machine: the key against Triton 3.6's own specialization (native_specialize_impl), the
key's sensitivity (alignment, dtype, constexpr, int == 1, …), the whole miss → entry → direct
launch cycle with a stand-in CompiledKernel and launcher (no GPU needed), and the fallbacks
(interpreter, hooks, pre-run hooks, changed globals, unclassifiable arguments). On a GPU: the
fast path against the normal path, bitwise, for the forward and backward over shapes, dtypes and
flags, misaligned views, CUDA-graph capture and threads, each fast launch also checked against
Triton's own binder and cache lookup (mode "check").
"""


import pytest
import torch

from utils import run_in_threads

import normkit
from normkit import launch as L
from normkit import ops
from normkit._runtime import interpret, kernels

triton = pytest.importorskip("triton")
from triton._C.libtriton import native_specialize_impl  # noqa: E402
from triton.backends import BaseBackend  # noqa: E402

CUDA = torch.cuda.is_available()
TRITON_36 = triton.__version__.startswith("3.6.")


@pytest.fixture(autouse=True)
def _fresh_cache():
    mode = L.get_mode()
    L.clear_cache()
    yield
    L.set_mode(mode)
    L.clear_cache()


def key_of(*args, fn="fn", device=0, debug=False, mode="", **kwargs):
    return L.spec_key(fn, device, args, kwargs, debug, mode)


# ----------------------------------------------------------------------------- the key vs Triton
INTS = [0, 1, 2, 3, 15, 16, 17, 32, 4096, -1, -16, -17, 2**31 - 16, 2**31 - 1, 2**31, 2**31 + 16,
        -2**31, -2**31 - 1, -2**31 - 16, 2**40 + 3, 2**63 - 16, 2**63 - 1, 2**63, 2**63 + 16, 2**64 - 16,
        2**64 - 1]


def _triton_spec(value, specialize=True, align=True):
    return native_specialize_impl(BaseBackend, value, False, specialize, align)


@pytest.mark.skipif(not TRITON_36, reason="the key is checked against Triton 3.6's specialization")
def test_scalar_key_is_at_least_as_fine_as_triton():
    values = INTS + [True, False, 0.0, 1.0, 1e-6, -2.5, float("inf"), None]
    for a in values:
        for b in values:
            if key_of(a) == key_of(b):
                for specialize in (True, False):
                    for align in (True, False):
                        assert _triton_spec(a, specialize, align) == _triton_spec(b, specialize, align), (a, b)


@pytest.mark.skipif(not TRITON_36, reason="the key is checked against Triton 3.6's specialization")
def test_tensor_key_is_at_least_as_fine_as_triton():
    tensors = []
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        base = torch.zeros(64, dtype=dtype)
        tensors += [base, base[1:], base[2:], base[8:], base[16:], torch.nn.Parameter(base.clone())]
    for a in tensors:
        for b in tensors:
            if key_of(a) == key_of(b):
                assert _triton_spec(a) == _triton_spec(b)
    # and the key tells apart exactly what Triton does (no needless misses for tensors)
    for a in tensors:
        for b in tensors:
            if _triton_spec(a) == _triton_spec(b):
                assert key_of(a) == key_of(b)


def test_key_changes_with_what_triton_specialises_on():
    x = torch.zeros(64, dtype=torch.bfloat16)
    assert key_of(x) != key_of(x[1:])                                  # alignment
    assert key_of(x) == key_of(x[8:])                                  # 16 bytes further: aligned
    assert key_of(x) != key_of(x.float())                              # pointer dtype
    assert key_of(x) != key_of(None)                                   # None is a constexpr
    assert key_of(1) != key_of(2) and key_of(2) != key_of(16)         # int == 1, % 16
    assert key_of(2) == key_of(3) and key_of(16) == key_of(4096)
    assert key_of(2**31 - 16) != key_of(2**31 + 16)                    # i32 vs i64
    assert key_of(1) != key_of(True) and key_of(0) != key_of(False)   # u1 is not i32
    assert key_of(1) != key_of(1.0) and key_of(0.5) == key_of(2.0)    # fp32 is not specialised
    assert key_of(x, BLOCK=8) != key_of(x, BLOCK=16)                   # constexpr values
    assert key_of(x, A=1, B=2) != key_of(x, B=1, A=2)                  # constexpr names
    assert key_of(x, num_warps=4) != key_of(x, num_warps=8)            # options
    assert key_of(x, device=0) != key_of(x, device=1)                  # device
    assert key_of(x, debug=False) != key_of(x, debug=True)             # knobs-driven options
    assert key_of(x, mode="") != key_of(x, mode="consan")
    assert key_of(x, fn="a") != key_of(x, fn="b")
    assert key_of(x, None) != key_of(None, x)                          # positions


def test_unclassifiable_arguments_are_refused():
    np = pytest.importorskip("numpy")

    class Sub(torch.Tensor):
        pass

    for bad in (np.float64(1.0), np.int64(16), (1, 2), "s", torch.zeros(2).as_subclass(Sub), 2**64):
        with pytest.raises(L._Unsupported):
            key_of(bad)


# ----------------------------------------------------------------------------- the cycle, no GPU
class CudaLauncher:  # the name _make_entry accepts; records what it is called with
    def __init__(self):
        self.calls = []

    def __call__(self, *args):
        self.calls.append(args)


@pytest.fixture
def fake_gpu(monkeypatch):
    """A real JITFunction whose `run` (the normal path) returns a stand-in CompiledKernel with a
    recording launcher; CUDA device and stream stubbed."""
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
        normal.append((grid, args, kwargs))
        return kernel

    monkeypatch.setattr(fn, "run", run)
    L._load_triton()
    monkeypatch.setattr(L, "_usable", True)
    monkeypatch.setattr(L, "_get_device", lambda: 0)
    monkeypatch.setattr(L, "_get_stream", lambda device: 0x5000 + device)
    L.set_mode("on")
    return fn, kernel._run, normal


def test_cycle_miss_then_direct_launch(fake_gpu):
    fn, launcher, normal = fake_gpu
    x, y = torch.zeros(32), torch.zeros(32)
    L.launch(fn, (3,), x, y, 32, 1e-6, BLOCK=16)
    assert len(normal) == 1 and not launcher.calls and L.cache_size() == 1
    L.launch(fn, (3, 2), x, y, 48, 0.5, BLOCK=16)              # same specialization: direct
    assert len(normal) == 1
    # what JITFunction.run passes kernel.run: grid padded to 3, stream, function, packed metadata,
    # launch metadata and hooks (None: no hook set), then every argument in signature order.
    assert launcher.calls == [(3, 2, 1, 0x5000, 0xF00, (4, 1, 0), None, None, None, x, y, 48, 0.5, 16, 7)]
    L.launch(fn, (1,), x[1:], y, 32, 1e-6, BLOCK=16)            # misaligned: a new key
    L.launch(fn, (1,), x, y, 1, 1e-6, BLOCK=16)                 # n == 1: a new key
    L.launch(fn, (1,), x, y, 32, 1e-6, BLOCK=32)                # constexpr: a new key
    L.launch(fn, (1,), x, y, 32, 1e-6, BLOCK=16, num_warps=8)   # option: a new key
    assert len(normal) == 5 and len(launcher.calls) == 1 and L.cache_size() == 5


def test_cycle_grid_fitted_to_the_compiled_kernel(fake_gpu):
    """launch_fitted: on a miss the kernel is compiled first (warmup, no launch), the grid chosen
    from it, then launched the normal way; on a hit the grid comes from the cached entry's kernel."""
    from triton.compiler.compiler import CompiledKernel

    fn, launcher, normal = fake_gpu
    seen = []

    def grid_for(kernel):
        seen.append(kernel)
        return (5, 2)

    x = torch.zeros(32)
    assert L.launch_fitted(fn, grid_for, x, x, 32, 1.0, BLOCK=16) == (5, 2)
    assert [grid for grid, _, _ in normal] == [(1,), (5, 2)]  # warmup's placeholder, then the launch
    assert L.launch_fitted(fn, grid_for, x, x, 48, 1.0, BLOCK=16) == (5, 2)  # same specialization: direct
    assert len(normal) == 2 and launcher.calls[0][:3] == (5, 2, 1) and launcher.calls[0][11] == 48
    assert len(seen) == 2 and seen[0] is seen[1] and isinstance(seen[0], CompiledKernel)


def test_fitted_launch_of_a_kernel_that_failed_to_load_raises_its_error_again(fake_gpu):
    """A kernel Triton could not load (more shared memory than the device has) keeps the error
    in its `run` and has no n_regs: the next launch_fitted of it (say, the same tile with another
    programs_per_sm) raises that OutOfResources again (which ops' fallback handles), not an
    AttributeError from the grid function."""
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
    assert not seen and not launcher.calls


def test_cycle_constexpr_order_and_defaults(fake_gpu):
    fn, launcher, normal = fake_gpu
    x = torch.zeros(32)
    for _ in range(2):
        L.launch(fn, (1,), x, None, 5, 2.0, FLAG=3, BLOCK=64)
    assert len(normal) == 1
    assert launcher.calls[0][9:] == (x, None, 5, 2.0, 64, 3)    # signature order, not call order


@pytest.mark.parametrize("case", ["enter_hook", "exit_hook", "pre_run_hook", "callable_grid", "runtime_kwarg",
                                  "constexpr_positional", "off", "global_changed"])
def test_cycle_falls_back(fake_gpu, monkeypatch, case):
    fn, launcher, normal = fake_gpu
    x = torch.zeros(32)
    args, kwargs, grid = (x, x, 32, 1.0), {"BLOCK": 16}, (1,)
    if case == "runtime_kwarg":
        args, kwargs = (x, x, 32), {"eps": 1.0, "BLOCK": 16}
    if case == "constexpr_positional":
        args, kwargs = (x, x, 32, 1.0, 16), {}
    if case == "callable_grid":
        grid = lambda meta: (1,)  # noqa: E731
    L.launch(fn, grid, *args, **kwargs)
    if case == "enter_hook":
        monkeypatch.setattr(triton.knobs.runtime, "launch_enter_hook", lambda metadata: None)
    if case == "exit_hook":
        monkeypatch.setattr(triton.knobs.runtime.launch_exit_hook, "calls", [print])
    if case == "pre_run_hook":
        monkeypatch.setattr(fn, "pre_run_hooks", [lambda *a, **k: None])
    if case == "off":
        L.set_mode("off")
    if case == "global_changed":
        entry = next(iter(L._cache.values()))
        scope = {"G": 1}
        L._cache[next(iter(L._cache))] = entry[:5] + (((scope, "G", 2),),) + entry[6:]
    L.launch(fn, grid, *args, **kwargs)
    assert len(normal) == 2 and not launcher.calls


def test_cycle_check_mode_compares_constexprs_by_type_and_value(fake_gpu, monkeypatch):
    """check mode re-binds every fast launch with Triton's binder. A constexpr the entry was filed
    with is the same argument as an equal one of the same type computed elsewhere (ints above 256
    are new objects: a false alarm once seen on a GPU, BLOCK_N = 1024 from two widths); another value
    or type, or another tensor, is not."""
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
    L.launch(fn, (1,), x, y, 32, 1.0, BLOCK=int("1024"))   # normal launch, filed with this 1024
    key, entry = next(iter(L._cache.items()))
    kernel_cache["key"] = entry[6]                            # what Triton's own lookup returns
    block = int("1024")
    assert block is not entry[4][0]
    L.launch(fn, (1,), x, y, 48, 1.0, BLOCK=block)          # direct, checked: passes
    assert len(normal) == 1 and len(launcher.calls) == 1
    for tail in ((2048, 7), (1024.0, 7), (1024, True)):     # what the entry would pass differs
        L._cache[key] = entry[:4] + (tail,) + entry[5:]
        with pytest.raises(AssertionError, match="arguments differ"):
            L.launch(fn, (1,), x, y, 48, 1.0, BLOCK=block)
    L._cache[key] = entry
    monkeypatch.setattr(fn, "device_caches", {0: (kernel_cache, {}, None, None,
                                                  lambda *a, **k: ({**binder(*a, **k)[0], "X": x.clone()}, "", ""))})
    with pytest.raises(AssertionError, match="arguments differ"):  # a tensor must be the same object
        L.launch(fn, (1,), x, y, 48, 1.0, BLOCK=block)
    kernel_cache["key"] = object()
    with pytest.raises(AssertionError, match="another kernel"):
        L.launch(fn, (1,), x, y, 48, 1.0, BLOCK=block)


def test_cycle_stores_nothing_for_a_non_compiled_kernel(fake_gpu, monkeypatch):
    fn, launcher, normal = fake_gpu
    monkeypatch.setattr(fn, "run", lambda *a, grid, warmup, **k: normal.append(1))  # e.g. returns None
    x = torch.zeros(32)
    L.launch(fn, (1,), x, x, 32, 1.0, BLOCK=16)
    L.launch(fn, (1,), x, x, 32, 1.0, BLOCK=16)
    assert len(normal) == 2 and L.cache_size() == 0 and not launcher.calls


def test_cycle_threads(fake_gpu):
    fn, launcher, normal = fake_gpu
    tensors = [torch.zeros(64)[i:] for i in range(4)]
    errors = []

    def work(i):
        try:
            for j in range(200):
                L.launch(fn, (1,), tensors[(i + j) % 4], tensors[0], 32 + j % 2, 1.0, BLOCK=16)
        except Exception as exc:  # pragma: no cover
            errors.append(exc)

    run_in_threads(work, 4)
    assert not errors
    assert len(normal) + len(launcher.calls) == 800
    # every direct launch got the arguments it was called with (no entry built for another key)
    for call in launcher.calls:
        assert call[10] is tensors[0] and call[11] in (32, 33) and call[13:] == (16, 7)


# ----------------------------------------------------------------------------- fallbacks, CPU
@pytest.mark.skipif(CUDA, reason="interpreter path")
def test_interpreter_takes_the_normal_path():
    if not interpret():
        pytest.skip("plain-PyTorch CPU path (TRITON_INTERPRET unset): no kernel launched")
    x = torch.randn(4, 64)
    w = torch.randn(64)
    y = normkit.rms_norm(x, w)
    assert L.cache_size() == 0 and not L._cache
    ref = torch.nn.functional.rms_norm(x.double(), (64,), w.double(), 1e-6)
    torch.testing.assert_close(y.double(), ref, rtol=1e-5, atol=1e-5)


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
    assert not L._cache
    L.set_mode("check")  # every fast launch re-checked against Triton's binder and cache lookup
    first = _run_case(m, n, dtype, opts)    # fills the cache (normal path)
    assert L.cache_size() > 0
    second = _run_case(m, n, dtype, opts)   # direct launches
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
    torch.autograd.grad(normkit.rms_norm(x, w), (x, w), dy)   # fills the cache
    calls = []
    for name in ("norm_fwd_kernel", "norm_bwd_kernel", "sum_partials_kernel"):
        fn = getattr(kernels(), name)
        original = fn.run
        monkeypatch.setattr(fn, "run", lambda *a, _o=original, **k: (calls.append(1), _o(*a, **k))[1])
    for _ in range(3):
        torch.autograd.grad(normkit.rms_norm(x, w), (x, w), dy)
    assert not calls
    # a misaligned x is another specialization: the normal path once, then direct again
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
            step()  # warm-up on the side stream: the cache now holds every kernel of step()
    torch.cuda.current_stream().wait_stream(side)
    assert L.cache_size() >= 3
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
def test_check_mode_takes_an_equal_tile_computed_elsewhere():
    """Seen on a GPU: a backward filed in the cache with one width's tile, then launched with an
    equal tile built from another width (BLOCK_N 1024, a new int object), failed check mode's
    argument comparison although Triton binds the same kernel and values."""
    from normkit import config as cfg

    L.set_mode("check")
    results = []
    for n in (1000, 513):  # both round up to 1024; the tile's ints are computed each time
        tile = cfg.TileConfig(2, 1 << (n - 1).bit_length(), True, 4, programs_per_sm=4, prefetch=True)
        x = torch.randn(17, n, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        dy, dx, dw = torch.randn_like(x), torch.empty_like(x), torch.empty_like(w)
        rstd = torch.rsqrt(x.float().pow(2).mean(-1) + 1e-6)
        ops.launch_bwd(x, dy, dx, weight=w, dweight=dw, rstd=rstd, eps=1e-6, config=tile)
        results.append((x, w, dy, dx, dw))
    assert L.cache_size() >= 2
    L.set_mode("off")
    for x, w, dy, dx, dw in results:
        want_dx, want_dw, _ = ops.norm_bwd(x, w, dy, rstd=None, eps=1e-6)
        assert torch.allclose(dx.float(), want_dx.float(), atol=2e-2, rtol=2e-2)
        assert torch.allclose(dw.float(), want_dw.float(), atol=5e-2, rtol=2e-2)


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
    monkeypatch.setattr(ops, "dependent_launch", lambda device: False)
    without = backward()
    torch.cuda.synchronize()
    _same(without, with_pdl)
    _same(without, captured)
