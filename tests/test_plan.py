"""Launch plans (normkit.plan, docs/design.md#launch-path): a call whose signature ran before
launches what it ran, and gives bitwise what the full path gives.

For a matrix of signatures, forward and backward: plans off (the full path every call), the first
call with plans (a miss: the full path, recording the plan) and the second (a hit) agree bit for
bit on every output, and against float64. Then: eps and weight_offset are per call; whatever
changes a launch (dtype, strides, alignment, M, a None, a flag, the device) is another signature;
forced configurations and tensor subclasses get no plan; bad input keeps its errors; the cache is
bounded; plans keep no tensor alive; threads. On a GPU also the split rows (heuristic shapes).
"""

import gc
import weakref

import pytest
import torch

from utils import assert_matches, run_in_threads

import normkit
from normkit import config as cfg
from normkit import launch as L
from normkit import launchers, ops, plan, reference

triton = pytest.importorskip("triton")
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
gpu = pytest.mark.skipif(DEVICE != "cuda", reason="needs a CUDA device")


pytestmark = pytest.mark.usefixtures("plans_on")


def _rand(g, shape, dtype, shift=0.0):
    return (torch.randn(shape, generator=g, dtype=torch.float64) + shift).to(dtype=dtype, device=DEVICE)


def _inputs(m, n, dtype, opts, seed=0):
    g = torch.Generator().manual_seed(seed)
    heads = opts.get("heads", 1)
    if opts.get("strided"):  # a column slice: row stride 2n
        x = _rand(g, (m, 2 * n), dtype, shift=1.0)[:, :n]
    else:
        x = _rand(g, (m, n), dtype, shift=1.0)
    pshape = (heads, n) if heads > 1 else (n,)
    weight = (1 + 0.5 * _rand(g, pshape, torch.float64)).to(dtype) if opts.get("weight", True) else None
    bias = _rand(g, pshape, dtype) if opts.get("bias") else None
    residual = _rand(g, (m, n), dtype) if opts.get("residual") else None
    dy = _rand(g, (m, n), dtype)
    return x, weight, bias, residual, dy


def _call(m, n, dtype, opts, seed=0, eps=1e-5, weight_offset=0.0):
    """The ops the autograd path calls: forward (stats stored or not), then the backward with the
    saved statistics (or recomputing them). Every output, in a list."""
    x, weight, bias, residual, dy = _inputs(m, n, dtype, opts, seed)
    rms = not opts.get("layer_norm")
    store = opts.get("store_stats", True)
    out, residual_out, mean, rstd = ops.norm_fwd(
        x, weight, bias, residual, eps=eps, weight_offset=weight_offset, is_rms_norm=rms, store_stats=store,
        out_dtype=opts.get("out_dtype"), residual_dtype=opts.get("residual_dtype"),
        x_hat_dtype=dtype if opts.get("llama") else None)
    h = x if residual_out is None else residual_out
    saved = store and not opts.get("recompute")
    dx, dweight, dbias = ops.norm_bwd(
        h, weight, dy, mean=mean if saved else None, rstd=rstd if saved else None,
        dresidual_out=dy if opts.get("dresidual") else None, bias_shape=None if bias is None else list(bias.shape),
        bias_dtype=None if bias is None else bias.dtype, eps=eps, weight_offset=weight_offset, is_rms_norm=rms,
        x_hat_dtype=dtype if opts.get("llama") else None)
    return [t for t in (out, residual_out, mean, rstd, dx, dweight, dbias) if t is not None]


def _same(a, b):
    assert len(a) == len(b)
    for i, (u, v) in enumerate(zip(a, b)):
        assert u.dtype == v.dtype and u.shape == v.shape, i
        assert torch.equal(u, v), f"output {i} differs"


