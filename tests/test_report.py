"""The verification report (`python -m normkit`): passes on correct kernels, fails on wrong ones."""

import json
import math
import os
import subprocess
import sys

import pytest
import torch

import normkit
from normkit import report


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
def tiny_grid(monkeypatch):
    cases = [(report.Case((3, 7)), torch.float32), (report.Case((2, 3, 40)), torch.bfloat16),
             (report.Case((12, 96), "strided"), torch.float16)]
    monkeypatch.setattr(report, "grid", lambda on_gpu, quick: cases)
    return cases


def test_report_fails_when_dx_is_wrong(monkeypatch, capsys, tiny_grid):
    real = normkit.rms_norm_bwd

    def perturbed(*args, **kwargs):
        dx, dweight, dbias, dresidual = real(*args, **kwargs)
        return dx * 1.05, dweight, dbias, dresidual

    monkeypatch.setattr(normkit, "rms_norm_bwd", perturbed)
    assert report.main(["--quick", "--no-bench"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and " !" in out


def test_report_checks_layer_norm_and_residual_cases(monkeypatch, capsys):
    """The LayerNorm and pre-norm cases pass as they are, and a wrong dbias fails its row."""
    cases = [(report.Case((5, 48), "layer norm"), torch.float32), (report.Case((2, 3, 40), "residual"), torch.float32)]
    monkeypatch.setattr(report, "grid", lambda on_gpu, quick: cases)
    assert report.main(["--quick", "--no-bench"]) == 0
    real = normkit.layer_norm_bwd

    def wrong_dbias(*args, **kwargs):
        dx, dweight, dbias, dresidual = real(*args, **kwargs)
        return dx, dweight, dbias * 1.05, dresidual

    monkeypatch.setattr(normkit, "layer_norm_bwd", wrong_dbias)
    capsys.readouterr()
    assert report.main(["--quick", "--no-bench"]) == 1
    rows = [line for line in capsys.readouterr().out.splitlines() if line.rstrip().endswith(("PASS", "FAIL"))]
    assert any("layer norm" in r and r.rstrip().endswith("FAIL") for r in rows)
    assert any("residual" in r and r.rstrip().endswith("PASS") for r in rows)


def test_report_fails_on_nan_and_on_crash(monkeypatch, capsys, tiny_grid):
    real = normkit.rms_norm_fwd
    calls = []

    def broken(x, *args, **kwargs):
        calls.append(x.dtype)
        if x.dtype == torch.float16:
            raise RuntimeError("kernel exploded")
        out, residual_out, rstd = real(x, *args, **kwargs)
        return out.clone().fill_(math.nan), residual_out, rstd

    monkeypatch.setattr(normkit, "rms_norm_fwd", broken)
    assert report.main(["--no-bench"]) == 1
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
