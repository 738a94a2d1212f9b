"""Grading a solution of either challenge, printing a line per case; True only when all passed.

The solution is normkit's own (`backward.solve`, `forward.run`, trusted: called in this process)
or a contestant's file, run in a process of its own (`sandbox.Isolated`). Either way the inputs,
the expected values and every verdict stay here; a crash, an exit or a hang fails its case and
the grading goes on.
"""

from typing import Callable, Optional

import torch

from . import cases, child, forward, perf, sandbox
from .backward import solve
from .cases import CASES, CaseResult, one_line
from .device import challenge_device

FORWARD_NAME = "rms-norm-forward"


def grade_backward(solution, action: str = "submit", timeout: Optional[float] = None,
                   print_fn: Callable = print) -> bool:
    """"run": the example case only. "submit": the functional cases (the example first), then
    the performance case (on a GPU; timed only when every case passed, against normkit's own
    kernel unless the solution is it). `solution`: a file's path or a trusted callable."""
    device = challenge_device()
    selected = CASES[:1] if action == "run" else CASES
    with sandbox.open_solution(solution, cases.FUNCTION, cases.CALL, timeout) as runner:
        passed = 0
        for case in selected:
            result = cases.run_case(runner, case, device)
            print_fn(result.report())
            passed += result.passed
        print_fn(f"{passed}/{len(selected)} cases passed")
        functional = passed == len(selected)
        if action == "run":
            return functional
        if functional or not torch.cuda.is_available():
            baseline = None if solution is solve else solve
            return perf.run_performance(runner, print_fn, baseline) and functional
    print_fn(f"SKIP {perf.NAME}: not timed, as functional cases failed")
    return False


# ----------------------------------------------------------------------------- the forward
def _entries(launch) -> list:
    """A launch's argument entries from the reply, each a dict (anything else dropped)."""
    args = launch.get("args") if isinstance(launch, dict) else None
    return [entry if isinstance(entry, dict) else {} for entry in args] if isinstance(args, list) else []


def _shape(entry: dict) -> str:
    shape = entry.get("shape") if isinstance(entry.get("shape"), list) else []
    return f"{one_line(entry.get('name'), 40)} {one_line(tuple(shape), 60)}"


def _kernel_output(reply: sandbox.Reply, x: torch.Tensor, weight: torch.Tensor):
    """The first launch that took x and weight (both left as they were) and wrote an (M, N)
    tensor: (kernel name, that argument's entry, its values after the launch); else None."""
    launches = reply.header.get("launches")
    for i, launch in enumerate(launches if isinstance(launches, list) else []):
        args = _entries(launch)
        values = [reply.tensors.get(f"{i}.{j}") for j in range(len(args))]

        def holding(target):
            return [j for j, value in enumerate(values) if value is not None and not args[j].get("changed")
                    and value.numel() == target.numel() and torch.equal(value.flatten(), target.flatten())]

        written = [j for j, value in enumerate(values) if value is not None and args[j].get("changed")
                   and value.numel() == x.numel()]
        if holding(x) and holding(weight) and written:
            return one_line(launch.get("kernel"), 60), args[written[0]], values[written[0]].view(x.shape)
    return None


def _launches_seen(reply: sandbox.Reply) -> str:
    launches = reply.header.get("launches")
    if not isinstance(launches, list) or not launches:
        return "launched no Triton kernel"
    first = launches[0] if isinstance(launches[0], dict) else {}
    shown = one_line(", ".join(_shape(entry) for entry in _entries(first)), 200)
    return (f"none of its {len(launches)} Triton launch(es) took the statement's x and weight unchanged "
            f"and wrote an (M, N) output; the first: {one_line(first.get('kernel'), 60)}({shown})")


def judge_forward(reply: sandbox.Reply, M: int, N: int, eps: float) -> CaseResult:
    """Verdict on a forward run: it returned True and a kernel it launched wrote the right y."""
    call = f"run(M={M}, N={N}, eps={eps:g})"
    if reply.lost:
        return CaseResult(FORWARD_NAME, False, f"{call} {reply.lost}")
    if reply.header.get("status") == "raised":
        return CaseResult(FORWARD_NAME, False, f"{call} raised {one_line(reply.header.get('error'))}",
                          cases.trace(reply.header))
    value = reply.header.get("value") if isinstance(reply.header.get("value"), dict) else {}
    returned = f"{call} returned {one_line(value.get('repr'), 60)} ({one_line(value.get('type'), 60)})"
    x, weight = forward.inputs(M, N)
    found = _kernel_output(reply, x, weight)
    if found is None:
        return CaseResult(FORWARD_NAME, False, f"{returned} but {_launches_seen(reply)}")
    kernel, entry, got = found
    want = forward.torch_reference(x.double(), weight.double(), eps)
    wrong = cases.mismatch(one_line(entry.get("name"), 40), got.double(), want, False, forward.ATOL, forward.RTOL)
    seen = f"kernel {kernel} wrote {_shape(entry)}"
    if wrong:
        return CaseResult(FORWARD_NAME, False, f"{returned}; {seen}, which differs from the float64 reference: {wrong}")
    if value.get("is_true") is not True:
        return CaseResult(FORWARD_NAME, False, f"{returned}, not the bool True, though {seen} right")
    error = (got.double() - want).abs().max().item()
    return CaseResult(FORWARD_NAME, True, f"{returned}; {seen}: max |error| {error:.1e} against float64 "
                                          f"(atol = {forward.ATOL:g}, rtol = {forward.RTOL:g})")


def grade_forward(solution, M: int = 64, N: int = 256, eps: float = 1e-6,
                  timeout: Optional[float] = None, print_fn: Callable = print) -> bool:
    """Call run(M=M, N=N, eps=eps) once, watching its Triton launches; print and return the
    verdict. `solution`: a file's path or a trusted callable."""
    device = challenge_device()
    job = {"kind": "forward", "device": str(device), "m": M, "n": N, "eps": eps}
    with sandbox.open_solution(solution, "run", forward.CALL, timeout) as runner:
        reply = runner.call(job, {}, child.forward_reply_elements(M, N))
    result = cases.with_output(judge_forward(reply, M, N, eps), reply.output, "run")
    print_fn(result.report())
    return result.passed

