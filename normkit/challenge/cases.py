"""The functional suite of the RMSNorm-backward challenge: 12 seeded cases, run and judged.

A solution is ``solve(x, weight, dy, dx, dweight, N, C, eps)``, writing dx (N, C) and dweight
(C,) in place (N rows, C columns, float32). For each case the grader makes the inputs, sends
copies to the solution's side (`sandbox`: a process of its own for a file), where the outputs are
pre-filled with FILL = 123.0 and solve is called, and judges what comes back against a float64
reference (`reference_backward`) at atol = rtol = 1e-3; NaN anywhere fails. Case "hand-2x4" is
compared with numbers worked by hand instead (a test checks that the reference agrees).

Beyond the values, a case fails when solve raised, was lost (time limit, process exit), wrote
into an input (compared with the grader's own copies), replaced or resized an output (data_ptr,
shape, stride or dtype changed) or wrote past either end of one (each output sits between GUARD
elements of FILL that must stay FILL).
"""

import textwrap
from dataclasses import dataclass
from typing import Callable, List, NamedTuple, Optional, Tuple

import torch

from . import sandbox, wire
from .device import challenge_device

ATOL = 1e-3
RTOL = 1e-3
FILL = 123.0  # what the outputs hold before solve: a value no correct output has here
GUARD = 4096  # FILL elements either side of each output: a store with a missing mask lands here
DETAIL_ELEMENTS = 16  # outputs this small are printed whole (expected and got) when they differ
SEED = 0
FUNCTION, CALL = "solve", "solve(x, weight, dy, dx, dweight, N, C, eps)"
MESSAGE_CHARACTERS = 300  # a line the solution's side wrote (its error) is cut to this
TRACE_CHARACTERS = 10_000  # and its traceback

Tensor = torch.Tensor
Inputs = Tuple[Tensor, Tensor, Tensor]  # x (N, C), weight (C,), dy (N, C): float32 on the CPU


@dataclass(frozen=True)
class Case:
    name: str
    n: int  # rows
    c: int  # columns (the hidden size)
    eps: float
    make: Callable[[torch.Generator], Inputs]
    hand: Optional[Tuple[list, list]] = None  # (dx, dweight) worked by hand, used as expected
    exact: bool = False  # outputs must equal the expected values bit for bit

    def inputs(self) -> Inputs:
        return self.make(torch.Generator().manual_seed(SEED))

    def expected(self, inputs: Inputs) -> Tuple[Tensor, Tensor]:
        if self.hand is not None:
            return tuple(torch.tensor(values, dtype=torch.float64) for values in self.hand)
        return reference_backward(*inputs, self.eps)


def reference_backward(x: Tensor, weight: Tensor, dy: Tensor, eps: float) -> Tuple[Tensor, Tensor]:
    """dx and dweight in float64 from the statement's formulas, written apart from normkit."""
    x, weight, dy = (t.double() for t in (x, weight, dy))
    rstd = torch.rsqrt(x.square().mean(dim=1, keepdim=True) + eps)
    x_hat, g = x * rstd, dy * weight
    return rstd * (g - x_hat * (g * x_hat).mean(dim=1, keepdim=True)), (dy * x_hat).sum(dim=0)


class CaseResult(NamedTuple):
    name: str
    passed: bool
    message: str  # one line
    detail: str = ""  # more lines, printed below it: a traceback, or small outputs expected vs got

    def report(self) -> str:
        """"PASS name: message" or "FAIL …", and the detail indented below it."""
        line = f"{'PASS' if self.passed else 'FAIL'} {self.name}: {self.message}"
        return line + ("\n" + textwrap.indent(self.detail, "    ") if self.detail else "")


# ----------------------------------------------------------------------------- inputs
def _random(n: int, c: int, x_scale: float = 1.0) -> Callable[[torch.Generator], Inputs]:
    def make(gen):
        x = torch.randn(n, c, generator=gen) * x_scale
        return x, torch.randn(c, generator=gen), torch.randn(n, c, generator=gen)
    return make


def correlated(n: int, c: int) -> Callable[[torch.Generator], Inputs]:
    """dy = 0.5·x + noise, as in training: the projection term mean(g·x̂) is far from 0."""
    def make(gen):
        x = torch.randn(n, c, generator=gen)
        dy = 0.5 * x + 0.1 * torch.randn(n, c, generator=gen)
        return x, 1.0 + 0.1 * torch.randn(c, generator=gen), dy
    return make


def _zero_x(gen):
    return torch.zeros(4, 30), torch.randn(30, generator=gen), torch.randn(4, 30, generator=gen)


def _zero_dy(gen):
    return torch.randn(64, 30, generator=gen), torch.randn(30, generator=gen), torch.zeros(64, 30)


def _negative(gen):
    x = -(torch.rand(37, 30, generator=gen) * 3 + 0.1)
    weight = -(torch.rand(30, generator=gen) + 0.5)
    return x, weight, -torch.rand(37, 30, generator=gen)


