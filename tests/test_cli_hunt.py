"""The command line given bad values: each ends in one clear error (exit 2), or a clear runtime failure
(exit 1), before anything runs — never a traceback, a hang or a silently wrong result file."""

import json
import pathlib

import pytest
import torch

from normkit.bench import cli as bench_cli
from tests.test_cli import _run  # (exit status, stdout, stderr) of `python -m normkit ARGV`, in-process

ON_GPU = torch.cuda.is_available()
ROOT = pathlib.Path(__file__).resolve().parents[1]


def _one_error(status, out, err, message, prog):
    assert status == 2 and out == "" and "Traceback" not in err, (status, out, err)
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith(f"{prog}: error: ") and message in errors[0], err


# ----------------------------------------------------------------------------- output files
def _bad_paths(tmp_path):
    (tmp_path / "folder").mkdir()
    return {"a directory": (str(tmp_path / "folder"), "it is a directory"),
            "a missing directory": (str(tmp_path / "missing" / "x.json"), "no directory"),
            "an empty path": ("", "an empty path"),
            "under /proc": ("/proc/normkit-x.json", "")}


@pytest.mark.parametrize("command, option", [
    (["bench", "--dry-run"], "--json"), (["bench", "--dry-run"], "--csv"), (["bench", "--dry-run"], "--plot"),
    (["bench", "--eager", "--dry-run"], "--json"), (["bench", "--model", "llama"], "--json"),
    (["bench", "--model", "llama"], "--csv"), (["verify", "--quick"], "--json")])
