"""Reliability: NaN/Inf isolation, eps = 0, concurrency and bitwise determinism (docs/reliability.md).

* NaN/±Inf in one row (of x, the residual or dy): that row's outputs become non-finite exactly
  where PyTorch's float64 `F.rms_norm` / `F.layer_norm` (with autograd) do; every other row's
  y, rstd, mean, residual_out and dx stay *bitwise* what they are without the bad row; dweight and
  dbias (sums over rows) are non-finite in the columns PyTorch's are and correct elsewhere.
* eps = 0 with an all-zero (LayerNorm: constant) row: rstd = inf and that row's y and dx are NaN,
  as in PyTorch; nothing is clamped.
* Two Python threads at once give the results of serial calls, bitwise; the config caches are
  safe to share. Two CUDA streams likewise (GPU only).
* dx, dweight, dbias (and dresidual) are bitwise identical over 20 runs, for RMSNorm, the fused
  residual add and LayerNorm, on whole-row and column-tile paths.
"""

import contextlib
import json
import os
import subprocess
import sys
import threading
from unittest import mock

import pytest
import torch
import torch.nn.functional as F

import normkit
from normkit import config as cfg
from normkit import launchers, ops
from normkit._runtime import interpret
from tests.utils import assert_matches, run_in_threads

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
ON_GPU = DEVICE == "cuda"
NAN, INF = float("nan"), float("inf")
# The Triton interpreter's numpy reports the NaN/Inf arithmetic these tests do on purpose.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning",
                                        "ignore:overflow encountered:RuntimeWarning",
                                        "ignore:divide by zero encountered:RuntimeWarning")

# A column-tile configuration with stacked rows: the bad row shares its row block with good ones,
# and its statistics go through the tile-merge path.
COLUMN_TILES = cfg.TileConfig(block_m=4, block_n=32, one_tile=False, programs_per_sm=1)


def _inputs(m, n, dtype=torch.float32, seed=0, device=DEVICE):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, n, generator=g, dtype=torch.float64)
    r = torch.randn(m, n, generator=g, dtype=torch.float64)
    w = 1.0 + 0.5 * torch.randn(n, generator=g, dtype=torch.float64)
    b = 0.5 * torch.randn(n, generator=g, dtype=torch.float64)
    dy = 0.5 * x + torch.randn(m, n, generator=g, dtype=torch.float64)
    return [t.to(device=device, dtype=dtype) for t in (x, r, w, b, dy)]


def _torch_float64(norm, x, weight, bias, residual, dy, eps):
    """PyTorch's own float64 result and gradients: y, h, [dx, dweight, dbias, dresidual]."""
    leaves = [None if t is None else t.detach().double().cpu().requires_grad_() for t in (x, weight, bias, residual)]
    x64, w64, b64, r64 = leaves
    h = x64 if r64 is None else x64 + r64
    n = x.shape[-1]
    y = F.rms_norm(h, (n,), w64, eps=eps) if norm == "rms" else F.layer_norm(h, (n,), w64, b64, eps=eps)
    y.backward(dy.detach().double().cpu())
    return y.detach(), h.detach(), [None if t is None else t.grad for t in leaves]


def _pattern(t):
    return ~torch.isfinite(t.detach().double().cpu())


def _assert_same_nonfinite(out, ref, what):
    """Non-finite exactly where PyTorch's float64 result is (NaN or Inf alike), close elsewhere."""
    got, want = _pattern(out), _pattern(ref)
    assert torch.equal(got, want), f"{what}: non-finite at {got.nonzero().tolist()[:8]}, " \
                                   f"PyTorch float64 at {want.nonzero().tolist()[:8]}"
    finite = ~want
    if finite.any():
        assert_matches(out.detach().double().cpu()[finite], ref[finite], torch.float32, what + " (finite part)")


@contextlib.contextmanager
def _multiprocessors(count):
    with mock.patch.object(launchers, "multiprocessor_count", lambda device: count):
        yield