def _one_element(gen):
    # x̂ = x/sqrt(x² + eps) ≈ 1, so dx = rstd·g·eps/(x² + eps) ≈ 3e-6: "≈ 0"; dweight = dy·x̂ ≈ dy.
    return torch.tensor([[1.5]]), torch.tensor([2.0]), torch.tensor([[-0.75]])


# Worked by hand, eps = 0. Row 0: Σx² = 25, rstd = 2/5, x̂ = (2, 4, 4, 8)/5, g = dy·w = (1, 0, 1, 1),
#   mean(g·x̂) = (2/5 + 4/5 + 8/5)/4 = 7/10, dx = 2/5·(g − 7/10·x̂) = (36, −28, 22, −6)/125.
# Row 1: Σx² = 36, rstd = 1/3, x̂ = (−1, 3, 1, −5)/3, g = (1/2, 2, 0, −1/2),
#   mean(g·x̂) = (−1/6 + 2 + 0 + 5/6)/4 = 2/3, dx = 1/3·(g − 2/3·x̂) = (13/54, 4/9, −2/27, 11/54).
# dweight = Σ_rows dy·x̂ = (2/5, 0, −4/5, 16/5) + (−1/6, 1, 0, 5/3) = (7/30, 1, −4/5, 73/15).
HAND_X = [[1.0, 2.0, 2.0, 4.0], [-1.0, 3.0, 1.0, -5.0]]
HAND_WEIGHT = [1.0, 2.0, -1.0, 0.5]
HAND_DY = [[1.0, 0.0, -1.0, 2.0], [0.5, 1.0, 0.0, -1.0]]
HAND_DX = [[36 / 125, -28 / 125, 22 / 125, -6 / 125], [13 / 54, 4 / 9, -2 / 27, 11 / 54]]
HAND_DWEIGHT = [7 / 30, 1.0, -4 / 5, 73 / 15]


def _hand(gen):
    return torch.tensor(HAND_X), torch.tensor(HAND_WEIGHT), torch.tensor(HAND_DY)


CASES: List[Case] = [
    Case("hand-2x4", 2, 4, 0.0, _hand, hand=(HAND_DX, HAND_DWEIGHT)),
    Case("one-element-1x1", 1, 1, 1e-5, _one_element),
    Case("single-row-1x3", 1, 3, 1e-5, _random(1, 3)),
    Case("zero-x-4x30", 4, 30, 1e-5, _zero_x),  # rstd = 1/sqrt(eps), x̂ = 0: dx = g/sqrt(eps)
    Case("eps-one-16x64", 16, 64, 1.0, _random(16, 64, x_scale=0.5)),
    Case("zero-dy-64x30", 64, 30, 1e-5, _zero_dy, exact=True),
    Case("negative-37x30", 37, 30, 1e-5, _negative),
    Case("large-x-50x128", 50, 128, 1e-5, _random(50, 128, x_scale=50.0)),
    Case("rect-100x30", 100, 30, 1e-5, _random(100, 30)),
    Case("rect-255x1000", 255, 1000, 1e-5, _random(255, 1000)),
    Case("ragged-4099x256", 4099, 256, 1e-5, _random(4099, 256)),
    Case("correlated-1024x2048", 1024, 2048, 1e-5, correlated(1024, 2048)),
]


# ----------------------------------------------------------------------------- checking
def mismatch(name: str, got: Tensor, want: Tensor, exact: bool, atol: float = ATOL,
              rtol: float = RTOL) -> Optional[str]:
    """None when `got` matches; else where and how it first differs, and whether it is unwritten."""
    bad = (got != want) if exact else ~torch.isclose(got, want, atol=atol, rtol=rtol)
    bad |= got.isnan()
    if not bad.any():
        return None
    first = int(bad.flatten().nonzero()[0])
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(first), got.shape))
    value, expected = got.flatten()[first].item(), want.flatten()[first].item()
    message = (f"{name}[{', '.join(map(str, index))}]: expected {expected:.7g}, got {value:.7g} "
               f"({int(bad.sum())} of {got.numel()} elements differ)")
    unwritten, nans = int((got == FILL).sum()), int(got.isnan().sum())
    if unwritten:
        message += f"; {unwritten} elements left unwritten (still {FILL})"
    if nans:
        message += f"; {nans} elements are NaN"
    return message


def one_line(text, limit: int = MESSAGE_CHARACTERS) -> str:
    """Text from the solution's side as one line of at most `limit` characters."""
    return textwrap.shorten(" ".join(wire.printable(text).split()), limit, placeholder=" …") or "?"


def trace(header: dict) -> str:
    """The traceback the solution's side sent, printable and at most TRACE_CHARACTERS long."""
    return wire.printable(header.get("trace", ""))[:TRACE_CHARACTERS]


