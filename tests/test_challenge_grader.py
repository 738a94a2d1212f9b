"""The challenge grader: `python -m normkit challenge … --solution FILE`, statements and starters.

Every solution here is a file written to tmp_path. Graded through the command line it runs in a
process of its own (tests marked `slow`: each starts Python and imports torch); to test what the
judge says about a kind of mistake, the file is loaded here and graded in this process
(`_graded_here`), which judges the same replies without the process's start-up time.
tests/test_challenge_cheats.py attacks the grader.
"""

import re
import textwrap

import pytest
import torch

from normkit.challenge import CASES, main, perf, run_suite
from normkit.challenge.grader import grade_backward, grade_forward
from normkit.challenge.mutants import MUTANTS, plain_solve
from normkit.challenge.sandbox import InProcess
from normkit.challenge.solution import SolutionError, load_solution

PLAIN = """
import torch


def solve(x, weight, dy, dx, dweight, N, C, eps):
    rstd = torch.rsqrt(x.square().mean(dim=1, keepdim=True) + eps)
    x_hat = x * rstd
    g = dy * weight
    dx.copy_(rstd * (g - x_hat * (g * x_hat).mean(dim=1, keepdim=True)))
    dweight.copy_((dy * x_hat).sum(dim=0))
"""

TRITON_BACKWARD = """
import torch
import triton
import triton.language as tl


@triton.jit
def _backward(x_ptr, weight_ptr, dy_ptr, dx_ptr, partial_ptr, N, C, eps, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    # ROWS rows a program; its share of dweight goes to one row of partial, summed by torch.
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    mask = (rows < N) & (cols < C)
    x = tl.load(x_ptr + rows * C + cols, mask=mask, other=0.0)
    dy = tl.load(dy_ptr + rows * C + cols, mask=mask, other=0.0)
    weight = tl.load(weight_ptr + cols, mask=cols < C, other=0.0)
    mean_square = tl.sum(x * x, axis=1)[:, None] / C + eps
    rstd = 1.0 / tl.sqrt(tl.where(rows < N, mean_square, 1.0))  # padding rows: no 1/0 with eps = 0
    x_hat = x * rstd
    g = dy * weight
    tl.store(dx_ptr + rows * C + cols, rstd * (g - x_hat * tl.sum(g * x_hat, axis=1)[:, None] / C), mask=mask)
    tl.store(partial_ptr + tl.program_id(0) * C + cols, tl.sum(dy * x_hat, axis=0)[None, :], mask=cols < C)


def solve(x, weight, dy, dx, dweight, N, C, eps):
    block = triton.next_power_of_2(C)
    # big tiles in the interpreter (it pays per program); on a GPU ptxas would take minutes on those
    rows = triton.next_power_of_2(max(1, (131072 if x.device.type == "cpu" else 4096) // block))
    partial = torch.empty(triton.cdiv(N, rows), C, device=x.device)
    _backward[(partial.shape[0],)](x, weight, dy, dx, partial, N, C, eps, ROWS=rows, BLOCK=block)
    dweight.copy_(partial.sum(dim=0))
"""

TRITON_FORWARD = """
import torch
import triton
import triton.language as tl


@triton.jit
def _forward(x_ptr, weight_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * N + cols, mask=cols < N, other=0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    weight = tl.load(weight_ptr + cols, mask=cols < N)
    tl.store(y_ptr + tl.program_id(0) * N + cols, x * rstd * weight, mask=cols < N)


def run(M=64, N=256, eps=1e-6):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    generator = torch.Generator().manual_seed(0)
    x, weight = torch.randn(M, N, generator=generator).to(device), torch.randn(N, generator=generator).to(device)
    y = torch.empty_like(x)
    _forward[(M,)](x, weight, y, N, eps, BLOCK=triton.next_power_of_2(N))
    reference = x * torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + eps) * weight
    return bool(torch.allclose(y, reference, atol=1e-5, rtol=1e-5))
"""