def test_an_output_that_cannot_be_written_is_refused_before_anything_runs(command, option, tmp_path, capsys):
    prog = "python -m normkit " + command[0]
    for label, (path, why) in _bad_paths(tmp_path).items():
        status, out, err = _run([*command, option, path], capsys)
        _one_error(status, out, err, f"argument {option}: {option} must be a file path that can be written, "
                                     f"got {path!r}", prog)
        assert why in err, (label, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder"]  # nothing written, nothing left behind


def test_a_writable_output_is_left_as_it_was_by_the_check(tmp_path):
    existing = tmp_path / "old.json"
    existing.write_text("kept")
    parse = bench_cli.parser().parse_args
    assert parse(["--json", str(existing), "--csv", str(tmp_path / "new.csv")]).json == str(existing)
    assert existing.read_text() == "kept" and not (tmp_path / "new.csv").exists()


@pytest.mark.parametrize("argv", [["bench", "--dry-run", "--json", "{0}/r", "--csv", "{0}/r"],
                                  ["bench", "--dry-run", "--csv", "{0}/r", "--plot", "{0}/./r"],
                                  ["bench", "--model", "llama", "--json", "{0}/r", "--csv", "{0}/r"]])
def test_two_outputs_naming_one_file_are_refused(argv, tmp_path, capsys):
    argv = [a.format(tmp_path) for a in argv]
    status, out, err = _run(argv, capsys)
    _one_error(status, out, err, "name the same file", "python -m normkit bench")
    assert not (tmp_path / "r").exists()


# ----------------------------------------------------------------------------- bench values
@pytest.mark.parametrize("option, given, expected", [
    ("--shapes", "4x8,4×8, 4x8", [(4, 8)]), ("--dtypes", "fp32,FP32", [torch.float32]),
    ("--impls", "normkit,native,normkit", ["normkit", "native"]), ("--family", "rms,rms", ["rms"])])
def test_a_value_given_twice_counts_once(option, given, expected):
    args = bench_cli.parser().parse_args([option, given])
    assert getattr(args, option[2:]) == expected


def test_a_dry_run_with_repeated_values_writes_each_row_once(tmp_path, capsys):
    path = tmp_path / "bench.json"
    status, _, err = _run(["bench", "--dry-run", "--impls", "normkit,normkit", "--shapes", "4x8,4x8",
                           "--dtypes", "fp32,fp32", "--json", str(path)], capsys)
    assert status == 0, err
    rows = json.loads(path.read_text())["results"]
    assert [(r["impl"], r["dtype"], r["m"], r["n"]) for r in rows] == [("normkit", "torch.float32", 4, 8)]


@pytest.mark.skipif(ON_GPU, reason="the CPU behaviour")
@pytest.mark.parametrize("argv", [["bench"], ["bench", "--eager"], ["bench", "--shapes", "8x8", "--json", "{0}/b"]])
def test_bench_without_a_gpu_fails_clearly(argv, tmp_path, capsys):
    argv = [a.format(tmp_path) for a in argv]
    status, out, err = _run(argv, capsys)
    assert status == 1 and out == "" and "Traceback" not in err
    assert "timing needs a CUDA GPU (none here); nothing measured" in err and "--dry-run" in err
    assert not list(tmp_path.iterdir())


# ----------------------------------------------------------------------------- bench --model
def test_model_sizes_its_config_refuses_end_in_one_error(monkeypatch, capsys):
    from normkit.bench import model_cli

    monkeypatch.setattr(model_cli, "run", lambda *a, **k: pytest.fail("ran a model the config refused"))
    status, out, err = _run(["bench", "--model", "llama", "--hidden", "3", "--layers", "1", "--seq", "8",
                             "--batch", "1"], capsys)
    _one_error(status, out, err, "--hidden 3, --layers 1: the llama config refuses them: The hidden size (3) is "
                                 "not a multiple of the number of attention heads (4)", "python -m normkit bench")


def test_an_abbreviated_model_option_reaches_the_model_parser(capsys):
    status, out, err = _run(["bench", "--mod", "llama", "--layers", "1"], capsys)
    # --mod is --model to bench's parser, ambiguous to the model's (--model, --modes): not "unrecognized --layers"
    _one_error(status, out, err, "ambiguous option: --mod could match --model, --modes", "python -m normkit bench")


# ----------------------------------------------------------------------------- result files
def _strict_json(path):
    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(pathlib.Path(path).read_text(), parse_constant=refuse)


def test_verify_writes_strict_json_when_an_output_is_not_finite(monkeypatch, tmp_path, capsys):
    from normkit import ops, report

    monkeypatch.setattr(report, "grid", lambda on_gpu, quick: [(report.Case((3, 40)), torch.float32)])
    real = ops.norm_bwd

    def nan_dx(*args, **kwargs):
        dx, dweight, dbias = real(*args, **kwargs)
        return torch.full_like(dx, float("nan")), dweight, dbias

    monkeypatch.setattr(ops, "norm_bwd", nan_dx)
    path = tmp_path / "verify.json"
    status, out, _ = _run(["verify", "--full", "--no-bench", "--json", str(path)], capsys)
    assert status == 1 and "FAIL: 0/1 cases pass" in out
    case, = _strict_json(path)["cases"]
    assert case["passed"] is False and case["errors"]["dx"] == "nan" and float(case["errors"]["dx"]) != 0
    assert isinstance(case["errors"]["y"], float) and case["errors"]["y"] < 1e-5


def test_bench_writes_strict_json_when_an_error_is_not_finite(monkeypatch, tmp_path, capsys):
    real = bench_cli.errors
    monkeypatch.setattr(bench_cli, "errors", lambda *a: {**real(*a), "y": float("inf")})
    path = tmp_path / "bench.json"
    status, _, err = _run(["bench", "--dry-run", "--shapes", "4x8", "--dtypes", "fp32", "--impls", "native",
                           "--json", str(path)], capsys)
    assert status == 0, err
    row, = _strict_json(path)["results"]
    assert row["err_y"] == "inf" and isinstance(row["err_dx"], float)


# ----------------------------------------------------------------------------- challenge
@pytest.mark.parametrize("out_path, force, message", [
    ("{0}", False, "--out {0} is a directory; give a file path"),
    ("{0}", True, "--out {0} is a directory; give a file path"),
    ("{0}/missing/solve.py", False, "cannot write the starter to --out {0}/missing/solve.py: No such file or directory"),
])
def test_a_starter_that_cannot_be_written_ends_in_one_line(out_path, force, message, tmp_path, capsys):
    argv = ["challenge", "starter", "rms-norm-backward", "--out", out_path.format(tmp_path)] + ["--force"] * force
    status, out, err = _run(argv, capsys)
    assert status == 2 and out == "" and err == f"normkit challenge: {message.format(tmp_path)}\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("given", ["abc", "", "0", "-3", "nan"])
def test_a_bad_timeout_names_what_it_wants(given, capsys):
    status, out, err = _run(["challenge", "rms-norm-backward", "--timeout", given], capsys)
    _one_error(status, out, err, f"argument --timeout: must be a number of seconds > 0, got {given}",
               "python -m normkit challenge rms-norm-backward")


# ----------------------------------------------------------------------------- tools/*.py
def _tool_error(name, argv, message, capsys):
    from tests.test_tools import _tool

    with pytest.raises(SystemExit) as stop:
        _tool(name).main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and f"error: {message}" in errors[0], err  # (prog: the script's name, or pytest's)


@pytest.mark.parametrize("argv, message", [
    (["--shapes", "4096"], "argument --shapes: shape must look like 4096x2048, got '4096'"),
    (["--shapes", "axb"], "argument --shapes: shape must look like 4096x2048, got 'axb'"),
    (["--ppsm", "0"], "argument --ppsm: --ppsm must be comma-separated whole numbers ≥ 1, got '0'"),
    (["--warps", "two"], "argument --warps: --warps must be comma-separated whole numbers ≥ 1, got 'two'"),
    (["--async-stages", ","], "argument --async-stages: --async-stages must be comma-separated whole numbers"),
    (["--max-tile", "-5"], "argument --max-tile: --max-tile must be a whole number ≥ 1, got '-5'"),
    (["--config", "1x2048"], "argument --config: --config expects BLOCK_MxBLOCK_N:WARPS[:flag...]"),
    (["--config", "1x2048:4:zz"], "argument --config: --config flags are col, reload"),
    (["--grids", "balanced,lots"], "argument --grids: --grids must be comma-separated heuristic, balanced, divisor"),
    (["--kind", "fwd", "--grids", "balanced"], "--grids sizes the backward's persistent grid, got --kind fwd"),
    (["--json", "{tmp}"], "argument --json: --json must be a file path that can be written"),
])
def test_tune_refuses_bad_values_before_it_needs_a_gpu(argv, message, tmp_path, capsys):
    _tool_error("tune", [a.format(tmp=tmp_path) for a in argv], message, capsys)


def test_tune_parses_its_lists_into_numbers_and_tiles(monkeypatch):
    import argparse

    from tests.test_tools import _tool

    tune, seen = _tool("tune"), []
    real_parse = argparse.ArgumentParser.parse_args
    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", lambda *a, **k: seen.append(real_parse(*a, **k))
                        or seen[-1])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)

    def first_cuda_call(device):  # the options are parsed and checked by then
        raise KeyboardInterrupt

    monkeypatch.setattr(tune.launchers, "multiprocessor_count", first_cuda_call)
    with pytest.raises(KeyboardInterrupt):
        tune.main(["--shapes", "8x256, 8×256,4x64", "--ppsm", "2,1,2", "--config", "2x4096:8:split:pf",
                   "--grids", "balanced,7"])
    args, = seen
    assert args.shapes == [(8, 256), (4, 64)] and args.ppsm == [2, 1] and args.grids == ["balanced", "7"]
    assert args.config == [tune.parse_config("2x4096:8:split:pf")] and args.config[0].split