F32, BF16, F64 = torch.float32, torch.bfloat16, torch.float64
CASES = [
    (6, 48, F32, {}),
    (5, 40, BF16, {"bias": True}),
    (7, 64, F32, {"residual": True, "dresidual": True}),
    (6, 48, F32, {"weight": False}),
    (6, 48, F32, {"weight": False, "bias": True, "layer_norm": True}),
    (6, 40, F32, {"layer_norm": True, "bias": True}),
    (5, 96, BF16, {"layer_norm": True, "residual": True, "residual_dtype": F32}),
    (8, 32, F32, {"heads": 4, "bias": True}),
    (6, 48, BF16, {"out_dtype": F32}),
    (6, 48, BF16, {"llama": True}),
    (6, 48, F32, {"out_dtype": BF16}),
    (6, 48, F32, {"store_stats": False}),
    (6, 48, F32, {"layer_norm": True, "recompute": True}),
    (5, 33, F64, {"residual": True}),
    (5, 33, F64, {"out_dtype": BF16}),  # (the interpreter's float32 stand-in for a bf16 y)
    (6, 48, F32, {"strided": True, "layer_norm": True}),
    (0, 48, F32, {"bias": True}),
]


def _case_id(case):
    m, n, dtype, opts = case
    return f"{m}x{n}-{str(dtype)[6:]}-" + ("-".join(f"{k}" for k in opts) or "plain")


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_plan_hit_is_bitwise_the_full_path(case):
    m, n, dtype, opts = case
    L.set_mode("off")
    full = _call(m, n, dtype, opts)
    assert ops.plan_cache_info()["size"] == 0
    L.set_mode("on")
    miss = _call(m, n, dtype, opts)
    info = ops.plan_cache_info()
    assert info["hits"] == 0 and info["size"] == (0 if m == 0 else 2)  # M = 0 launches nothing
    hit = _call(m, n, dtype, opts)
    assert ops.plan_cache_info()["hits"] == (0 if m == 0 else 2)
    _same(full, miss)
    _same(full, hit)
    if m:  # and right: y against float64 (the rest is the full path's, tested elsewhere)
        x, weight, bias, residual, _ = _inputs(m, n, dtype, opts)
        heads = opts.get("heads", 1)
        view = (lambda t: t if t is None or heads == 1 else t.reshape(-1, heads, n))  # noqa: E731
        y_ref = reference.norm_fwd(view(x.double()), None if weight is None else weight.double(),
                                   None if bias is None else bias.double(),
                                   None if residual is None else view(residual.double()), eps=1e-5,
                                   is_rms_norm=not opts.get("layer_norm"),
                                   x_hat_dtype=dtype if opts.get("llama") else None)[0]
        assert_matches(hit[0], y_ref.reshape(m, n), hit[0].dtype, "y")


def test_eps_and_weight_offset_are_passed_per_call():
    """One plan serves every eps and every nonzero weight_offset: each call's values reach the kernel."""
    results = {}
    for eps, offset in ((1e-5, 0.5), (0.25, 0.5), (1e-5, 2.0)):
        L.set_mode("off")
        full = _call(6, 48, F32, {}, eps=eps, weight_offset=offset)
        L.set_mode("on")
        results[eps, offset] = _call(6, 48, F32, {}, eps=eps, weight_offset=offset)
        _same(full, results[eps, offset])
    info = ops.plan_cache_info()
    assert info["size"] == 2 and info["hits"] == 4  # forward and backward: one plan each
    assert not torch.equal(results[1e-5, 0.5][0], results[0.25, 0.5][0])
    assert not torch.equal(results[1e-5, 0.5][0], results[1e-5, 2.0][0])


def test_layer_norm_weight_offset_zero_is_its_own_signature():
    """LayerNorm leaves the offset's add out when it is 0 (HAS_WEIGHT_OFFSET): 0 and 0.5 are two
    forwards, each right."""
    x, weight, bias, _, _ = _inputs(6, 48, F32, {"bias": True})
    outs = {}
    for offset in (0.0, 0.5, 0.0, 0.5):
        out = torch.empty_like(x)
        ops.launch_fwd(x, out, weight=weight, bias=bias, eps=1e-5, weight_offset=offset, is_rms_norm=False)
        y_ref = reference.norm_fwd(x.double(), weight.double(), bias.double(), eps=1e-5, is_rms_norm=False,
                                   weight_offset=offset)[0]
        assert_matches(out, y_ref, F32, "y")
        outs.setdefault(offset, []).append(out)
    assert ops.plan_cache_info() == dict(ops.plan_cache_info(), size=2, hits=2)
    assert torch.equal(*outs[0.0]) and torch.equal(*outs[0.5])