def _fwd_bwd(norm, x, weight, bias, residual, dy, *, eps, config=None, saved=(True,)):
    """The low-level launchers (any config): one forward, then a backward for each entry of
    `saved` (with the saved statistics, or recomputing them). Returns one dict per backward:
    y, residual_out, mean, rstd, dx, dweight, dbias."""
    m, n = x.shape
    rms = norm == "rms"
    y = torch.empty_like(x)
    residual_out = torch.empty_like(x) if residual is not None else None
    rstd = torch.empty(m, device=x.device, dtype=torch.float32)
    mean = None if rms else torch.empty_like(rstd)
    ops.launch_fwd(x, y, weight=weight, bias=bias, residual=residual, residual_out=residual_out, mean=mean,
                   rstd=rstd, eps=eps, is_rms_norm=rms, config=config)
    h = x if residual_out is None else residual_out
    results = []
    for use_saved in saved:
        dx = torch.empty_like(x)
        dweight = torch.empty_like(weight)
        dbias = None if bias is None else torch.empty_like(bias)
        with _multiprocessors(3) if not ON_GPU else contextlib.nullcontext():
            ops.launch_bwd(h, dy, dx, weight=weight, dweight=dweight, dbias=dbias, mean=mean if use_saved else None,
                           rstd=rstd if use_saved else None, eps=eps, is_rms_norm=rms, config=config)
        results.append(dict(y=y, residual_out=residual_out, mean=mean, rstd=rstd, dx=dx, dweight=dweight,
                            dbias=dbias))
    return results


# ----------------------------------------------------------------------------- NaN / Inf
M, N, BAD = 9, 40, 5  # row 5 shares its row block with rows 4, 6, 7 (COLUMN_TILES: 32 + 8 columns) or all rows
POISONS = [(value, where) for where in ("x", "residual", "dy") for value in (NAN, INF)] + [(-INF, "x")]
# The column-tile path (slow in the interpreter) takes the poisons that reach its statistics merge.
COLUMN_POISONS = [(NAN, "x"), (INF, "x"), (-INF, "x"), (NAN, "residual"), (INF, "dy")]


def _poison_params():
    name = lambda v: "nan" if v != v else ("inf" if v > 0 else "-inf")  # noqa: E731
    return [pytest.param(v, w, path, id=f"{name(v)}-in-{w}-{path}") for path in ("heuristic", "column_tiles")
            for v, w in (POISONS if path == "heuristic" else COLUMN_POISONS)]


def _norm_inputs(norm, where, seed):
    x, residual, weight, bias, dy = _inputs(M, N, seed=seed)
    bias = bias if norm == "ln" else None
    residual = residual if where == "residual" or norm == "rms" else None  # rms: the fused add
    return x, residual, weight, bias, dy, (1e-6 if norm == "rms" else 1e-5)


def _forward_then_both_backwards(norm, x, weight, bias, residual, dy, eps, config):
    """One forward, then the backward with the saved statistics and with recomputed ones."""
    return _fwd_bwd(norm, x, weight, bias, residual, dy, eps=eps, config=config, saved=(True, False))


