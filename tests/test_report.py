"""The verification report (`python -m normkit`): passes on correct kernels, fails on wrong ones."""

import json
import math
import os
import subprocess
import sys

import pytest
import torch

from normkit import config as cfg
from normkit import ops, report
from normkit.bench import cases, precompile


def test_quick_report_passes(capsys, tmp_path):
    path = tmp_path / "report.json"
    assert report.main(["--quick", "--no-bench", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "relative error vs a float64 reference, ‖got − ref‖ / ‖ref‖" in out  # what the numbers are
    assert "tolerance (tol)" in out
    rows = [line for line in out.splitlines() if line.rstrip().endswith(("PASS", "FAIL"))]
    assert rows and all(line.rstrip().endswith("PASS") for line in rows)
    assert {"fp32", "bf16", "fp16", "fp64"} <= {line.split()[-10] for line in rows}
    data = json.loads(path.read_text())
    assert data["passed"] is True
    assert all(case["passed"] for case in data["cases"])
    assert {"y", "rstd", "dx", "dx*", "dweight", "dweight*", "autograd dx"} <= set(data["cases"][0]["errors"])


@pytest.fixture
def tiny_grid(monkeypatch):  # (run with --full: every case, whatever the subset would pick)
    cases = [(report.Case((3, 7)), torch.float32), (report.Case((2, 3, 40)), torch.bfloat16),
             (report.Case((12, 96), "strided"), torch.float16)]
    monkeypatch.setattr(report, "grid", lambda on_gpu, quick: cases)
    return cases


def test_report_fails_when_dx_is_wrong(monkeypatch, capsys, tiny_grid):
    real = ops.norm_bwd

    def perturbed(*args, **kwargs):
        dx, dweight, dbias = real(*args, **kwargs)
        return dx * 1.05, dweight, dbias

    monkeypatch.setattr(ops, "norm_bwd", perturbed)
    assert report.main(["--full", "--no-bench"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and " !" in out


def test_report_checks_layer_norm_and_residual_cases(monkeypatch, capsys):
    """The LayerNorm and pre-norm cases pass as they are, and a wrong dbias fails its row."""
    cases = [(report.Case((5, 48), "layer norm"), torch.float32), (report.Case((2, 3, 40), "residual"), torch.float32)]
    monkeypatch.setattr(report, "grid", lambda on_gpu, quick: cases)
    assert report.main(["--full", "--no-bench"]) == 0
    real = ops.norm_bwd

    def wrong_dbias(*args, **kwargs):
        dx, dweight, dbias = real(*args, **kwargs)
        return dx, dweight, None if dbias is None else dbias * 1.05

    monkeypatch.setattr(ops, "norm_bwd", wrong_dbias)
    capsys.readouterr()
    assert report.main(["--full", "--no-bench"]) == 1
    rows = [line for line in capsys.readouterr().out.splitlines() if line.rstrip().endswith(("PASS", "FAIL"))]
    assert any("layer norm" in r and r.rstrip().endswith("FAIL") for r in rows)
    assert any("residual" in r and r.rstrip().endswith("PASS") for r in rows)


def test_report_fails_on_nan_and_on_crash(monkeypatch, capsys, tiny_grid):
    real = ops.norm_fwd

    def broken(x, *args, **kwargs):
        if x.dtype == torch.float16:
            raise RuntimeError("kernel exploded")
        out, residual_out, mean, rstd = real(x, *args, **kwargs)
        return out.clone().fill_(math.nan), residual_out, mean, rstd

    monkeypatch.setattr(ops, "norm_fwd", broken)
    assert report.main(["--full", "--no-bench"]) == 1
    out = capsys.readouterr().out
    assert "nan" in out and "RuntimeError: kernel exploded" in out
    assert out.count("FAIL") >= 4  # three rows, the crash line, the summary


def test_verdict_and_tolerances():
    assert report.verdict({"y": (1e-3, 1e-2), "dx": (2e-3, 1e-2)})
    assert not report.verdict({"y": (math.nan, 1e-2)})
    assert not report.verdict({"y": (math.inf, 1e-2)})
    assert not report.verdict({})
    assert report.TOLERANCE[torch.bfloat16] > report.TOLERANCE[torch.float16] > \
        report.TOLERANCE[torch.float32] > report.TOLERANCE[torch.float64]


def test_no_kernels_means_no_pass(monkeypatch, capsys):
    from normkit import lowlevel

    monkeypatch.setattr(lowlevel, "backend", lambda device: "reference")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert report.main(["--quick"]) == 1
    assert "cannot run here: no GPU, and Triton's interpreter is off" in capsys.readouterr().err
    without_triton = {**lowlevel.runtime_info(), "triton": None}
    monkeypatch.setattr(lowlevel, "runtime_info", lambda: without_triton)
    assert report.main(["--quick"]) == 1
    assert "cannot run here: triton is not installed" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter is only chosen without a GPU")
def test_main_job_turns_on_the_interpreter_after_import():
    """`python -m normkit` imports normkit before __main__ runs: the interpreter must still be used."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    code = ("import normkit, normkit.__main__ as m; m._prefer_interpreter_without_gpu(); "
            "print(normkit.lowlevel.backend('cpu'))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "interpreter", out.stderr


# ----------------------------------------------------------------------------- the default subset
H200_SMS = 132
# what the default check must reach at least once (the subset is computed from these labels and more)
NAMED_PATHS = ["RMSNorm", "LayerNorm", "residual", "bias", "per-head", "offset", "llama", "no weight", "strided",
               "forward: whole row", "forward: column tiles", "forward: split rows",
               "backward, saved statistics: whole row", "backward, saved statistics: split rows",
               "backward, saved statistics: column tiles", "backward, recomputed statistics: whole row",
               "backward, recomputed statistics: split rows", "backward, recomputed statistics: column tiles",
               "RMSNorm, residual", "LayerNorm, residual", "bf16", "fp16", "fp32", "fp64"]


def _labels(items, interpret, sms):
    return set().union(*(cases.paths(case, dtype, interpret, sms) for case, dtype in items))


@pytest.mark.parametrize("on_gpu", [True, False], ids=["GPU (H200 heuristics)", "CPU interpreter"])
def test_the_subset_covers_every_path_of_the_full_grid(on_gpu):
    interpret, sms = (False, H200_SMS) if on_gpu else (True, 4)
    full = report.grid(on_gpu, quick=False)
    subset = cases.representative(full, interpret, sms)
    everything = _labels(full, interpret, sms)
    assert _labels(subset, interpret, sms) == everything
    named = NAMED_PATHS if on_gpu else [p for p in NAMED_PATHS if "split rows" not in p]
    assert set(named) <= everything, set(named) - everything
    assert {dtype for _, dtype in subset} == set(report.DTYPES)
    assert {f for case, _ in subset for f in case.features} == {f for case, _ in full for f in case.features}
    assert len(subset) <= len(full) // 4, len(subset)  # 124 → 15 on an H200 today
    assert subset == [item for item in full if item in subset]  # in the grid's order


def test_full_selects_every_case_and_seeds_follow_the_grid(monkeypatch):
    full = report.selected(on_gpu=False, quick=False, full=True)
    assert [(c, d) for _, c, d in full] == report.grid(False, False)
    assert [seed for seed, _, _ in full] == list(range(len(full)))
    subset = report.selected(on_gpu=False, quick=False, full=False)
    assert 0 < len(subset) < len(full)
    assert set(subset) <= set(full)  # the same seed for a case either way: the same inputs


def test_paths_name_the_tile_the_heuristics_pick():
    bf16 = torch.bfloat16
    wide = cases.paths(report.Case((64, 262144)), bf16, interpret=False, multiprocessors=H200_SMS)
    assert {"forward: split rows", "backward, saved statistics: split rows", "RMSNorm", "bf16",
            "RMSNorm, bf16"} <= wide and "rows not a multiple of 16" not in wide
    # 64 heads × 3 parts of a 40000-wide row cannot all be resident on 132 SMs: column tiles
    heads = cases.paths(report.Case((2, 64, 40000), "per-head"), bf16, interpret=False, multiprocessors=H200_SMS)
    assert {"backward, saved statistics: column tiles", "per-head", "RMSNorm, per-head"} <= heads
    interpreted = cases.paths(report.Case((2, 70000)), bf16, interpret=True, multiprocessors=4)
    assert {"forward: column tiles", "backward, recomputed statistics: column tiles"} <= interpreted
    # Llama casting rounds x̂ to x's dtype: nothing to round in fp32
    assert "llama" in cases.paths(report.Case((8, 256), "llama"), bf16, False, H200_SMS)
    assert "llama" not in cases.paths(report.Case((8, 256), "llama"), torch.float32, False, H200_SMS)
    ln = cases.paths(report.Case((33, 300), "layer norm, residual"), torch.float16, True, 4)
    assert {"LayerNorm", "bias", "residual", "LayerNorm, residual", "rows not a multiple of 16"} <= ln


def test_case_layouts_are_checked():
    assert report.Case((2, 3, 8), "layer norm, residual").features == {"layer norm", "residual"}
    assert report.Case((2, 3, 8), "per-head").heads == 3 and report.Case((2, 8)).heads == 1
    with pytest.raises(ValueError, match="layout features must be among"):
        report.Case((2, 8), "transposed")
    with pytest.raises(ValueError, match=r"per-head case needs a shape \(\.\.\., H, N\), got \(2, 8\)"):
        report.Case((2, 8), "per-head")
    with pytest.raises(ValueError, match="weight_offset is RMSNorm's"):
        report.Case((2, 8), "layer norm, offset")


@pytest.mark.parametrize("case", [report.Case((2, 16, 200), "residual"), report.Case((12, 96), "strided"),
                                  report.Case((4, 3, 96), "per-head"), report.Case((33, 300), "layer norm, residual"),
                                  report.Case((64, 256), "no weight")], ids=lambda c: c.label)
def test_tile_calls_are_what_the_launches_ask_for(case, monkeypatch):
    """`cases.tile_calls` mirrors ops.launch_fwd / launch_bwd: record what running the case asks for."""
    import inspect

    real, signature, asked = cfg.tile_config, inspect.signature(cfg.tile_config), set()

    def normalised(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return tuple(sorted(bound.arguments.items()))

    def recording(*args, **kwargs):
        asked.add(normalised(*args, **kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(cfg, "tile_config", recording)
    for dtype in (torch.bfloat16, torch.float32):
        asked.clear()
        report.run_case(case, dtype, report.case_inputs(case, dtype, torch.device("cpu"), seed=0))
        calls = cases.tile_calls(case, dtype, interpret=True, multiprocessors=4)
        predicted = {normalised(**kw) for kw in calls.values()}
        assert asked == predicted


def test_offset_is_checked_against_the_reference(monkeypatch, capsys):
    """A kernel that ignored weight_offset would fail the "offset" case (and only that one)."""
    items = [(report.Case((8, 64), "offset"), torch.float32), (report.Case((8, 64)), torch.float32)]
    monkeypatch.setattr(report, "grid", lambda on_gpu, quick: items)
    real = ops.norm_fwd
    monkeypatch.setattr(ops, "norm_fwd", lambda *args, **kwargs: real(*args, **{**kwargs, "weight_offset": 0.0}))
    assert report.main(["--full", "--no-bench"]) == 1
    rows = [line for line in capsys.readouterr().out.splitlines() if line.rstrip().endswith(("PASS", "FAIL"))]
    assert [r.split()[-1] for r in rows] == ["FAIL", "PASS"]


# ----------------------------------------------------------------------------- compiling first
def test_jobs_option_and_worker_count(capsys):
    assert report.parser().parse_args([]).jobs is None
    assert report.parser().parse_args(["--jobs", "0"]).jobs == 0
    for bad in ("-1", "two", "1.5"):
        with pytest.raises(SystemExit):
            report.parser().parse_args(["--jobs", bad])
        assert f"argument --jobs: --jobs must be a whole number ≥ 0 (0: no worker processes), got '{bad}'" \
            in capsys.readouterr().err
    assert precompile.workers(None, 100) == min(precompile.MAX_WORKERS, os.cpu_count())
    assert precompile.workers(0, 100) == 0 and precompile.workers(3, 2) == 2 and precompile.workers(None, 0) == 0
    with pytest.raises(ValueError, match="requested must be None or an int ≥ 0"):
        precompile.workers(-1, 10)


def test_precompile_runs_jobs_in_spawned_workers_and_reports_failures():
    idle = precompile.Pool([(os.getpid, ())], 0)  # no workers: nothing runs
    idle.wait(0)
    assert idle.close() is None and idle.failures == []
    seed, case, dtype = report.selected(on_gpu=False, quick=True, full=False)[0]
    # a verification case travels to a spawned worker and runs there (the interpreter: TRITON_INTERPRET
    # is inherited)
    pool = precompile.Pool([(report.warm_case, (case, dtype, seed, "cpu")), (abs, (-3,))], 2)
    pool.wait(1)
    pool.wait(1)  # (waiting twice counts once)
    assert pool.close() is None and pool.failures == []
    pool = precompile.Pool([(abs, (-3,)), (math.sqrt, (-1.0,)), (math.sqrt, (-2.0,))], 2)
    assert pool.close() == ("2 of 3 jobs failed in the workers (first: ValueError: math domain error); "
                            "their kernels compile here, one at a time")


def test_verify_on_a_gpu_runs_each_case_once_its_job_is_done(monkeypatch, capsys):
    from normkit.bench import cli as bench_cli

    items = report.selected(on_gpu=False, quick=True, full=False)
    events = []

    class Recorder:
        def __init__(self, jobs, workers):
            self.jobs, self.workers, self.note = jobs, workers, None
            events.append(("start", len(jobs), workers))

        def wait(self, index):
            events.append(("wait", index))

        def close(self):
            events.append(("close",))
            self.note = "2 of 9 jobs failed"
            return self.note

    monkeypatch.setattr(precompile, "Pool", Recorder)
    monkeypatch.setattr(report, "check", lambda case, dtype, device, seed: events.append(("check", seed)) or {})
    pool, first = report._precompile(items, report.parser().parse_args(["--jobs", "3"]))
    bench_jobs = [(bench_cli.warm, (case, ["normkit"])) for case in report.BENCH_GRID]
    assert pool.jobs == bench_jobs + [(report.warm_case, (case, dtype, seed)) for seed, case, dtype in items]
    assert pool.workers == 3 and first == len(bench_jobs)
    assert "in 3 worker processes" in capsys.readouterr().out
    # through main (a GPU pretended): each case after its own job, the pool closed before the timing table
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(report, "_backend", lambda on_gpu: "Triton on a pretend GPU")
    monkeypatch.setattr(report.lowlevel, "runtime_info", lambda: {"normkit": "0", "torch": "0", "triton": "0"})
    monkeypatch.setattr(report, "selected", lambda on_gpu, quick, full: items[:2])
    monkeypatch.setattr(report, "_bench", lambda rep, impls: events.append(("bench", *impls)) or True)
    events.clear()
    assert report.main(["--jobs", "2"]) == 1  # (check returns nothing: no case passes)
    assert events == [("start", 5, 2), ("wait", 3), ("check", items[0][0]), ("wait", 4), ("check", items[1][0]),
                      ("close",), ("bench", "normkit", "native")]
    assert capsys.readouterr().out.count("precompile: 2 of 9 jobs failed") == 1
    events.clear()
    assert report.main(["--jobs", "0", "--no-bench"]) == 1
    assert events == [("check", items[0][0]), ("check", items[1][0])]  # no pool: nothing waited for


def test_bench_warm_runs_every_implementation_once():
    from normkit.bench import cli as bench_cli

    bench_cli.warm((torch.float32, 4, 32), ["normkit", "native"], device="cpu")  # raises if one fails


def test_timing_summary_compares_with_the_peers_timed():
    def row(impl, fwd, bwd):
        return {"impl": impl, "family": "rms", "dtype": "bf16", "m": 16384, "n": 4096, "fwd_s": fwd, "bwd_s": bwd,
                "fwd_pct": 90.0, "bwd_pct": 95.0}

    default = report.timing_summary([row("normkit", 60e-6, 100e-6), row("native", 90e-6, 200e-6)])
    assert "normkit speed-up vs native" in default and "compile" not in default
    assert "1.50×" in default and "2.00×" in default
    full = report.timing_summary([row("normkit", 60e-6, 100e-6), row("native", 90e-6, 200e-6),
                                  row("compile", 66e-6, 120e-6)])
    assert "compile µs (% copy)" in full and "vs best peer" in full
    assert "1.10×" in full and "1.20×" in full
