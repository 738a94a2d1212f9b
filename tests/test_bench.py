"""The benchmark's pure helpers and its behaviour without a GPU."""

import argparse
import json
import math

import pytest
import torch

from normkit.bench import cli, output, timing
from normkit.bench.inputs import float64_errors, make_inputs

ON_GPU = torch.cuda.is_available()


# ----------------------------------------------------------------------------- bytes and bandwidth
def test_min_bytes():
    assert timing.min_bytes("fwd", 16384, 4096, 2) == 2 * 16384 * 4096 * 2
    assert timing.min_bytes("bwd", 16384, 4096, 4) == 3 * 16384 * 4096 * 4
    with pytest.raises(KeyError):
        timing.min_bytes("both", 1, 1, 2)


def test_percent_of_copy_matches_anchors():
    # ANCHORS.md: bf16 16384×4096 backward, quack 121 µs = 79 % of 4249 GB/s (µs are rounded).
    pct = timing.percent_of_copy(timing.min_bytes("bwd", 16384, 4096, 2), 121e-6, 4249e9)
    assert pct == pytest.approx(78.3, abs=0.2)
    assert timing.percent_of_copy(1000, 1e-6, 1e9) == pytest.approx(100.0)
    assert timing.percent_of_copy(1000, None, 1e9) is None
    assert timing.percent_of_copy(1000, 1e-6, None) is None


def test_input_sets_rotate_only_when_data_fits_in_l2():
    assert timing.input_sets_needed(timing.min_bytes("bwd", 131072, 8192, 2)) == 1
    assert timing.input_sets_needed(32 * 2**20) == math.ceil(4 * timing.L2_BYTES / (32 * 2**20))
    assert timing.input_sets_needed(1) == 16
    assert timing.input_sets_needed(0) == 1


def test_wall_time_counts_calls():
    calls = []
    seconds = timing.wall_time(lambda: calls.append(1), torch.device("cpu"), min_seconds=0.0,
                               min_calls=5)
    assert seconds > 0 and len(calls) == 7  # two warm-up calls, five timed