@pytest.mark.parametrize("value,where,path", _poison_params())
@pytest.mark.parametrize("norm", ["rms", "ln"])
def test_nonfinite_value_stays_in_its_row(norm, value, where, path):
    x, residual, weight, bias, dy, eps = _norm_inputs(norm, where, seed=1)
    config = COLUMN_TILES if path == "column_tiles" else None
    poisoned = {"x": x, "residual": residual, "dy": dy}[where].clone()
    poisoned[BAD, 7] = value
    args = dict(x=x, residual=residual, dy=dy)
    args[where] = poisoned
    y_ref, _, grads = _torch_float64(norm, args["x"], weight, bias, args["residual"], args["dy"], eps)
    clean_runs = _forward_then_both_backwards(norm, x, weight, bias, residual, dy, eps, config)
    runs = _forward_then_both_backwards(norm, args["x"], weight, bias, args["residual"], args["dy"], eps, config)
    others = [r for r in range(M) if r != BAD]
    for stats, got, clean in zip(("saved stats", "recomputed stats"), runs, clean_runs):
        for name in ("y", "residual_out", "mean", "rstd", "dx"):
            if got[name] is not None:  # every other row: bitwise what it was without the bad row
                assert torch.equal(got[name][others], clean[name][others]), f"{name} ({stats}): another row changed"
        _assert_same_nonfinite(got["y"][BAD], y_ref[BAD], "y of the bad row")
        _assert_same_nonfinite(got["dx"][BAD], grads[0][BAD], f"dx of the bad row ({stats})")
        assert _pattern(got["dx"][BAD]).all()  # the bad row's gradient is NaN throughout, never silently finite
        _assert_same_nonfinite(got["dweight"], grads[1], f"dweight ({stats})")
        if bias is not None:
            _assert_same_nonfinite(got["dbias"], grads[2], f"dbias ({stats})")
            if where != "dy":  # dbias = Σ dy does not see x: bitwise unchanged
                assert torch.equal(got["dbias"], clean["dbias"])


@pytest.mark.parametrize("norm", [normkit.rms_norm, normkit.layer_norm], ids=["rms", "ln"])
def test_nonfinite_row_through_autograd(norm):
    """The same through the public API and autograd, with a fused residual and 3-D input."""
    x, residual, weight, bias, dy = _inputs(2 * 6, 40, seed=2)
    x, residual, dy = (t.view(2, 6, 40) for t in (x, residual, dy))
    x[1, 2, 11] = NAN
    name = "rms" if norm is normkit.rms_norm else "ln"
    bias = bias if name == "ln" else None
    leaves = [None if t is None else t.clone().requires_grad_() for t in (x, weight, bias, residual)]
    y = norm(*leaves)
    y.backward(dy)
    y_ref, _, grads = _torch_float64(name, x.view(12, 40), weight, bias, residual.view(12, 40), dy.view(12, 40),
                                     1e-6 if name == "rms" else 1e-5)
    _assert_same_nonfinite(y.view(12, 40), y_ref, "y")
    for what, leaf, ref in zip(["dx", "dweight", "dbias", "dresidual"], leaves, grads):
        if leaf is not None:
            _assert_same_nonfinite(leaf.grad.view(ref.shape), ref, what)
    assert _pattern(y[1, 2]).all() and not _pattern(y[0]).any() and not _pattern(y[1, 3:]).any()


# ----------------------------------------------------------------------------- eps = 0
@pytest.mark.parametrize("path", ["heuristic", "column_tiles"])
@pytest.mark.parametrize("norm,row_value", [("rms", 0.0), ("ln", 0.0), ("ln", 2.5)], ids=["rms_zero", "ln_zero",
                                                                                          "ln_constant"])
def test_eps_zero_on_a_zero_variance_row(norm, row_value, path):
    """eps = 0 is allowed (validation: eps ≥ 0) and not clamped: a row of zeros (LayerNorm: any
    constant row) has variance 0, rstd = 1/sqrt(0) = inf and ĥ = 0·inf = NaN — y and dx of that
    row are NaN, dweight is NaN in every column, as PyTorch's float64 F.rms_norm / F.layer_norm
    give; dbias and the other rows are unaffected. Saved and recomputed statistics alike."""
    x, _, weight, bias, dy = _inputs(M, N, seed=3)
    bias = bias if norm == "ln" else None
    x[BAD] = row_value
    config = COLUMN_TILES if path == "column_tiles" else None
    y_ref, _, grads = _torch_float64(norm, x, weight, bias, None, dy, 0.0)
    assert torch.isnan(y_ref[BAD]).all() and torch.isnan(grads[0][BAD]).all()  # PyTorch's semantics
    for got in _forward_then_both_backwards(norm, x, weight, bias, None, dy, 0.0, config):
        assert got["rstd"][BAD].item() == INF
        assert torch.isnan(got["y"][BAD]).all() and torch.isnan(got["dx"][BAD]).all()
        _assert_same_nonfinite(got["y"], y_ref, "y")
        _assert_same_nonfinite(got["dx"], grads[0], "dx")
        _assert_same_nonfinite(got["dweight"], grads[1], "dweight")
        assert torch.isnan(got["dweight"]).all()
        if bias is not None:
            _assert_same_nonfinite(got["dbias"], grads[2], "dbias")
            assert torch.isfinite(got["dbias"]).all()


