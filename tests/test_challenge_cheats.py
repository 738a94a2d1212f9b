"""Solutions that attack the grader instead of computing: each is rejected or killed, and says why.

The five cheats once graded "12/12 cases passed" when solutions ran inside the grader's process:
replace its checker, replace torch.isclose, read the expected answer from its stack, exit after
printing a fake verdict, zero its own copy of dy. Now a file runs in a process of its own, so
they change only that process. Where it is cheap, the same file is also graded as a trusted
callable in this process, where it does fool the grader: that shows the cheat is real, and that
the isolation is what stops it. Then the hangs: a C call that never releases the GIL, and an
endless loop at import, both killed at the time limit.

Every test starts a solution process (Python and torch: seconds each), so all are `slow`.
"""

import multiprocessing
import os
import textwrap
import time

import pytest

from normkit.challenge import CASES, main, run_suite
from normkit.challenge import cases as grader_cases
from normkit.challenge.sandbox import InProcess
from normkit.challenge.solution import load_solution

pytestmark = pytest.mark.slow

REPLACES_THE_CHECKER = """
import normkit.challenge.cases as cases

cases.mismatch = lambda *args, **kwargs: None  # "nothing differs"


def solve(x, weight, dy, dx, dweight, N, C, eps):
    pass
"""

REPLACES_ISCLOSE = """
import torch

torch.isclose = lambda a, b, **kwargs: torch.ones_like(a, dtype=torch.bool)


def solve(x, weight, dy, dx, dweight, N, C, eps):
    dx.zero_()
    dweight.zero_()
"""

READS_THE_GRADERS_FRAMES = """
import sys


def solve(x, weight, dy, dx, dweight, N, C, eps):
    # Walk every thread's stack for the grader's case and ask it for the expected answer.
    for frame in sys._current_frames().values():
        while frame is not None:
            for value in list(frame.f_locals.values()):
                if hasattr(value, "expected") and hasattr(value, "inputs"):
                    want_dx, want_dweight = value.expected(value.inputs())
                    dx.copy_(want_dx.view_as(dx))
                    dweight.copy_(want_dweight)
                    return
            frame = frame.f_back
"""

FAKE_VERDICT_THEN_EXIT = """
import os


def solve(x, weight, dy, dx, dweight, N, C, eps):
    print("PASS hand-2x4: N=2 C=4 eps=0, max |error| dx 0.0e+00, dweight 0.0e+00")
    print("12/12 cases passed", flush=True)
    os._exit(0)
"""

ZEROES_EVERY_DY = """
import gc

import torch


def solve(x, weight, dy, dx, dweight, N, C, eps):
    # Zero every tensor equal to dy that this process holds (the grader's copy, if it is here),
    # then answer for dy = 0.
    for obj in gc.get_objects():
        if type(obj) is torch.Tensor and obj is not dy and obj.shape == dy.shape and torch.equal(obj, dy):
            obj.zero_()
    dy.zero_()
    dx.zero_()
    dweight.zero_()
"""

FORGES_A_REPLY = """
import gc
import time
from multiprocessing.connection import Connection


def solve(x, weight, dy, dx, dweight, N, C, eps):
    pipe = next(obj for obj in gc.get_objects() if isinstance(obj, Connection))
    pipe.send_bytes(REPLY)
    time.sleep(60)
"""

C_CALL_HOLDING_THE_GIL = """
from normkit.challenge.mutants import plain_solve


def solve(x, weight, dy, dx, dweight, N, C, eps):
    if C == 1:
        print("summing", flush=True)
        sum(range(10**12))  # one C call for hours, the GIL held throughout
    plain_solve(x, weight, dy, dx, dweight, N, C, eps)
"""

# rms-norm-forward: y made by torch, the required Triton launch only pretending to compute it
COPIES_A_TORCH_ANSWER = """
import torch
import triton
import triton.language as tl


@triton.jit
def _copy(x_ptr, weight_ptr, src_ptr, y_ptr, n, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + cols, tl.load(src_ptr + cols, mask=cols < n), mask=cols < n)


def run(M=64, N=256, eps=1e-6):
    generator = torch.Generator().manual_seed(0)
    x, weight = torch.randn(M, N, generator=generator), torch.randn(N, generator=generator)
    answer = x * torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + eps) * weight
    _copy[(triton.cdiv(M * N, 1024),)](x, weight, answer, torch.empty_like(x), M * N, BLOCK=1024)
    return True
"""