def _file(tmp_path, source: str, name: str = "solution.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return str(path)


def _plain(*lines: str) -> str:
    """The correct plain-PyTorch solution with `lines` added at the end of solve."""
    return PLAIN + "".join(f"    {line}\n" for line in lines)


def _grade(capsys, *argv: str):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _graded_here(tmp_path, source: str, action: str = "run", function: str = "solve", **forward):
    """(passed, printed lines) of the file graded in this process, as the CLI would print them."""
    fn = load_solution(_file(tmp_path, source), function, function)
    lines = []
    if function == "run":
        return grade_forward(fn, print_fn=lines.append, **forward), "\n".join(lines)
    return grade_backward(fn, action, print_fn=lines.append), "\n".join(lines)


def _fails(out: str):
    return [line for line in out.splitlines() if line.startswith("FAIL ")]


# ----------------------------------------------------------------------------- solutions that pass
@pytest.mark.slow
@pytest.mark.parametrize("source", [PLAIN, TRITON_BACKWARD], ids=["plain-pytorch", "triton"])
def test_correct_solution_files_pass_submit(tmp_path, capsys, source):
    code, out, _ = _grade(capsys, "rms-norm-backward", "--solution", _file(tmp_path, source))
    assert code == 0, out
    assert f"{len(CASES)}/{len(CASES)} cases passed" in out and not _fails(out)
    if not torch.cuda.is_available():
        assert out.splitlines()[-1] == "SKIP perf-16384x4096: the performance case needs a CUDA GPU"


def test_run_action_grades_the_example_only(tmp_path):
    passed, out = _graded_here(tmp_path, PLAIN)
    assert passed
    assert out.splitlines() == [out.splitlines()[0], "1/1 cases passed"]
    assert out.startswith("PASS hand-2x4: ")


def test_run_action_prints_expected_and_got(tmp_path):
    passed, out = _graded_here(tmp_path, _plain("dweight.mul_(2)"))
    assert not passed
    assert "FAIL hand-2x4: dweight[0]: expected 0.2333333, got 0.4666667" in out
    assert "    expected dweight = [0.2333333, 1, -0.8, 4.866667]" in out
    assert "    got      dweight = [0.4666667, 2, -1.6, 9.733334]" in out


@pytest.mark.slow
@pytest.mark.parametrize("name", ["no-projection", "dweight-not-zeroed"])
def test_submit_rejects_mutant_files(tmp_path, capsys, name):
    # Every mutant is rejected by the whole suite in tests/test_challenge.py; here two of them, as
    # files in a process of their own, fail the example.
    source = f"from normkit.challenge.mutants import MUTANTS\n\nsolve = MUTANTS[{name!r}]\n"
    code, out, _ = _grade(capsys, "rms-norm-backward", "--solution", _file(tmp_path, source), "--action", "run")
    assert code == 1 and out.startswith("FAIL hand-2x4: ") and out.endswith("\n0/1 cases passed\n"), out


# ----------------------------------------------------------------------------- solutions that fail
BROKEN = {  # lines added to the correct solution, and what every failing case must say
    "resizes dx": ("dx.resize_(1)", "solve replaced or resized its output dx"),
    "replaces dx's storage": ("dx.set_(dx.clone())", "solve replaced or resized its output dx"),
    "writes x": ("x.mul_(2)", "solve wrote into its input x"),
    "writes weight": ("weight.zero_()", "solve wrote into its input weight"),
    "writes dy": ("dy.add_(1)", "solve wrote into its input dy"),
    "writes past dx": ("dx.new_empty(0).set_(dx.untyped_storage(), dx.storage_offset() + dx.numel(), (1,)).zero_()",
                       "solve wrote outside its output dx (1 elements just before or after it changed)"),
    "returns NaN": ("dx.view(-1)[-1] = float('nan')", "1 elements are NaN"),
    "leaves 123.0": ("dx[:, -1] = 123.0", "elements left unwritten (still 123.0)"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_solution_is_reported(tmp_path, name):
    line, message = BROKEN[name]
    passed, out = _graded_here(tmp_path, _plain(line))
    assert not passed
    assert _fails(out) and message in _fails(out)[0], out


CRASHES_ON_ONE_CASE = """
from normkit.challenge.mutants import plain_solve


def helper(C):
    raise IndexError(f"C={C}")


def solve(x, weight, dy, dx, dweight, N, C, eps):
    if C == 3:
        print("about to fail on", N, C)
        helper(C)
    plain_solve(x, weight, dy, dx, dweight, N, C, eps)
"""


@pytest.mark.slow
def test_crash_shows_last_frames_and_output_and_the_other_cases_still_run(tmp_path):
    path = _file(tmp_path, CRASHES_ON_ONE_CASE)
    results = run_suite(path, CASES[:4], timeout=60)
    assert [result.passed for result in results] == [True, True, False, True]
    crash = results[2].report()
    assert crash.startswith("FAIL single-row-1x3: solve raised IndexError: C=3\n")
    assert f'    File "{path}", line 12, in solve\n        helper(C)\n' in crash
    assert f'    File "{path}", line 6, in helper\n' in crash and "    IndexError: C=3\n" in crash
    assert crash.endswith("    solve printed:\n    | about to fail on 1 3")


@pytest.mark.parametrize("source, message", [
    (None, "no solution file at "),
    ("def solve(x:\n", "SyntaxError"),
])
def test_file_that_is_not_python_exits_2_without_a_process(tmp_path, capsys, monkeypatch, source, message):
    from normkit.challenge import sandbox

    monkeypatch.setattr(sandbox, "_SPAWN", None)  # starting a process would fail loudly
    path = str(tmp_path / "absent.py") if source is None else _file(tmp_path, source)
    code, out, err = _grade(capsys, "rms-norm-backward", "--solution", path)
    assert code == 2 and out == ""
    assert message in err and err.startswith("normkit challenge: ")


@pytest.mark.slow
@pytest.mark.parametrize("source, message", [
    ("import no_such_module_for_normkit\n", "ModuleNotFoundError: No module named 'no_such_module_for_normkit'"),
    ("raise SystemExit(3)\n", "SystemExit: 3"),
], ids=["import-error", "system-exit"])
def test_unloadable_solution_exits_2(tmp_path, capsys, source, message):
    code, out, err = _grade(capsys, "rms-norm-backward", "--solution", _file(tmp_path, source))
    assert code == 2 and out == ""
    assert message in err and err.startswith("normkit challenge: ")


@pytest.mark.parametrize("source, message", [
    ("def answer(x, weight, dy, dx, dweight, N, C, eps):\n    pass\n",
     "does not define solve(x, weight, dy, dx, dweight, N, C, eps)"),
    ("solve = 3\n", "solve in "),
], ids=["no-solve", "solve-not-callable"])
def test_solution_without_a_callable_solve_is_refused(tmp_path, source, message):
    # load_solution runs in the solution's process; its message reaches stderr as above
    with pytest.raises(SolutionError, match=re.escape(message)):
        load_solution(_file(tmp_path, source), "solve", "solve(x, weight, dy, dx, dweight, N, C, eps)")


# ----------------------------------------------------------------------------- rms-norm-forward
@pytest.mark.slow
def test_forward_triton_solution_passes_and_its_output_is_checked(tmp_path, capsys):
    code, out, _ = _grade(capsys, "rms-norm-forward", "--solution", _file(tmp_path, TRITON_FORWARD))
    assert code == 0, out
    assert out.startswith("PASS rms-norm-forward: run(M=64, N=256, eps=1e-06) returned True (bool); "
                          "kernel _forward wrote y_ptr (64, 256): max |error| ")
    assert out.rstrip().endswith("against float64 (atol = 1e-05, rtol = 1e-05)")


@pytest.mark.parametrize("returned, shown", [
    ("1", "returned 1 (int), not the bool True"),
    ("torch.tensor(True)", "returned tensor(True) (torch.Tensor), not the bool True"),
    ("None", "returned None (NoneType), not the bool True"),
    ("False", "returned False (bool), not the bool True"),
])
def test_forward_must_return_exactly_true(tmp_path, returned, shown):
    source = TRITON_FORWARD.replace("    return bool(torch.allclose", f"    return {returned}\n    bool(torch.allclose")
    passed, out = _graded_here(tmp_path, source, function="run", M=4, N=33)
    assert not passed and shown in out and "though kernel _forward wrote y_ptr (4, 33) right" in out


def test_forward_kernel_output_is_checked_not_the_bool(tmp_path):
    wrong = TRITON_FORWARD.replace("x * rstd * weight, mask", "x * rstd, mask")  # weight forgotten,
    wrong = wrong.replace("    return bool(torch.allclose", "    return True\n    bool(torch.allclose")  # True claimed
    passed, out = _graded_here(tmp_path, wrong, function="run", M=4, N=33)
    assert not passed
    assert out.startswith("FAIL rms-norm-forward: run(M=4, N=33, eps=1e-06) returned True (bool); kernel "
                          "_forward wrote y_ptr (4, 33), which differs from the float64 reference: y_ptr[0, 0]: ")
    other_seed = TRITON_FORWARD.replace("manual_seed(0)", "manual_seed(1)")
    passed, out = _graded_here(tmp_path, other_seed, function="run", M=4, N=33)
    assert not passed and "none of its 1 Triton launch(es) took the statement's x and weight" in out
    assert "the first: _forward(x_ptr (4, 33), weight_ptr (33,), y_ptr (4, 33))" in out


def test_forward_crash(tmp_path):
    passed, out = _graded_here(tmp_path, "def run(M, N, eps):\n    return M / 0\n", function="run")
    assert not passed and "raised ZeroDivisionError: division by zero" in out and "return M / 0" in out


@pytest.mark.slow
def test_forward_file_without_run_exits_2(tmp_path, capsys):
    code, _, err = _grade(capsys, "rms-norm-forward", "--solution", _file(tmp_path, PLAIN))
    assert code == 2 and "does not define run(M=64, N=256, eps=1e-6) -> bool" in err


# ----------------------------------------------------------------------------- performance case
def test_performance_line_has_bandwidth_and_ratio_to_normkit(monkeypatch):
    # The GPU timers replaced: a small case on the CPU exercises the check and the report. The
    # first time is the solution's (timed on its side), the second normkit's (timed here).
    from normkit.challenge import solve

    monkeypatch.setattr(perf, "N", 8)
    monkeypatch.setattr(perf, "C", 32)
    # 3·8·32·4 = 3072 bytes moved: 3.072 µs is 1 GB/s, half of the stub's copy bandwidth.
    times = iter([(0.003072, "stub"), (0.001536, "stub")])
    monkeypatch.setattr(perf, "median_ms", lambda fn: next(times))
    monkeypatch.setattr(perf, "copy_bandwidth", lambda: 2e9)
    lines = []
    assert perf.run_performance(InProcess(plain_solve), lines.append, baseline=solve, device="cpu")
    assert lines == ["PASS perf-16384x4096: 3.1 µs (stub median), 1 GB/s = 50 % of copy bandwidth (2 GB/s), "
                     "2.00× the time of normkit's kernel (1.5 µs)"]
    assert not perf.run_performance(InProcess(MUTANTS["no-projection"]), lines.append, device="cpu")
    assert lines[-1].startswith("FAIL perf-16384x4096: dx[")


@pytest.mark.parametrize("ms, message", [
    (0.001, "FAIL perf-16384x4096: the time sent is impossible: 1.0 µs (stub median), 3 GB/s = 154 % of copy"),
    (float("nan"), "FAIL perf-16384x4096: solve could not be timed: sent nan as its time"),
    (-1.0, "FAIL perf-16384x4096: solve could not be timed: sent -1.0 as its time"),
])
def test_grader_rejects_impossible_times(monkeypatch, ms, message):
    monkeypatch.setattr(perf, "N", 8)
    monkeypatch.setattr(perf, "C", 32)
    monkeypatch.setattr(perf, "median_ms", lambda fn: (ms, "stub"))
    monkeypatch.setattr(perf, "copy_bandwidth", lambda: 2e9)
    lines = []
    assert not perf.run_performance(InProcess(plain_solve), lines.append, device="cpu")
    assert lines[-1].startswith(message), lines


# ----------------------------------------------------------------------------- list, show, starter
def test_list_and_show(capsys):
    code, out, _ = _grade(capsys, "list")
    assert code == 0 and "rms-norm-forward" in out and "rms-norm-backward" in out
    code, out, _ = _grade(capsys, "show", "rms-norm-backward")
    assert code == 0
    for text in ["rstd    = 1 / sqrt(mean(x²) + eps)", "dx      = rstd · (g − x̂ · mean(g · x̂))",
                 "dweight = Σ_rows dy · x̂", "def solve(x: torch.Tensor", "C up to 262144", "eps ≥ 0",
                 "[[36/125, -28/125, 22/125, -6/125],", "dweight = [7/30, 1, -4/5, 73/15]", "123.0",
                 "atol = rtol = 1e-3", "N = 16384, C = 4096", "ragged-4099x256", "normkit's own kernel",
                 "process of its own"]:
        assert text in out, text
    code, out, _ = _grade(capsys, "show", "rms-norm-forward")
    assert code == 0 and "def run(M: int = 64, N: int = 256, eps: float = 1e-6) -> bool:" in out
    assert "torch.Generator().manual_seed(0)" in out and "watches the Triton kernels it launches" in out
    with pytest.raises(SystemExit) as exit_info:
        main(["show", "rms-norm-sideways"])
    assert exit_info.value.code == 2


@pytest.mark.slow
def test_starter_is_written_once_and_fails_until_filled_in(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = _grade(capsys, "starter", "rms-norm-backward", "--lang", "pytorch")
    assert code == 0 and out.startswith("wrote solve_rms_norm_backward.py")
    text = (tmp_path / "solve_rms_norm_backward.py").read_text()
    assert "def solve(x: torch.Tensor" in text and "import triton" not in text
    assert sum(line.strip().startswith("#") for line in text.splitlines()) == 1
    (tmp_path / "solve_rms_norm_backward.py").write_text("mine")
    code, _, err = _grade(capsys, "starter", "rms-norm-backward")
    assert code == 2 and "solve_rms_norm_backward.py exists; pass --force" in err
    assert (tmp_path / "solve_rms_norm_backward.py").read_text() == "mine"
    assert _grade(capsys, "starter", "rms-norm-backward", "--force")[0] == 0
    assert "import triton.language as tl" in (tmp_path / "solve_rms_norm_backward.py").read_text()
    code, out, _ = _grade(capsys, "rms-norm-backward", "--solution", "solve_rms_norm_backward.py", "--action", "run")
    assert code == 1 and "8 elements left unwritten (still 123.0)" in out
    code, out, _ = _grade(capsys, "starter", "rms-norm-forward", "--out", "fwd.py")
    assert code == 0 and "def run(M: int = 64" in (tmp_path / "fwd.py").read_text()
    passed, out = _graded_here(tmp_path, (tmp_path / "fwd.py").read_text(), function="run")
    assert not passed and "returned None (NoneType) but launched no Triton kernel" in out
