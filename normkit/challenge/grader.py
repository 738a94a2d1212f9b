"""Grading a solution of either challenge, printing a line per case; True only when all passed.

The solution is normkit's own (`backward.solve`, `forward.run`, trusted: called in this process)
or a contestant's file, run in a process of its own (`sandbox.Isolated`). Either way the inputs,
the expected values and every verdict stay here; a crash, an exit or a hang fails its case and
the grading goes on.
"""

import os
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


def _kernel_output(reply: sandbox.Reply, x: torch.Tensor, weight: torch.Tensor, source: Optional[str]):
    """The first launch that took x and weight (both left as they were) and wrote an (M, N)
    tensor, one of a kernel defined in `source` first: (its index, the launch, the index of the
    argument written, that argument's values after the launch); else None."""
    launches = reply.header.get("launches")
    found = []
    for i, launch in enumerate(launches if isinstance(launches, list) else []):
        args = _entries(launch)
        values = [reply.tensors.get(f"{i}.{j}") for j in range(len(args))]

        def holding(target):
            return [j for j, value in enumerate(values) if value is not None and not args[j].get("changed")
                    and value.numel() == target.numel() and torch.equal(value.flatten(), target.flatten())]

        written = [j for j, value in enumerate(values) if value is not None and args[j].get("changed")
                   and value.numel() == x.numel()]
        if holding(x) and holding(weight) and written:
            found.append((i, launch, written[0], values[written[0]].view(x.shape)))
    return next((f for f in found if source is None or f[1].get("file") == source), found[0] if found else None)


def _launches_seen(reply: sandbox.Reply) -> str:
    launches = reply.header.get("launches")
    if not isinstance(launches, list) or not launches:
        return "launched no Triton kernel"
    first = launches[0] if isinstance(launches[0], dict) else {}
    shown = one_line(", ".join(_shape(entry) for entry in _entries(first)), 200)
    return (f"none of its {len(launches)} Triton launch(es) took the statement's x and weight unchanged "
            f"and wrote an (M, N) output; the first: {one_line(first.get('kernel'), 60)}({shown})")


def _replay_problem(reply: sandbox.Reply, i: int, launch: dict, j: int, name: str, probes: tuple,
                    eps: float) -> Optional[str]:
    """Why the launch's replay on the probe inputs does not show it computing y; None when it does."""
    replayed = reply.tensors.get(f"{i}.{j}.replay")
    if replayed is None or replayed.numel() != probes[0].numel():
        return f"could not be replayed ({one_line(launch.get('replay_error', 'no values came back'), 200)})"
    want = forward.torch_reference(probes[0].double(), probes[1].double(), eps)
    wrong = cases.mismatch(name, replayed.view(want.shape).double(), want, False, forward.ATOL, forward.RTOL)
    return f"wrote {wrong}" if wrong else None


def judge_forward(reply: sandbox.Reply, M: int, N: int, eps: float, probes: Optional[tuple] = None,
                  source: Optional[str] = None) -> CaseResult:
    """Verdict on a forward run: it returned True, and a kernel it launched (defined in `source`,
    when given) wrote the right y, and again on `probes` (another x and weight) when replayed."""
    call = f"run(M={M}, N={N}, eps={eps:g})"
    if reply.lost:
        return CaseResult(FORWARD_NAME, False, f"{call} {reply.lost}")
    if reply.header.get("status") == "raised":
        return CaseResult(FORWARD_NAME, False, f"{call} raised {one_line(reply.header.get('error'))}",
                          cases.trace(reply.header))
    value = reply.header.get("value") if isinstance(reply.header.get("value"), dict) else {}
    returned = f"{call} returned {one_line(value.get('repr'), 60)} ({one_line(value.get('type'), 60)})"
    x, weight = forward.inputs(M, N)
    found = _kernel_output(reply, x, weight, source)
    if found is None:
        return CaseResult(FORWARD_NAME, False, f"{returned} but {_launches_seen(reply)}")
    i, launch, j, got = found
    entry = _entries(launch)[j]
    name = one_line(entry.get("name"), 40)
    want = forward.torch_reference(x.double(), weight.double(), eps)
    wrong = cases.mismatch(name, got.double(), want, False, forward.ATOL, forward.RTOL)
    seen = f"kernel {one_line(launch.get('kernel'), 60)} wrote {_shape(entry)}"
    if wrong:
        return CaseResult(FORWARD_NAME, False, f"{returned}; {seen}, which differs from the float64 reference: {wrong}")
    if source is not None and launch.get("file") != source:
        return CaseResult(FORWARD_NAME, False, f"{returned}; {seen}, but that kernel is defined in "
                                               f"{one_line(launch.get('file'), 200)}, not in {source}: write your own")
    replay = probes and _replay_problem(reply, i, launch, j, name, probes, eps)
    if replay:
        return CaseResult(FORWARD_NAME, False, f"{returned}; {seen}, but run again by the grader on another x and "
                                               f"weight (its other tensors as they were before it), it {replay}: y "
                                               "must be computed in that launch, from x and weight")
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
    probes = forward.probe_inputs(M, N)
    code = getattr(solution, "__code__", None)
    source = os.path.abspath(os.fspath(solution)) if not callable(solution) else getattr(code, "co_filename", None)
    with sandbox.open_solution(solution, "run", forward.CALL, timeout) as runner:
        reply = runner.call(job, dict(zip(("x", "weight"), probes)), child.forward_reply_elements(M, N))
    result = cases.with_output(judge_forward(reply, M, N, eps, probes, source), reply.output, "run")
    print_fn(result.report())
    return result.passed