def test_eps_zero_public_api_matches_pytorch():
    x, _, weight, _, dy = _inputs(4, 32, seed=4)
    x[2] = 0.0
    xs = x.clone().requires_grad_()
    y = normkit.rms_norm(xs, weight, eps=0.0)
    y.backward(dy)
    y_ref, _, grads = _torch_float64("rms", x, weight, None, None, dy, 0.0)
    _assert_same_nonfinite(y, y_ref, "y")
    _assert_same_nonfinite(xs.grad, grads[0], "dx")
    assert torch.isnan(y[2]).all() and torch.isfinite(y[[0, 1, 3]]).all()
    with pytest.raises(ValueError, match="eps must be a finite number >= 0"):
        normkit.rms_norm(x, weight, eps=-1e-6)


@pytest.mark.parametrize("norm", ["rms_norm", "layer_norm"])
def test_float64_keeps_eps_and_weight_offset_in_float64(norm):
    """Regression (found on the H200 by test_properties): Triton passes a Python float to a compiled
    kernel as float32, so eps = 1e-5 became 9.99999974e-6 and float64 LayerNorm on rows with mean 3
    and variance 1e-4 was off by 3.8e-12 relative (tolerance 1e-13). The kernels now take doubles.
    weight_offset = 0.1 is not a float32 value either (2e-9 relative if rounded)."""
    g = torch.Generator().manual_seed(7)
    x = (3.0 + 0.01 * torch.randn(6, 1867, generator=g, dtype=torch.float64)).to(DEVICE)
    weight = (0.9 + 0.1 * torch.randn(1867, generator=g, dtype=torch.float64)).to(DEVICE)
    dy = torch.randn(6, 1867, generator=g, dtype=torch.float64).to(DEVICE)
    offset = {"weight_offset": 0.1} if norm == "rms_norm" else {}
    leaves = [x.clone().requires_grad_(), weight.clone().requires_grad_()]
    getattr(normkit, norm)(*leaves, eps=1e-5, **offset).backward(dy)
    ref = [x.cpu().clone().requires_grad_(), weight.cpu().clone().requires_grad_()]
    if norm == "rms_norm":
        y_ref = torch.nn.functional.rms_norm(ref[0], (1867,), ref[1] + 0.1, eps=1e-5)
    else:
        y_ref = torch.nn.functional.layer_norm(ref[0], (1867,), ref[1], eps=1e-5)
    y_ref.backward(dy.cpu())
    y = getattr(normkit, norm)(x, weight, eps=1e-5, **offset)
    for what, got, want in (("y", y, y_ref), ("dx", leaves[0].grad, ref[0].grad), ("dweight", leaves[1].grad, ref[1].grad)):
        err = ((got.cpu() - want).norm() / want.norm()).item()
        assert err < 1e-13, f"{norm} {what}: relative error {err:.2e}"


# ----------------------------------------------------------------------------- concurrency
def _job_inputs(kind, n, seed):
    m = 24
    return _inputs(m, n, dtype=torch.bfloat16 if seed % 2 else torch.float32, seed=seed)