def _fwd(x, weight=None, bias=None, eps=1e-5, **kw):
    out = torch.empty(x.shape, dtype=kw.pop("out_dtype", x.dtype), device=x.device)
    rstd = torch.empty(x.shape[0], device=x.device, dtype=torch.float64 if x.dtype == F64 else F32)
    mean = None if kw.get("is_rms_norm", True) else torch.empty_like(rstd)
    ops.launch_fwd(x, out, weight=weight, bias=bias, mean=mean, rstd=rstd, eps=eps, **kw)
    return [t for t in (out, mean, rstd) if t is not None]


def test_what_changes_a_launch_is_another_signature():
    """dtype, strides, 16-byte alignment, M, a None, out's dtype, a flag: each a plan of its own,
    each result equal to the full path's; the same signature again is a hit."""
    g = torch.Generator().manual_seed(1)
    base = _rand(g, (9, 64), F32)
    weight = _rand(g, (64,), F32)
    variants = {
        "plain": lambda: _fwd(base[:8], weight),
        "bf16": lambda: _fwd(base[:8].to(BF16), weight.to(BF16)),
        "strided": lambda: _fwd(base[:8, :32], weight[:32]),              # row stride 64, N 32
        "narrow": lambda: _fwd(base[:8, :32].contiguous(), weight[:32]),  # row stride 32
        "misaligned": lambda: _fwd(base.view(-1)[1:8 * 64 + 1].view(8, 64), weight),  # 4 bytes in
        "rows": lambda: _fwd(base[:7], weight),
        "no weight": lambda: _fwd(base[:8]),
        "bias": lambda: _fwd(base[:8], weight, weight),
        "out bf16": lambda: _fwd(base[:8], weight, out_dtype=BF16),
        "layer norm": lambda: _fwd(base[:8], weight, is_rms_norm=False),
        "llama": lambda: _fwd(base[:8], weight, x_hat_dtype=BF16),
    }
    L.set_mode("off")
    full = {name: call() for name, call in variants.items()}
    L.set_mode("on")
    for name, call in variants.items():
        _same(full[name], call())
    assert ops.plan_cache_info()["size"] == len(variants) and ops.plan_cache_info()["hits"] == 0
    aligned = base.view(-1)[4:8 * 64 + 4].view(8, 64)  # 16 bytes in: aligned, the same signature as "plain"
    _same(_fwd(aligned, weight), _fwd(aligned, weight))
    for name, call in variants.items():
        _same(full[name], call())
    assert ops.plan_cache_info()["size"] == len(variants)
    assert ops.plan_cache_info()["hits"] == len(variants) + 2


class _Stub:
    """Just what plan.fwd_key reads of a tensor, on a device of our choosing."""

    def __init__(self, device):
        self.shape, self.dtype, self.device = torch.Size((8, 64)), F32, torch.device(device)

    def stride(self):
        return (64, 1)

    def data_ptr(self):
        return 4096


def test_device_and_current_device_are_in_the_key(monkeypatch):
    def key(device, current):
        monkeypatch.setattr(plan, "_get_device", lambda: current)
        x = _Stub(device)
        return plan.fwd_key(x, x, None, None, None, None, None, None, None, True, None, 0.0, None)

    assert key("cuda:0", 0) == key("cuda:0", 0)
    assert key("cuda:0", 0) != key("cuda:1", 0)  # another device
    assert key("cuda:1", 0) != key("cuda:1", 1)  # launched from another current device (a device switch)
    assert key("cpu", 0) == key("cpu", 1)        # (no CUDA device involved)


def test_guard_device_switches_only_when_needed(monkeypatch):
    monkeypatch.setattr(plan, "_get_device", lambda: 0)
    assert plan.guard_device(_Stub("cuda:0")) is None
    assert plan.guard_device(_Stub("cuda:1")) == torch.device("cuda:1")
    assert plan.guard_device(_Stub("cpu")) is None