@pytest.mark.skipif(ON_GPU, reason="the CPU behaviour")
@pytest.mark.parametrize("name", ["tune", "inductor_code"])
def test_gpu_tools_say_they_need_a_gpu(name, capsys):
    from tests.test_tools import _tool

    assert _tool(name).main(["--shapes", "8x256"]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"{name}: " + {"tune": "needs a CUDA device (it times kernels on the GPU)\n",
                                          "inductor_code": "needs a CUDA device (it compiles and times for the "
                                                           "GPU)\n"}[name]


@pytest.mark.parametrize("argv, message", [
    (["--shapes", "16384"], "argument --shapes: shape must look like 4096x2048, got '16384'")])
def test_inductor_code_refuses_a_malformed_shape(argv, message, capsys):
    _tool_error("inductor_code", argv, message, capsys)


@pytest.mark.parametrize("argv, message", [
    (["--shape", "9x"], "argument --shape: shape must look like 4096x2048, got '9x'"),
    (["--shape", "9x300,9x400"], "argument --shape: --shape is one MxN problem, got '9x300,9x400'"),
    (["--shape", "9x300", "--launches", "0"], "argument --launches: --launches must be a whole number ≥ 1, got '0'"),
])
def test_launch_tile_refuses_bad_values(argv, message, capsys):
    _tool_error("launch_tile", argv, message, capsys)


@pytest.mark.skipif(ON_GPU, reason="the CPU behaviour")
def test_launch_tile_refuses_a_gpu_sized_problem_in_the_interpreter(capsys):
    from tests.test_tools import _tool

    assert _tool("launch_tile").main([]) == 2  # the default 16384x4096
    assert capsys.readouterr().err == ("launch_tile: without a GPU (Triton's interpreter) --shape is at most 4194304 "
                                       "elements, got 16384x4096 (67108864); e.g. --shape 9x300\n")


@pytest.mark.parametrize("argv, message", [
    (["--targets", ","], "--targets names at least one GPU, got ','"),
    (["--targets", ""], "--targets names at least one GPU, got ''"),
    (["--targets", "sm90", "--jobs", "0"], "argument --jobs: --jobs must be a whole number ≥ 1, got '0'"),
    (["--jobs", "4"], "--jobs goes with --targets (the other checks compile in this process)"),
    (["--full"], "--full goes with --targets"),
])
def test_compile_check_refuses_options_that_would_check_nothing(argv, message, capsys):
    _tool_error("compile_check", argv, message, capsys)


@pytest.mark.parametrize("argv, message", [
    (["--families", "rms,foo"], "argument --families: --families must be among rms, fused_add, layer_norm, got "
                                "'rms,foo'"),
    (["--widths", "0"], "argument --widths: --widths must be comma-separated whole numbers ≥ 1, got '0'"),
    (["--widths", "4k"], "argument --widths: --widths must be comma-separated whole numbers ≥ 1, got '4k'"),
    (["--tile", "2048"], "argument --tile: --tile must look like ROWSxWIDTHwWARPS[p][j][c][S][r][sK]"),
    (["--flags", "BF16_PAIRS"], "argument --flags: --flags must be NAME=INT,..., e.g. BF16_PAIRS=0, got 'BF16_PAIRS'"),
    (["--flags", "NOT_A_CONSTEXPR=1"], "--flags names the bwd kernel's constexprs, got NOT_A_CONSTEXPR"),
    (["--num-stages", "0"], "argument --num-stages: --num-stages must be a whole number ≥ 1, got '0'"),
])
def test_ptx_stats_refuses_bad_values(argv, message, capsys):
    _tool_error("ptx_stats", argv, message, capsys)


@pytest.mark.parametrize("argv, message", [
    (["--shapes", "bf16"], "argument --shapes: --shapes must be DTYPE:MxN,..., DTYPE among bf16, fp32, fp16, "
                           "e.g. bf16:65536x32769, got 'bf16'"),
    (["--shapes", "fp8:4x4"], "argument --shapes: --shapes must be DTYPE:MxN,..., DTYPE among bf16, fp32, fp16, "
                              "e.g. bf16:65536x32769, got 'fp8:4x4'"),
    (["--shapes", "bf16:0x4"], "argument --shapes: --shapes must be DTYPE:MxN,..., DTYPE among bf16, fp32, fp16, "
                               "e.g. bf16:65536x32769, got 'bf16:0x4'"),
    (["--shapes", ","], "argument --shapes: --shapes names no DTYPE:MxN, got ','"),
    (["--families", "gated"], "argument --families: --families must be among rms, layer_norm, fused_add, got 'gated'"),
])
def test_check_huge_refuses_bad_values(argv, message, capsys):
    _tool_error("check_huge", argv, message, capsys)


# ----------------------------------------------------------------------------- demo and challenge sizes
@pytest.mark.parametrize("argv, message", [
    (["--steps", "0"], "argument --steps: --steps must be a whole number ≥ 1, got '0'"),
    (["--heads", "x"], "argument --heads: --heads must be a whole number ≥ 1, got 'x'"),
    (["--seed", "-1"], "argument --seed: --seed must be a whole number ≥ 0, got '-1'"),
    (["--lr", "nan"], "argument --lr: --lr must be a finite number > 0, got 'nan'"),
    (["--json", "{0}"], "argument --json: --json must be a file path that can be written"),
    (["--json", "{0}/r", "--plot", "{0}/r"], "--json and --plot name the same file"),
])
def test_demo_refuses_bad_values_before_it_trains(argv, message, tmp_path, capsys):
    status, out, err = _run(["demo", *[a.format(tmp_path) for a in argv]], capsys)
    _one_error(status, out, err, message, "python -m normkit demo")


def test_a_challenge_too_large_for_memory_ends_in_one_line(monkeypatch, capsys):
    from normkit.challenge import cli as challenge_cli

    def no_memory(args):
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 40000000000 bytes.")

    monkeypatch.setattr(challenge_cli, "_run_grader", no_memory)
    status, out, err = _run(["challenge", "rms-norm-forward", "-M", "100000", "-N", "100000"], capsys)
    assert status == 1 and "Traceback" not in err and "do not fit in memory" in err and "smaller -M / -N" in err, err