def _job(kind, inputs):
    """A fwd+bwd through the public API on prepared inputs; returns every output and gradient."""
    x, residual, weight, bias, dy = inputs
    leaves = [x.clone().requires_grad_(), weight.clone().requires_grad_()]
    if kind == "rms":
        y = normkit.rms_norm(*leaves, eps=1e-6)
        outs = [y]
    elif kind == "fused_add":
        leaves.append(residual.clone().requires_grad_())
        y, h = normkit.rms_norm(leaves[0], leaves[1], residual=leaves[2], prenorm=True, weight_offset=1.0)
        outs = [y, h]
    else:
        leaves.append(bias.clone().requires_grad_())
        y = normkit.layer_norm(leaves[0], leaves[1], leaves[2])
        outs = [y]
    y.backward(dy)
    return [t.detach() for t in outs] + [t.grad for t in leaves]


# Narrow and wide rows (GPU: whole-row and column-tile backward), each family, both dtypes.
JOBS = [(kind, _job_inputs(kind, n, seed)) for seed, (kind, n) in enumerate(
    [("rms", 64), ("fused_add", 300), ("layer_norm", 1000), ("rms", 4097), ("layer_norm", 64),
     ("fused_add", 20000 if ON_GPU else 2000), ("layer_norm", 40000 if ON_GPU else 3000), ("rms", 130)])]
CPU_JOBS = [(kind, inputs) for kind, inputs in JOBS if inputs[0].shape[-1] <= 1000]


def _run_threads(jobs, serial, *, threads=2, rounds, streams=False):
    """Run `jobs` in `threads` threads at once (each in its own order, `rounds` times), stopping at
    the first exception or mismatch; returns the problems seen."""
    problems, stop = [], threading.Event()
    barrier = threading.Barrier(threads)

    def worker(k):
        stream = torch.cuda.Stream() if streams else None
        barrier.wait()
        with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
            for r in range(rounds):
                order = list(range(len(jobs)))[::(1 if (k + r) % 2 == 0 else -1)]
                for i in order:
                    if stop.is_set():
                        return
                    try:
                        got = _job(*jobs[i])
                        if stream is not None:
                            stream.synchronize()
                        if not all(torch.equal(a, b) for a, b in zip(got, serial[i])):
                            problems.append(f"job {i} ({jobs[i][0]}): differs from the serial result")
                            stop.set()
                    except Exception as exc:  # noqa: BLE001 - reported, the test fails on it
                        problems.append(f"job {i} ({jobs[i][0]}): {type(exc).__name__}: {str(exc)[:200]}")
                        stop.set()

    if ON_GPU:
        torch.cuda.synchronize()  # inputs and serial results complete before other streams read them
    run_in_threads(worker, threads, fast_switch=True)
    return problems


# Two threads hammering small fwd+bwd calls, in a fresh interpreter process: a race there leaves
# Triton's patched builtins behind (each launch restores what it saw patched), which would leak
# into later tests and hide further races, so the CPU variant never runs in the test process.
_THREADS_SCRIPT = r"""
import json, os, sys, threading
os.environ["TRITON_INTERPRET"] = "1"
import torch, normkit
import triton.language as tl
from normkit import config as cfg, ops
g = torch.Generator().manual_seed(0)
x, r, dy = (torch.randn(6, 48, generator=g) for _ in range(3))
w, b = torch.randn(48, generator=g), torch.randn(48, generator=g)
three_programs = cfg.TileConfig(block_m=2, block_n=64, one_tile=True)
def call(k):
    if k % 3 == 2:  # 3 programs: a grid index switched under a running program shows
        y = torch.empty_like(x)
        ops.launch_fwd(x, y, weight=w, eps=1e-6, config=three_programs)
        return [y]
    leaves = [t.clone().requires_grad_() for t in (x, w, b, r)]
    if k % 3:
        y = normkit.layer_norm(leaves[0], leaves[1], leaves[2])
    else:
        y = normkit.rms_norm(leaves[0], leaves[1], residual=leaves[3])
    y.backward(dy)
    return [y.detach()] + [t.grad for t in leaves if t.grad is not None]
serial = [call(k) for k in range(3)]
builtins = {name: getattr(tl, name) for name in ("load", "store", "sum", "program_id", "arange")}
problems, stop, barrier = [], threading.Event(), threading.Barrier(2)
def worker(k):
    barrier.wait()
    for i in range(int(sys.argv[1])):
        if stop.is_set():
            return
        try:
            got = call(i + k)
            if not all(torch.equal(a, e) for a, e in zip(got, serial[(i + k) % 3])):
                problems.append("differs from the serial result"); stop.set()
        except Exception as exc:
            problems.append(type(exc).__name__ + ": " + str(exc)[:200]); stop.set()
sys.setswitchinterval(1e-6)
threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
for t in threads: t.start()
for t in threads: t.join()
if any(getattr(tl, name) is not f for name, f in builtins.items()):
    problems.append("triton.language left patched by two interleaved launches (each restored what it saw)")
print(json.dumps(problems))
"""


