"""normkit.challenge: the Triton-forward seed problem, the LeetGPU-style backward, its suite and CLI.

Runs on a GPU, or on the CPU through Triton's interpreter (conftest.py sets TRITON_INTERPRET=1).
"""

import math

import pytest
import torch

import normkit.__main__
from normkit import reference
from normkit.challenge import CASES, forward, main, run, run_suite, solve
from normkit.challenge.cases import FILL, HAND_DWEIGHT, HAND_DX, reference_backward
from normkit.challenge.cases import run_case as run_case_with
from normkit.challenge.mutants import MUTANTS, plain_solve
from normkit.challenge.sandbox import InProcess


def run_case(solve_fn, case, device):
    return run_case_with(InProcess(solve_fn), case, device)


def _failures(results):
    return [f"{r.name}: {r.message}" for r in results if not r.passed]


# ----------------------------------------------------------------------------- forward: run()
def test_run_matches_torch():
    assert run() is True
    assert run(M=3, N=1000, eps=0.5) is True


def test_run_returns_false_when_reference_disagrees(monkeypatch):
    monkeypatch.setattr(forward, "torch_reference", lambda x, weight, eps: torch.zeros_like(x))
    assert run() is False
    assert main(["rms-norm-forward"]) == 1


@pytest.mark.parametrize("kwargs, error, match", [
    ({"M": 0}, ValueError, "M must be a positive int, got 0"),
    ({"M": 2.0}, TypeError, "M must be a positive int, got float"),
    ({"N": True}, TypeError, "N must be a positive int, got bool"),
    ({"N": -3}, ValueError, "N must be a positive int"),
    ({"eps": -1e-6}, ValueError, "eps must be a finite number >= 0"),
    ({"eps": math.nan}, ValueError, "eps must be a finite number >= 0"),
    ({"eps": "1e-6"}, TypeError, "eps must be a float"),
    ({"eps": 10 ** 400}, ValueError, "eps must be a finite number >= 0, got an int of 1329 bits"),
])
def test_run_rejects_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        run(**kwargs)