# ----------------------------------------------------------------------------- parsing
def test_parse_shapes_dtypes_impls():
    assert cli.parse_shapes("4096x2048, 16384×4096,") == [(4096, 2048), (16384, 4096)]
    for bad in ("4096", "4096x", "0x5", "axb", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            cli.parse_shapes(bad)
    assert cli.parse_dtypes("bf16,FP32") == [torch.bfloat16, torch.float32]
    with pytest.raises(argparse.ArgumentTypeError):
        cli.parse_dtypes("int8")
    assert cli.parse_impls("normkit,quack") == ["normkit", "quack"]
    with pytest.raises(argparse.ArgumentTypeError):
        cli.parse_impls("apex")


def test_grid():
    assert len(cli.DEFAULT_GRID) == 15 and cli.DEFAULT_GRID[0] == (torch.float32, 16384, 4096)
    assert (torch.bfloat16, 2048, 131072) in cli.DEFAULT_GRID
    assert cli.build_grid([(8, 16)], None) == [(torch.bfloat16, 8, 16)]
    assert cli.build_grid([(8, 16)], [torch.float32, torch.float16]) == [
        (torch.float32, 8, 16), (torch.float16, 8, 16)]
    assert cli.build_grid(None, [torch.float16]) == [(torch.float16, 16384, 4096)]


# ----------------------------------------------------------------------------- rendering
def _row(impl, fwd, bwd, **extra):
    row = {"impl": impl, "dtype": "torch.bfloat16", "m": 4096, "n": 2048, "fwd_s": fwd,
           "bwd_s": bwd, "fwd_pct": 50.0, "bwd_pct": 75.0, "fwd_method": "graph",
           "bwd_method": "graph", "wall_fwd_s": 1e-5, "wall_fwd_bwd_s": 8e-5,
           "err_y": 1e-3, "err_dx": 2e-3, "err_dweight": 3e-3}
    row.update(extra)
    return row


def test_markdown_rendering():
    results = [_row("normkit", 9e-6, 30e-6), _row("compile", 10e-6, 29e-6, bwd_method="do_bench"),
               {"impl": "liger", "dtype": "torch.bfloat16", "m": 4096, "n": 2048,
                "error": "RuntimeError: N too large"}]
    env = {"device": "NVIDIA H200", "torch": "2.11", "triton": "3.6", "copy_gbps": 4249.0}
    text = output.render_markdown(results, env)
    assert "NVIDIA H200" in text and "4249 GB/s" in text and "triton 3.6" in text
    assert "| dtype M×N | normkit | compile | liger | best, % copy |" in text
    assert "| bf16 4096×2048 | 30 | 29† | fails | compile 29, 75 % |" in text  # backward
    assert "| bf16 4096×2048 | 9 | 10 | fails | normkit 9, 50 % |" in text  # forward
    assert "| bf16 4096×2048 | 10 / 80 | 10 / 80 | — |" in text  # eager
    assert output.markdown_table(["a", "b"], [[1, 2]]) == "| a | b |\n|---|---|\n| 1 | 2 |"


def test_text_table_and_rows():
    rows = output.bench_rows([_row("normkit", 9e-6, 1.5e-3),
                              {"impl": "liger", "dtype": "torch.float32", "m": 1, "n": 2,
                               "error": "RuntimeError: boom"}])
    assert rows[0][:5] == ["bf16 4096×2048", "normkit", "9", "50 %", "1500"]
    assert output.fmt_us(30.44e-6) == "30.4" and output.fmt_us(None) == "—"
    assert rows[0][-1] == "3.0e-03"
    assert rows[1][2] == "fails: RuntimeError: boom"
    table = output.text_table(output.BENCH_HEADERS, rows).splitlines()
    assert len(table) == 4 and len({len(table[0]), len(table[1])}) == 1


def test_plot_is_optional(tmp_path):
    path = tmp_path / "p.png"
    problem = output.plot([_row("normkit", 9e-6, 30e-6)], str(path))
    assert (problem is None and path.stat().st_size > 0) or "matplotlib" in problem


# ----------------------------------------------------------------------------- accuracy
def test_float64_errors():
    x, weight, dy = make_inputs((5, 33), torch.float32, "cpu", seed=1)
    from normkit import reference

    y, rstd = reference.rms_norm_fwd(x.double(), weight.double(), 1e-6)
    dx, dweight = reference.rms_norm_bwd(x.double(), weight.double(), dy.double(), None, 1e-6)
    bad = y.clone()
    bad[0, 0] = math.nan
    errors = float64_errors(x, weight, dy, 1e-6, {
        "y": ("y", y), "rstd": ("rstd", rstd), "dx": ("dx", dx), "dweight": ("dweight", dweight),
        "y+1%": ("y", y * 1.01), "nan": ("y", bad)})
    assert errors["y"] == errors["rstd"] == errors["dx"] == errors["dweight"] == 0.0
    assert errors["y+1%"] == pytest.approx(0.01)
    assert math.isnan(errors["nan"])


def test_strided_inputs_and_dx_scale_for_single_columns():
    x, weight, dy = make_inputs((4, 6), torch.float16, "cpu", layout="strided")
    assert x.stride() == (12, 2) and dy.stride() == (12, 2) and weight.dtype == torch.float16
    x, weight, dy = make_inputs((3, 1), torch.float32, "cpu")
    # N = 1: dx = rstd·g·(1 − x̂²) ≈ rstd·g·eps/x² is almost all cancellation; an error of
    # 1e-7·rstd·|g| must count as ~1e-7, not as 1e-7 / (eps/x²).
    from normkit import reference

    dx, _ = reference.rms_norm_bwd(x.double(), weight.double(), dy.double(), None, 1e-6)
    noise = 1e-7 * (dy.double() * weight.double() / x.double().abs())
    errors = float64_errors(x, weight, dy, 1e-6, {"dx": ("dx", dx + noise)})
    assert errors["dx"] == pytest.approx(1e-7, rel=1e-2)


# ----------------------------------------------------------------------------- the command line
@pytest.mark.skipif(ON_GPU, reason="the CPU behaviour")
def test_cli_without_gpu_measures_nothing(capsys):
    assert cli.main([]) == 0
    assert "needs a CUDA GPU" in capsys.readouterr().out


def test_cli_dry_run(capsys, tmp_path):
    path = tmp_path / "bench.json"
    assert cli.main(["--dry-run", "--shapes", "8x96", "--dtypes", "fp32", "--markdown",
                     "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "DRY RUN" in out and "not a GPU measurement" in out and "| fp32 8×96 |" in out
    data = json.loads(path.read_text())
    assert data["environment"]["dry_run"] is True
    assert [r["impl"] for r in data["results"]] == ["normkit", "native"]
    for r in data["results"]:
        assert r["wall_fwd_s"] > 0 and r["wall_fwd_bwd_s"] > 0 and "fwd_s" not in r
        assert max(r["err_y"], r["err_dx"], r["err_dweight"]) < 1e-5


def test_cli_reports_a_failing_impl(monkeypatch, capsys):
    from normkit.bench import peers

    def broken(*args, **kwargs):
        raise RuntimeError("no such kernel")

    impl = peers.load("normkit")
    monkeypatch.setattr(peers, "load", lambda name: peers.Impl(name, broken, impl.backward))
    assert cli.main(["--dry-run", "--shapes", "2x8", "--impls", "normkit"]) == 1
    captured = capsys.readouterr()
    assert "fails: RuntimeError: no such kernel" in captured.out
    assert "normkit failed" in captured.err