# Triton 3.6's interpreter keeps global state (the grid index in interpreter_builder, tl builtins
# patched per launch by _patch_lang), so normkit serializes interpreted launches (normkit/launch.py);
# before that, two threads raised InterpreterError or computed wrong values (12 of 12 trials).
@pytest.mark.parametrize("streams", [False] + ([True] if ON_GPU else []), ids=lambda s: "own_streams" if s
                         else "default_stream")
def test_two_threads_match_serial_calls(streams):
    if interpret():
        done = subprocess.run([sys.executable, "-c", _THREADS_SCRIPT, "300"], capture_output=True, text=True,
                              timeout=300, env={**os.environ, "TRITON_INTERPRET": "1"})
        assert done.returncode == 0, done.stderr[-2000:]
        problems = json.loads(done.stdout.strip().splitlines()[-1])
    else:
        serial = [_job(*job) for job in JOBS]
        cfg.tile_config.cache_clear()  # both threads fill the launch-config cache at once
        problems = _run_threads(JOBS, serial, rounds=10, streams=streams)
    assert not problems, problems[:3]


@pytest.mark.skipif(not interpret(), reason="the interpreter's launches, serialized (CPU)")
def test_two_threads_match_serial_calls_when_triton_is_serialized():
    """With only Triton's interpreter serialized (a lock around each interpreted launch, i.e.
    the fix suggested above), everything normkit does in Python — validation, allocation,
    autograd, the config and launcher caches — runs in two threads at once and gives the serial
    results bitwise."""
    from triton.runtime import interpreter

    lock = threading.Lock()
    original = interpreter.GridExecutor.__call__

    def serialized(self, *args, **kwargs):
        with lock:
            return original(self, *args, **kwargs)

    jobs = CPU_JOBS
    serial = [_job(*job) for job in jobs]
    cfg.tile_config.cache_clear()
    with mock.patch.object(interpreter.GridExecutor, "__call__", serialized):
        problems = _run_threads(jobs, serial, rounds=3)
    assert not problems, problems[:3]


def test_config_caches_are_safe_to_share():
    """tile_config / fit_block_m / backward_grid from 8 threads at once, from an empty cache,
    equal the uncached function's answers."""
    widths = list(range(1, 3000, 7)) + [4096, 8192, 16384, 16385, 32768, 32769, 65536, 65537, 262144]
    plain = getattr(cfg.tile_config, "__wrapped__", cfg.tile_config)
    expected = {(n, b, i): plain(n, b, i) for n in widths for b in (False, True) for i in (False, True)}
    cfg.tile_config.cache_clear()
    problems, barrier = [], threading.Barrier(8)

    def worker(k):
        barrier.wait()
        for key in (list(expected) if k % 2 else reversed(list(expected))):
            got = cfg.tile_config(*key)
            if got != expected[key]:
                problems.append((key, got))
            fitted = cfg.fit_block_m(got, 37)
            if fitted.block_m != min(got.block_m, 64) or cfg.backward_grid(fitted, 37, 132) < 1:
                problems.append((key, "fit/grid", fitted))

    run_in_threads(worker, 8, fast_switch=True)
    assert not problems, problems[:5]