def test_the_key_is_at_least_as_fine_as_tritons_specialization(monkeypatch):
    """Calls with one key pass the kernel arguments Triton specialises alike (Triton 3.6's own
    `native_specialize_impl`: dtypes, 16-byte alignment, integer classes), constexprs equal."""
    from triton._C.libtriton import native_specialize_impl
    from triton.backends import BaseBackend

    if not triton.__version__.startswith("3.6."):
        pytest.skip("checked against Triton 3.6's specialization")
    launched = []
    real = launchers.launch
    monkeypatch.setattr(launchers, "launch",
                        lambda fn, grid, *a, **k: launched.append((grid, a, k)) or real(fn, grid, *a, **k))
    g = torch.Generator().manual_seed(2)
    buf, weight = _rand(g, (9 * 64,), F32), _rand(g, (64,), F32)
    x = buf[:8 * 64].view(8, 64)
    _fwd(x, weight)
    (planned,) = ops.PLANS._plans.values()
    go = planned.go
    hits = []
    planned.go = lambda *a: hits.append(a) or go(*a)
    for offset in (4, 8, 16):  # 16, 32, 64 bytes in: aligned, the same key
        _fwd(buf[offset:offset + 8 * 64].view(8, 64), weight, eps=0.5)
    assert len(launched) == 1 and len(hits) == 3

    def spec(args):
        return [native_specialize_impl(BaseBackend, a, False, True, True) for a in args]

    for args in hits:
        assert spec(args) == spec(launched[0][1])


def test_forced_configs_and_plans_off_record_no_plan():
    x, weight, _, _, dy = _inputs(6, 48, F32, {})
    config = cfg.TileConfig(block_m=2, block_n=16, one_tile=False)
    for _ in range(2):
        ops.launch_fwd(x, torch.empty_like(x), weight=weight, eps=1e-5, config=config)
        ops.launch_bwd(x, dy, torch.empty_like(x), weight=weight, dweight=torch.empty_like(weight), eps=1e-5,
                       config=cfg.TileConfig(block_m=1, block_n=16, one_tile=False, programs_per_sm=1))
    assert ops.plan_cache_info()["size"] == 0
    L.set_mode("off")
    _call(6, 48, F32, {})
    _call(6, 48, F32, {})
    assert ops.plan_cache_info() == dict(ops.plan_cache_info(), size=0, hits=0, enabled=False)


def test_tensor_subclasses_get_no_plan():
    class Sub(torch.Tensor):
        pass

    assert plan.plain(torch.zeros(1), torch.nn.Parameter(torch.zeros(1)), None)
    assert not plan.plain(torch.zeros(1).as_subclass(Sub))
    x, weight, _, _, _ = _inputs(6, 48, F32, {})
    for _ in range(2):
        _fwd(x.as_subclass(Sub), weight)
    assert ops.plan_cache_info()["size"] == 0
    _fwd(x, weight)
    assert ops.plan_cache_info()["size"] == 1


def test_bad_input_after_a_plan_keeps_its_errors():
    x, weight, _, _, dy = _inputs(6, 48, F32, {})
    normkit.rms_norm(x, weight)
    normkit.rms_norm(x, weight)
    assert ops.plan_cache_info()["calls"]["hits"] == 1  # (a call plan: tests/test_calls.py)
    for bad, match in ((weight[:47], r"weight must have shape \(48,\), got \(47,\)"),
                       (weight.to(torch.int32), "weight")):
        with pytest.raises((ValueError, TypeError), match=match) as with_plans:
            normkit.rms_norm(x, bad)
        L.set_mode("off")
        with pytest.raises(type(with_plans.value)) as without:
            normkit.rms_norm(x, bad)
        L.set_mode("on")
        assert str(with_plans.value) == str(without.value)
    dx = torch.empty_like(x)
    ops.launch_bwd(x, dy, dx, weight=weight, dweight=torch.empty_like(weight), eps=1e-5)
    with pytest.raises(ValueError, match="dweight must be given exactly when weight is"):
        ops.launch_bwd(x, dy, dx, weight=weight, eps=1e-5)