def with_output(result: CaseResult, output: str, call: str = FUNCTION) -> CaseResult:
    """result with what the solution printed during the call shown below it."""
    if not output:
        return result
    printed = f"{call} printed:\n{output}"
    return result._replace(detail=f"{result.detail}\n{printed}" if result.detail else printed)


def _format(values: Tensor) -> str:
    if values.dim() == 0:
        return f"{values.item():.7g}"
    return "[" + ", ".join(_format(row) for row in values) + "]"


def _shapes(case: Case) -> dict:
    """What a reply to a case must hold: name → shape."""
    return {"dx_buffer": (2 * GUARD + case.n * case.c,), "dweight_buffer": (2 * GUARD + case.c,),
            "x": (case.n, case.c), "weight": (case.c,), "dy": (case.n, case.c)}


def call_case(runner, case: Case, device, timed: bool = False) -> Tuple[Inputs, sandbox.Reply]:
    """Make the case's inputs (kept here) and have the runner call solve on copies of them."""
    inputs = case.inputs()
    job = {"kind": "backward", "device": str(device), "n": case.n, "c": case.c, "eps": case.eps,
           "fill": FILL, "guard": GUARD, "time": timed}
    limit = sum(int(torch.Size(shape).numel()) for shape in _shapes(case).values())
    return inputs, runner.call(job, dict(zip(("x", "weight", "dy"), inputs)), limit)


def _tampering(case: Case, inputs: Inputs, reply: sandbox.Reply) -> List[str]:
    """What solve did besides writing its outputs' values (the inputs: against our copies)."""
    problems = []
    for name in ("dx", "dweight"):
        buffer = reply.tensors[f"{name}_buffer"]
        outside = int((buffer[:GUARD] != FILL).sum() + (buffer[buffer.numel() - GUARD:] != FILL).sum())
        if outside:
            problems.append(f"solve wrote outside its output {name} ({outside} elements just before "
                            f"or after it changed)")
    problems += [f"solve wrote into its input {name}" for name, before in zip(("x", "weight", "dy"), inputs)
                 if not torch.equal(before, reply.tensors[name])]
    return problems


def judge(case: Case, inputs: Inputs, reply: sandbox.Reply) -> CaseResult:
    """The verdict on one reply, from the grader's own inputs and expected values."""
    if reply.lost:
        return CaseResult(case.name, False, f"solve {reply.lost}")
    header, shapes = reply.header, _shapes(case)
    if header.get("status") == "raised":
        return CaseResult(case.name, False, f"solve raised {one_line(header.get('error'))}",
                          trace(header))
    if (header.get("status") != "returned" or not isinstance(header.get("replaced"), list)
            or any(tuple(reply.tensors.get(name, torch.empty(0)).shape) != shape for name, shape in shapes.items())):
        return CaseResult(case.name, False, "the solution's side sent a reply out of format")
    replaced = [name for name in ("dx", "dweight") if name in header["replaced"]]
    if replaced:
        return CaseResult(case.name, False, "; ".join(
            f"solve replaced or resized its output {name} (its data_ptr, shape, stride or dtype changed): "
            f"write into the given tensor in place" for name in replaced))
    got = {"dx": reply.tensors["dx_buffer"][GUARD:GUARD + case.n * case.c].view(case.n, case.c),
           "dweight": reply.tensors["dweight_buffer"][GUARD:GUARD + case.c]}
    pairs = {name: (got[name].double(), want) for name, want in zip(got, case.expected(inputs))}
    problems = [mismatch(name, mine, want, case.exact) for name, (mine, want) in pairs.items()]
    problems = [p for p in problems if p] + _tampering(case, inputs, reply)
    if problems:
        detail = "\n".join(f"expected {name} = {_format(want)}\ngot      {name} = {_format(mine)}"
                           for name, (mine, want) in pairs.items() if mine.numel() <= DETAIL_ELEMENTS)
        return CaseResult(case.name, False, "; ".join(problems), detail)
    errors = ", ".join(f"{name} {(mine - want).abs().max().item():.1e}" for name, (mine, want) in pairs.items())
    return CaseResult(case.name, True, f"N={case.n} C={case.c} eps={case.eps:g}, max |error| {errors}")


def run_case(runner, case: Case, device) -> CaseResult:
    """Call solve on one case through `runner` (see `sandbox`) and judge the reply."""
    inputs, reply = call_case(runner, case, device)
    return with_output(judge(case, inputs, reply), reply.output)


def run_suite(solution, cases: Optional[List[Case]] = None, device=None,
              timeout: Optional[float] = None) -> List[CaseResult]:
    """Run every case (CASES by default) on `device` (GPU, or CPU under the interpreter).

    `solution`: a path to a contestant's file, run in a process of its own under a limit of
    `timeout` seconds per call (None: none), or a callable this process trusts, called here.
    Raises SolutionError when the file cannot be loaded.
    """
    device = challenge_device() if device is None else device
    with sandbox.open_solution(solution, FUNCTION, CALL, timeout) as runner:
        return [run_case(runner, case, device) for case in (CASES if cases is None else cases)]