@pytest.mark.skipif(not ON_GPU, reason="CUDA streams need a GPU")
def test_two_cuda_streams_match_serial_calls():
    """The jobs split over two CUDA streams launched back to back (kernels of both in flight at
    once), three rounds, against the serial results on the default stream: bitwise equal."""
    serial = [_job(*job) for job in JOBS]
    torch.cuda.synchronize()
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    for stream in streams:
        stream.wait_stream(torch.cuda.current_stream())
    results = []
    for _ in range(3):
        for i, job in enumerate(JOBS):
            with torch.cuda.stream(streams[i % 2]):
                results.append((i, _job(*job)))
    torch.cuda.synchronize()
    for i, got in results:
        assert all(torch.equal(a, b) for a, b in zip(got, serial[i])), f"job {i} ({JOBS[i][0]}) on stream {i % 2}"


# ----------------------------------------------------------------------------- determinism
RUNS = 20
# (M, N): on a GPU a persistent backward over many row blocks, whole rows and column tiles. In the
# interpreter the public API runs one program on a small shape; the low-level backward then runs
# forced configurations with 3 persistent programs each owning several row blocks.
DETERMINISM_SHAPES = [(8192, 4096), (2048, 20000), (32768, 256)] if ON_GPU else [(24, 200)]


def _family_grads(family, x, residual, weight, bias, dy):
    leaves = [x.clone().requires_grad_(), weight.clone().requires_grad_()]
    if family == "rms":
        y = normkit.rms_norm(leaves[0], leaves[1])
    elif family == "fused_add":
        leaves.append(residual.clone().requires_grad_())
        y, _ = normkit.rms_norm(leaves[0], leaves[1], residual=leaves[2], prenorm=True)
    else:
        leaves.append(bias.clone().requires_grad_())
        y = normkit.layer_norm(*leaves)
    y.backward(dy)
    return [leaf.grad for leaf in leaves]


def _low_level_grads(family, h, weight, bias, dy, dres, config):
    dx, dweight = torch.empty_like(h), torch.empty_like(weight)
    dbias = torch.empty_like(bias) if family == "layer_norm" else None
    with _multiprocessors(3):
        ops.launch_bwd(h, dy, dx, weight=weight, dweight=dweight, dbias=dbias, dresidual_out=dres, eps=1e-5,
                       is_rms_norm=family != "layer_norm", config=config)
    return [t for t in (dx, dweight, dbias) if t is not None]


@pytest.mark.parametrize("family", ["rms", "fused_add", "layer_norm"])
def test_gradients_bitwise_identical_over_20_runs(family):
    """dx, dweight and dbias / dresidual through autograd, 20 runs, bitwise; in the interpreter
    also the low-level backward (recomputing the statistics; the fused add's dresidual_out) on a
    column-tile configuration with 3 persistent programs each owning several row blocks."""
    for m, n in DETERMINISM_SHAPES:
        x, residual, weight, bias, dy = _inputs(m, n, dtype=torch.bfloat16 if ON_GPU else torch.float32, seed=m)
        first = _family_grads(family, x, residual, weight, bias, dy)
        for run in range(1, RUNS):
            again = _family_grads(family, x, residual, weight, bias, dy)
            for k, (a, b) in enumerate(zip(first, again)):
                assert torch.equal(a, b), f"{family} {m}x{n}: gradient {k} differs in run {run}"
    if ON_GPU:
        return
    x, residual, weight, bias, dy = _inputs(M, N, seed=5)
    h = x + residual if family == "fused_add" else x
    dres = residual if family == "fused_add" else None  # a gradient arriving on residual_out
    first = _low_level_grads(family, h, weight, bias, dy, dres, COLUMN_TILES)
    for run in range(1, RUNS):
        again = _low_level_grads(family, h, weight, bias, dy, dres, COLUMN_TILES)
        for k, (a, b) in enumerate(zip(first, again)):
            assert torch.equal(a, b), f"{family} column tiles: gradient {k} differs in run {run}"