REPLACES_THE_LAUNCHER = """
import torch
import triton
import triton.language as tl
from triton.runtime.interpreter import GridExecutor
from triton.runtime.jit import JITFunction


@triton.jit
def _nothing(x_ptr, weight_ptr, y_ptr):
    pass


def _torch_instead(self, x, weight, y, *args, **kwargs):
    y.copy_(x * torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + 1e-6) * weight)


GridExecutor.__call__ = JITFunction.run = _torch_instead


def run(M=64, N=256, eps=1e-6):
    generator = torch.Generator().manual_seed(0)
    x, weight = torch.randn(M, N, generator=generator), torch.randn(N, generator=generator)
    _nothing[(1,)](x, weight, torch.full_like(x, float("nan")))  # (left alone, NaNs and all: not "written")
    return True
"""

NORMKITS_OWN_RUN = "from normkit.challenge.forward import run\n"

LEAVES_A_PROCESS_BEHIND = """
import os
import time

from normkit.challenge.mutants import plain_solve


def solve(x, weight, dy, dx, dweight, N, C, eps):
    if os.fork() == 0:  # a child that outlives solve's process, in its process group
        with open(os.path.join(os.path.dirname(__file__), "left.pid"), "w") as file:
            file.write(str(os.getpid()))
        time.sleep(600)
        os._exit(0)
    plain_solve(x, weight, dy, dx, dweight, N, C, eps)
"""

ENDLESS_IMPORT = """
while True:
    pass
"""


def _file(tmp_path, source: str) -> str:
    path = tmp_path / "solution.py"
    path.write_text(textwrap.dedent(source))
    return str(path)


def _grade(capsys, *argv: str):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _no_process_left():
    assert not multiprocessing.active_children()


# ----------------------------------------------------------------------------- the five cheats
@pytest.mark.parametrize("source, got", [(REPLACES_THE_CHECKER, "got 123"), (REPLACES_ISCLOSE, "got 0")],
                         ids=["replaces-cases.mismatch", "replaces-torch.isclose"])
def test_replacing_the_checker_changes_only_the_solutions_process(tmp_path, capsys, source, got):
    code, out, _ = _grade(capsys, "rms-norm-backward", "--solution", _file(tmp_path, source), "--action", "run")
    assert code == 1
    assert out.startswith(f"FAIL hand-2x4: dx[0, 0]: expected 0.288, {got} (8 of 8 elements differ)")
    assert out.endswith("\n0/1 cases passed\n")
    _no_process_left()


def test_the_graders_frames_are_out_of_reach(tmp_path, capsys, device):
    path = _file(tmp_path, READS_THE_GRADERS_FRAMES)
    # control: as a callable in the grader's own process, the cheat finds the case and passes
    assert grader_cases.run_case(InProcess(load_solution(path, "solve", "solve")), CASES[2], device).passed
    code, out, _ = _grade(capsys, "rms-norm-backward", "--solution", path, "--action", "run")
    assert code == 1 and out.startswith("FAIL hand-2x4: dx[0, 0]: expected 0.288, got 123"), out


def test_a_fake_verdict_then_exit_fails_the_case(tmp_path, capsys):
    code, out, _ = _grade(capsys, "rms-norm-backward", "--solution", _file(tmp_path, FAKE_VERDICT_THEN_EXIT),
                          "--action", "run")
    assert code == 1
    assert out.splitlines() == [
        "FAIL hand-2x4: solve ended its process (exit code 0) before it returned",
        "    solve printed:",
        "    | PASS hand-2x4: N=2 C=4 eps=0, max |error| dx 0.0e+00, dweight 0.0e+00",
        "    | 12/12 cases passed",
        "0/1 cases passed",
    ]
    _no_process_left()


def test_a_fake_verdict_at_import_then_exit_is_no_solution(tmp_path, capsys):
    source = "import os\n\nprint('12/12 cases passed', flush=True)\nos._exit(0)\n"
    code, out, err = _grade(capsys, "rms-norm-backward", "--solution", _file(tmp_path, source))
    assert code == 2 and out == ""
    assert err.endswith("solution.py ended its process (exit code 0) before it finished; it printed:\n"
                        "| 12/12 cases passed\n")


