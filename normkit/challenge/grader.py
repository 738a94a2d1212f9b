"""Grading a solution of either challenge, printing a line per case; True only when all passed.

The solution is normkit's own (`backward.solve`, `forward.run`) or a contestant's, loaded by
`solution.load_solution`; either way it is called through `guard.call` (a worker thread, a time
limit, the traceback kept), so a crash or a hang fails its case and the grading goes on.
"""

import textwrap
from typing import Callable, Optional

import torch

from . import guard, perf
from .backward import solve
from .cases import CASES, CaseResult, run_suite


def grade_backward(solve_fn: Callable, action: str = "submit", timeout: Optional[float] = None,
                   print_fn: Callable = print) -> bool:
    """"run": the example case only. "submit": the functional cases (the example first), then
    the performance case (on a GPU; timed only when every case passed, against normkit's own
    kernel unless solve_fn is it)."""
    results = run_suite(solve_fn, CASES[:1] if action == "run" else CASES, timeout=timeout)
    for result in results:
        print_fn(result.report())
    passed = sum(result.passed for result in results)
    print_fn(f"{passed}/{len(results)} cases passed")
    functional = passed == len(results)
    if action == "run":
        return functional
    if functional or not torch.cuda.is_available():
        baseline = None if solve_fn is solve else solve
        return perf.run_performance(solve_fn, print_fn, timeout, baseline) and functional
    print_fn(f"SKIP {perf.NAME}: not timed, as functional cases failed")
    return False


def grade_forward(run_fn: Callable, M: int = 64, N: int = 256, eps: float = 1e-6,
                  timeout: Optional[float] = None, print_fn: Callable = print) -> bool:
    """Call run_fn(M=M, N=N, eps=eps) once; it passes when it returns exactly True."""
    call = f"run(M={M}, N={N}, eps={eps:g})"
    outcome = guard.call(run_fn, kwargs={"M": M, "N": N, "eps": eps}, timeout=timeout)
    if outcome.timed_out:
        result = CaseResult("rms-norm-forward", False, f"timed out: {call} had not returned after "
                                                       f"{timeout:g} s; it may still be running")
    elif outcome.error:
        result = CaseResult("rms-norm-forward", False, f"{call} raised {outcome.error}", outcome.trace)
    elif outcome.value is True:
        result = CaseResult("rms-norm-forward", True, f"{call} returned True")
    else:
        kind = type(outcome.value)
        kind = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
        value = textwrap.shorten(repr(outcome.value), 60)
        result = CaseResult("rms-norm-forward", False, f"{call} returned {value} ({kind}), not the bool True")
    print_fn(result.report())
    return result.passed