def _no_gpu_no_interpreter(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setenv("TRITON_INTERPRET", "0")


def test_without_gpu_or_interpreter_says_what_to_set(monkeypatch):
    _no_gpu_no_interpreter(monkeypatch)
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET is off; set TRITON_INTERPRET=1"):
        run()
    with pytest.raises(RuntimeError, match="TRITON_INTERPRET=1"):
        run_suite(solve)


# ----------------------------------------------------------------------------- backward: solve()
def _inputs(n, c, device, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x, dy = torch.randn(n, c, generator=gen), torch.randn(n, c, generator=gen)
    return x.to(device), torch.randn(c, generator=gen).to(device), dy.to(device)


def _expected(x, weight, dy, eps):
    return reference.rms_norm_bwd(x.double(), weight.double(), dy.double(), None, eps)


@pytest.mark.parametrize("n, c", [(1, 1), (7, 30), (130, 1000), (33, 3000)])
def test_solve_matches_float64_reference(device, n, c):
    x, weight, dy = _inputs(n, c, device)
    dx, dweight = torch.full_like(x, FILL), torch.full_like(weight, FILL)
    solve(x, weight, dy, dx, dweight, n, c, 1e-5)
    want_dx, want_dweight = _expected(x, weight, dy, 1e-5)
    torch.testing.assert_close(dx.double(), want_dx, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(dweight.double(), want_dweight, atol=1e-4, rtol=1e-5)


def test_solve_accepts_flat_and_strided_inputs(device):
    n, c = 9, 40
    x, weight, dy = _inputs(n, c, device)
    x_strided = torch.empty(n, 2 * c, device=device)[:, ::2].copy_(x)  # column stride 2
    dx, dweight = torch.full((n * c,), FILL, device=device), torch.full_like(weight, FILL)
    solve(x_strided, weight, dy.flatten(), dx, dweight, n, c, 1e-5)
    want_dx, want_dweight = _expected(x, weight, dy, 1e-5)
    torch.testing.assert_close(dx.view(n, c).double(), want_dx, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(dweight.double(), want_dweight, atol=1e-4, rtol=1e-5)


def _zeros(*shape, dtype=torch.float32):
    return lambda device: torch.zeros(*shape, dtype=dtype, device=device)


# (argument, its bad value (a value, a function of the device, or the name of another argument),
#  error, message); the good call is solve(x (3, 4), weight (4,), dy, dx, dweight, N=3, C=4, eps).
BAD_INPUTS = {
    "N zero": ("N", 0, ValueError, "N must be a positive int, got 0"),
    "C float": ("C", 4.0, TypeError, "C must be a positive int, got float"),
    "eps negative": ("eps", -1.0, ValueError, "eps must be a finite number >= 0"),
    "eps inf": ("eps", math.inf, ValueError, "eps must be a finite number >= 0"),
    "eps None": ("eps", None, TypeError, "eps must be a float, got NoneType"),
    "eps beyond float": ("eps", 10 ** 400, ValueError, "eps must be a finite number >= 0, got an int of 1329 bits"),
    "x sparse": ("x", lambda device: torch.zeros(3, 4, device=device).to_sparse(), TypeError,
                 r"x must be a dense \(strided\) tensor, got torch.sparse_coo"),
    "dx sparse": ("dx", lambda device: torch.zeros(3, 4, device=device).to_sparse(), TypeError,
                  r"dx must be a dense \(strided\) tensor, got torch.sparse_coo"),
    "x a list": ("x", [[1.0] * 4] * 3, TypeError, "x must be a torch.Tensor, got list"),
    "x float64": ("x", _zeros(3, 4, dtype=torch.float64), TypeError, "x must be float32, got torch.float64"),
    "x transposed": ("x", _zeros(4, 3), ValueError, r"x must have shape \(3, 4\) or \(12,\), got \(4, 3\)"),
    "weight too long": ("weight", _zeros(5), ValueError, r"weight must have shape \(4,\), got \(5,\)"),
    "dy too wide": ("dy", _zeros(3, 5), ValueError, "dy must have shape"),
    "dx int32": ("dx", _zeros(3, 4, dtype=torch.int32), TypeError, "dx must be float32, got torch.int32"),
    "dweight too short": ("dweight", _zeros(3), ValueError, "dweight must have shape"),
    "dx not contiguous": ("dx", lambda device: torch.zeros(4, 3, device=device).t(), ValueError,
                          "dx must be contiguous"),
    "dx is x": ("dx", "x", ValueError, "dx must not overlap x"),
    "dweight is weight": ("dweight", "weight", ValueError, "dweight must not overlap weight"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_solve_rejects_bad_input_before_writing(device, case):
    argument, bad, error, match = BAD_INPUTS[case]
    x, weight, dy = _inputs(3, 4, device)
    args = dict(x=x, weight=weight, dy=dy, dx=torch.full_like(x, FILL), dweight=torch.full_like(weight, FILL),
                N=3, C=4, eps=1e-5)
    args[argument] = args[bad] if isinstance(bad, str) else bad(device) if callable(bad) else bad
    snapshot = {name: args[name].clone() for name in ("x", "weight", "dy", "dx", "dweight")
                if isinstance(args[name], torch.Tensor) and args[name].layout == torch.strided}
    with pytest.raises(error, match=match):
        solve(**args)
    for name, before in snapshot.items():
        assert torch.equal(args[name], before), f"{name} was written"


# ----------------------------------------------------------------------------- the suite
@pytest.mark.parametrize("backward", [reference_backward, lambda x, weight, dy, eps: reference.rms_norm_bwd(
    x.double(), weight.double(), dy.double(), None, eps)], ids=["grader's", "normkit.reference"])
def test_hand_worked_case_agrees_with_references(backward):
    case = CASES[0]
    dx, dweight = backward(*case.inputs(), case.eps)
    torch.testing.assert_close(dx, torch.tensor(HAND_DX, dtype=torch.float64), atol=1e-12, rtol=0)
    torch.testing.assert_close(dweight, torch.tensor(HAND_DWEIGHT, dtype=torch.float64), atol=1e-12, rtol=0)


def test_graders_reference_agrees_with_normkit_reference():
    for case in CASES[1:]:
        x, weight, dy = case.inputs()
        want = reference.rms_norm_bwd(x.double(), weight.double(), dy.double(), None, case.eps)
        for mine, theirs in zip(reference_backward(x, weight, dy, case.eps), want):
            torch.testing.assert_close(mine, theirs, atol=1e-9, rtol=1e-9, msg=case.name)


def test_cases_are_the_specified_twelve():
    shapes = [(case.n, case.c) for case in CASES]
    assert len(CASES) == 12 and len({case.name for case in CASES}) == 12
    for shape in [(2, 4), (1, 1), (100, 30), (255, 1000), (4099, 256), (1024, 2048)]:
        assert shape in shapes
    assert {1, 3, 30, 1000} <= {c for _, c in shapes}
    assert any(case.eps == 1.0 for case in CASES)
    assert any(n == 1 and c > 1 for n, c in shapes)  # a single row


def test_case_inputs_are_deterministic():
    for case in CASES:
        assert all(torch.equal(a, b) for a, b in zip(case.inputs(), case.inputs())), case.name


@pytest.mark.parametrize("solve_fn", [solve, plain_solve], ids=["normkit", "plain-pytorch"])
def test_suite_passes_correct_solutions(solve_fn):
    results = run_suite(solve_fn)
    assert [r.name for r in results] == [case.name for case in CASES]
    assert not _failures(results)


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_suite_rejects_mutant(name):
    assert _failures(run_suite(MUTANTS[name])), f"mutant {name} passed every case"


def test_failure_message_names_index_values_and_unwritten_outputs(device):
    def writes_nothing(x, weight, dy, dx, dweight, N, C, eps):
        pass

    result = run_case(writes_nothing, CASES[0], device)
    assert not result.passed
    assert "dx[0, 0]: expected 0.288, got 123" in result.message
    assert "8 elements left unwritten (still 123.0)" in result.message
    assert "dweight[0]: expected 0.2333333, got 123" in result.message


def test_nan_outputs_fail(device):
    def writes_nan(x, weight, dy, dx, dweight, N, C, eps):
        plain_solve(x, weight, dy, dx, dweight, N, C, eps)
        dx.view(-1)[-1] = math.nan

    result = run_case(writes_nan, CASES[2], device)
    assert not result.passed and "dx[0, 2]" in result.message and "got nan" in result.message


def test_exact_case_rejects_nearly_zero(device):
    def nearly_zero(x, weight, dy, dx, dweight, N, C, eps):
        dx.fill_(1e-7)
        dweight.zero_()

    zero_dy = next(case for case in CASES if case.exact)
    assert not run_case(nearly_zero, zero_dy, device).passed


def test_crashes_and_input_writes_are_reported(device):
    def crashes(*args):
        raise IndexError("boom")

    def scribbles(x, weight, dy, dx, dweight, N, C, eps):
        plain_solve(x, weight, dy, dx, dweight, N, C, eps)
        x.zero_()

    assert run_case(crashes, CASES[2], device).message == "solve raised IndexError: boom"
    assert run_case(scribbles, CASES[2], device).message == "solve wrote into its input x"


# ----------------------------------------------------------------------------- CLI
def test_cli_forward_prints_true(capsys):
    assert main(["rms-norm-forward"]) == 0
    assert capsys.readouterr().out.strip() == "True"


def test_cli_through_python_m_normkit(capsys):
    assert normkit.__main__.main(["challenge", "rms-norm-forward", "-M", "5", "-N", "33"]) == 0
    assert capsys.readouterr().out.strip() == "True"


def test_cli_backward_passes_every_case(capsys):
    assert main(["rms-norm-backward"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("PASS ") for line in lines) >= len(CASES)
    assert not any(line.startswith("FAIL ") for line in lines)
    assert f"{len(CASES)}/{len(CASES)} cases passed" in lines
    if not torch.cuda.is_available():
        assert lines[-1] == "SKIP perf-16384x4096: the performance case needs a CUDA GPU"


@pytest.mark.parametrize("argv, message", [
    (["-M", "0"], "M must be a positive int, got 0"),
    (["-N", "-4"], "N must be a positive int, got -4"),
    (["--eps", "nan"], "eps must be a finite number >= 0, got nan"),
    (["--eps", "-1"], "eps must be a finite number >= 0, got -1.0"),
])
def test_cli_bad_sizes_end_in_one_line(capsys, argv, message):
    assert normkit.__main__.main(["challenge", "rms-norm-forward", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == f"normkit challenge: {message}\n"


@pytest.mark.parametrize("command", [["rms-norm-forward"], ["rms-norm-backward", "--action", "run"]])
def test_cli_without_gpu_or_interpreter_ends_in_one_line(monkeypatch, capsys, command):
    _no_gpu_no_interpreter(monkeypatch)
    assert normkit.__main__.main(["challenge", *command]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("normkit challenge: the challenge runs Triton kernels, which need a CUDA GPU")
    assert "set TRITON_INTERPRET=1" in captured.err


def test_cli_help_and_bad_problem(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "rms-norm-forward" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        main(["rms-norm-sideways"])
    assert exit_info.value.code == 2