def test_zeroing_the_graders_dy_only_zeroes_the_solutions_copy(tmp_path, device):
    path = _file(tmp_path, ZEROES_EVERY_DY)
    single_row = CASES[2]
    # control: in the grader's own process the cheat zeroes the grader's dy too, and passes
    assert grader_cases.run_case(InProcess(load_solution(path, "solve", "solve")), single_row, device).passed
    result, = run_suite(path, [single_row], device, timeout=60)
    assert not result.passed
    assert result.message.startswith("dx[0, 0]: expected ")
    assert result.message.endswith("; solve wrote into its input dy")


def test_a_crash_by_signal_fails_the_case(tmp_path):
    source = "import os\nimport signal\n\n\ndef solve(*args):\n    os.kill(os.getpid(), signal.SIGSEGV)\n"
    result, = run_suite(_file(tmp_path, source), CASES[:1], timeout=60)
    assert result.message == "solve ended its process (killed by SIGSEGV) before it returned"


@pytest.mark.parametrize("reply, error", [(b"12/12 cases passed", "JSONDecodeError"),
                                          (b"[" * 200_000, "RecursionError")], ids=["text", "deeply-nested"])
def test_a_forged_reply_is_refused_and_its_process_killed(tmp_path, reply, error):
    result, = run_suite(_file(tmp_path, FORGES_A_REPLY.replace("REPLY", repr(reply))), CASES[:1], timeout=60)
    assert result.message == (f"solve sent a malformed reply (its header is not JSON ({error})), so its "
                              "process was killed")
    _no_process_left()


# ----------------------------------------------------------------------------- hangs
def test_a_c_call_holding_the_gil_is_killed_and_the_grading_goes_on(tmp_path):
    started = time.perf_counter()
    results = run_suite(_file(tmp_path, C_CALL_HOLDING_THE_GIL), CASES[:3], timeout=4)
    assert [result.passed for result in results] == [True, False, True]  # one-element-1x1 has C = 1
    assert results[1].report() == ("FAIL one-element-1x1: solve had not returned after 4 s, so its process "
                                   "was killed\n    solve printed:\n    | summing")
    assert time.perf_counter() - started < 60  # two process starts and one 4 s wait, on a busy machine
    _no_process_left()


def test_an_endless_loop_at_import_is_killed(tmp_path, capsys):
    started = time.perf_counter()
    code, out, err = _grade(capsys, "rms-norm-backward", "--solution", _file(tmp_path, ENDLESS_IMPORT),
                            "--timeout", "3")
    assert code == 2 and out == ""
    assert err == f"normkit challenge: importing {tmp_path / 'solution.py'} had not finished after 3 s, so its " \
                  "process was killed\n"
    assert time.perf_counter() - started < 60
    _no_process_left()



def _running(pid: int) -> bool:
    """Whether process pid runs (a zombie, killed but not yet reaped by its new parent, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks")
def test_a_process_the_solution_started_does_not_outlive_the_grading(tmp_path):
    result, = run_suite(_file(tmp_path, LEAVES_A_PROCESS_BEHIND), CASES[:1], timeout=60)
    assert result.passed  # the answer is right; what it left behind is stopped all the same
    pid = int((tmp_path / "left.pid").read_text())
    deadline = time.monotonic() + 10
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(pid)


# ----------------------------------------------------------------------------- rms-norm-forward
@pytest.mark.parametrize("source, message", [
    (COPIES_A_TORCH_ANSWER, "kernel _copy wrote y_ptr (64, 256), but run again by the grader on another x and "
                            "weight (its other tensors as they were before it), it wrote y_ptr[0, 0]: expected "),
    (REPLACES_THE_LAUNCHER, "returned True (bool) but none of its 1 Triton launch(es) took the statement's x and "
                            "weight unchanged and wrote an (M, N) output; the first: _nothing("),
    (NORMKITS_OWN_RUN, "kernel norm_fwd_kernel wrote Y (64, 256), but that kernel is defined in "),
], ids=["copies-a-torch-answer", "replaces-the-launcher", "normkits-own-run"])
def test_a_forward_must_compute_y_in_its_own_launch(tmp_path, capsys, source, message):
    code, out, _ = _grade(capsys, "rms-norm-forward", "--solution", _file(tmp_path, source))
    assert code == 1 and out.startswith("FAIL rms-norm-forward: run(M=64, N=256, eps=1e-06) ") and message in out, out
    _no_process_left()