def test_the_cache_is_bounded_oldest_first_out(monkeypatch):
    cache = plan.PlanCache(maxsize=3)
    for i in range(5):
        cache.put(i, f"plan {i}")
    assert cache.info()["size"] == 3 and cache.get(0) is None and cache.get(1) is None and cache.get(4) == "plan 4"
    assert (cache.hits, cache.misses) == (1, 2)
    cache.clear()
    assert cache.info() == dict(cache.info(), size=0, hits=0, misses=0)

    monkeypatch.setattr(ops.PLANS, "maxsize", 2)
    x, weight, _, _, _ = _inputs(8, 48, F32, {})
    for m in (8, 7, 6):  # three signatures, two kept
        _fwd(x[:m], weight)
    assert ops.plan_cache_info()["size"] == 2
    _fwd(x[:6], weight)
    _fwd(x[:7], weight)
    assert ops.plan_cache_info()["hits"] == 2
    _fwd(x[:8], weight)  # evicted first: a miss, filed again
    assert ops.plan_cache_info()["hits"] == 2 and ops.plan_cache_info()["size"] == 2


def test_plans_keep_no_tensor_alive():
    x, weight, bias, residual, dy = _inputs(6, 48, F32, {"bias": True, "residual": True})
    refs = [weakref.ref(t) for t in (x, weight, bias, residual, dy)]
    for _ in range(2):
        y, h = normkit.rms_norm(x.requires_grad_(), weight, bias, residual, prenorm=True)
        torch.autograd.backward([y, h], [dy, dy])
    assert ops.plan_cache_info()["size"] == 2 and ops.plan_cache_info()["calls"]["hits"] == 1
    del x, weight, bias, residual, dy, y, h
    gc.collect()
    assert all(ref() is None for ref in refs)


def test_threads_share_the_plans():
    """Four threads, four signatures, interleaved: every result equal to the full path's, one plan
    for each signature's forward and backward."""
    cases = [(6, 48, F32, {}), (5, 40, BF16, {"bias": True}), (6, 40, F32, {"layer_norm": True, "bias": True}),
             (7, 64, F32, {"residual": True})]
    L.set_mode("off")
    expected = [_call(*case) for case in cases]
    L.set_mode("on")
    errors = []

    def work(i):
        try:
            for j in range(3):
                k = (i + j) % len(cases)
                _same(expected[k], _call(*cases[k]))
        except Exception as exc:  # pragma: no cover
            errors.append(exc)

    run_in_threads(work, 4, fast_switch=True)
    assert not errors, errors[0]
    assert ops.plan_cache_info()["size"] == 2 * len(cases)


# ----------------------------------------------------------------------------- GPU
@gpu
@pytest.mark.parametrize("opts", [{}, {"residual": True, "dresidual": True}, {"layer_norm": True, "bias": True}],
                         ids=["rms", "fused_add", "layer_norm"])
def test_split_rows_plan_is_bitwise_the_full_path(opts):
    """Rows of 128 KB split across programs on an H200-class GPU (the heuristics' choice): the plan
    allocates zeroed exchange slots each call; misses, hits and plans off agree bit for bit."""
    n = 65536
    config = cfg.tile_config(n, False, False, multiprocessors=launchers.multiprocessor_count(torch.device("cuda")),
                             residual=bool(opts.get("residual")), layer_norm=bool(opts.get("layer_norm")),
                             element_size=2)
    if not config.split:
        pytest.skip("this GPU's heuristics do not split these rows")
    L.set_mode("off")
    full = _call(64, n, BF16, opts)
    L.set_mode("check")
    miss, hit, again = (_call(64, n, BF16, opts) for _ in range(3))
    assert ops.plan_cache_info()["hits"] == 4
    assert ops.PLANS._plans[next(k for k in ops.PLANS._plans if k[0] == "fwd")].xchg > 0
    for result in (miss, hit, again):
        _same(full, result)


@gpu
def test_plan_hits_launch_directly(monkeypatch):
    """On a GPU a hit launches the bound kernels (JITFunction.run is never called)."""
    from normkit._runtime import kernels

    _call(8, 4096, BF16, {})
    assert all(p.go.kernel is not None for p in ops.PLANS._plans.values())
    calls = []
    for name in ("norm_fwd_kernel", "norm_bwd_kernel", "sum_partials_kernel"):
        fn = getattr(kernels(), name)
        monkeypatch.setattr(fn, "run", lambda *a, _o=fn.run, **k: (calls.append(1), _o(*a, **k))[1])
    _call(8, 4096, BF16, {})
    assert not calls and ops.plan_cache_info()["hits"] == 2
