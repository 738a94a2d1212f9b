"""The challenge statements (problem, math, signature, constraints, example, how it is tested),
rendered for a terminal by `python -m normkit challenge show NAME`, and the starter files.

The example and the test description are built from `cases` and `perf`, so they cannot drift
from what the grader runs.
"""

import os
import textwrap
from dataclasses import dataclass
from fractions import Fraction
from typing import Dict, List, Tuple

from . import cases, forward, perf
from .sandbox import DEFAULT_TIMEOUT


@dataclass(frozen=True)
class Statement:
    name: str
    title: str
    summary: str  # one line, for `challenge list`
    function: str  # what the solution file defines
    call: str  # how the grader calls it, for messages
    signature: str  # its def line(s), as a starter file writes them
    comment: str  # the starter's one comment line
    sections: Tuple[Tuple[str, str], ...]  # (heading, body)

    def starter_path(self) -> str:
        return f"{self.function}_{self.name.replace('-', '_')}.py"


# ----------------------------------------------------------------------------- the example
def _number(value: float) -> str:
    fraction = Fraction(value).limit_denominator(1000)
    return str(fraction) if abs(float(fraction) - value) < 1e-12 else f"{value:g}"


def _rows(label: str, values: list, fmt=_number, sign: str = "=") -> List[str]:
    """`label = [[…],` then `[…]]`, a line a row, for a matrix; `label = […]` for a vector."""
    if not isinstance(values[0], list):
        return [f"{label:<7} {sign} [{', '.join(fmt(v) for v in values)}]"]
    rows = [f"[{', '.join(fmt(v) for v in row)}]" for row in values]
    indent = " " * 11  # under the first "["
    return [f"{label:<7} {sign} [{rows[0]},"] + [f"{indent}{row}," for row in rows[1:-1]] + [f"{indent}{rows[-1]}]"]


def _example() -> str:
    hand = cases.CASES[0]
    given, approx = (lambda v: f"{v:g}"), (lambda v: f"{v:.5g}")
    lines = [f"N = {hand.n}, C = {hand.c}, eps = {hand.eps:g}"]
    lines += _rows("x", cases.HAND_X, given) + _rows("weight", cases.HAND_WEIGHT, given)
    lines += _rows("dy", cases.HAND_DY, given) + [""]
    lines += _rows("dx", cases.HAND_DX) + _rows("", cases.HAND_DX, approx, "≈") + [""]
    lines += _rows("dweight", cases.HAND_DWEIGHT) + _rows("", cases.HAND_DWEIGHT, approx, "≈")
    lines += ["", "Row 0: Σx² = 25, rstd = 2/5, x̂ = (2, 4, 4, 8)/5, g = (1, 0, 1, 1),",
              "mean(g·x̂) = 7/10, dx = 2/5·(g − 7/10·x̂) = (36, −28, 22, −6)/125."]
    return "\n".join(lines)


def _short(value: float) -> str:
    return f"{value:.0e}".replace("e-0", "e-")  # 0.001 -> 1e-3


def _tested() -> str:
    epses = [case.eps for case in cases.CASES]
    usual = max(set(epses), key=epses.count)
    names = ", ".join(case.name + (f" (eps {case.eps:g})" if case.eps != usual else "") for case in cases.CASES)
    return "\n\n".join([
        "--action run: the example only, printing expected and got when they differ.",
        f"--action submit (the default): the {len(cases.CASES)} functional cases, the example "
        f"first: {names}; eps = {_short(usual)} where not given. Before each call dx and dweight are filled with {cases.FILL}: an element "
        f"left unwritten fails, and dweight must be overwritten, not added to. Results are compared "
        f"with a float64 reference at atol = rtol = {_short(cases.ATOL)} (bit for bit in the zero-dy "
        f"case); NaN fails. A case also fails when solve writes into x, weight or dy, replaces or "
        f"resizes dx or dweight (data_ptr, shape, stride), writes just outside them, raises, ends "
        f"its process, or runs past the time limit ({DEFAULT_TIMEOUT:g} s a case, and as much for "
        f"importing the file; --timeout).",
        "The file runs in a Python process of its own, killed at the time limit: it gets copies of "
        "the inputs, and the grader, which alone makes the inputs, knows the expected values and "
        "prints the verdict, judges the arrays that come back. What solve prints is shown, "
        "indented, under its case.",
        f"On a GPU, then the performance case: N = {perf.N}, C = {perf.C}, float32, dy correlated "
        f"with x (dy = 0.5·x + noise). It reports the median time, the bandwidth as a share of the "
        f"copy bandwidth measured in the same run (counting 3·N·C·4 bytes: read x and dy, write "
        f"dx), and the ratio to normkit's own kernel timed in the same run. The solution's time is "
        f"measured in its process; the grader measures the copy and normkit's kernel itself, and "
        f"fails a time that would beat the copy by more than {perf.PLAUSIBLE:g}×.",
        "The exit status is 0 only when everything passed.",
    ])


_BACKWARD_SIGNATURE = ("def solve(x: torch.Tensor, weight: torch.Tensor, dy: torch.Tensor, dx: torch.Tensor,\n"
                       "          dweight: torch.Tensor, N: int, C: int, eps: float) -> None:")
_FORWARD_SIGNATURE = "def run(M: int = 64, N: int = 256, eps: float = 1e-6) -> bool:"

BACKWARD = Statement(
    "rms-norm-backward", "RMSNorm backward", "dx and dweight of RMSNorm, rstd recomputed, into given tensors",
    cases.FUNCTION, cases.CALL, _BACKWARD_SIGNATURE,
    "# Write dx (N, C) and dweight (C,) in place; x, weight and dy are inputs, float32.",
    (("Problem", "Given x (N rows of C values), the weight (C,) of y = x̂·weight and the gradient dy "
                 "arriving on y, write the gradients dx (N, C) and dweight (C,). Nothing is saved "
                 "from a forward: recompute rstd from x."),
     ("Math", "rstd    = 1 / sqrt(mean(x²) + eps)      (mean over the C values of a row)\n"
              "x̂       = x · rstd\ng       = dy · weight\ndx      = rstd · (g − x̂ · mean(g · x̂))\n"
              "dweight = Σ_rows dy · x̂"),
     ("Signature", _BACKWARD_SIGNATURE + "\n\n"
                   "x and dy have shape (N, C), weight (C,); dx (N, C) and dweight (C,) are the "
                   "outputs, allocated by the grader: write into them. All are contiguous float32 "
                   "tensors on the GPU (CPU tensors under TRITON_INTERPRET=1 on a machine without "
                   "one). Use any of Triton, PyTorch, CuPy or Numba inside."),
     ("Constraints", "N ≥ 1 and C ≥ 1 (1 ≤ N·C); C up to 262144; float32 throughout; eps ≥ 0 "
                     "(the example uses 0). Leave x, weight and dy unchanged."),
     ("Example", _example()),
     ("How it is tested", _tested())))

FORWARD = Statement(
    "rms-norm-forward", "RMSNorm forward in Triton (the seed problem)",
    "run a Triton RMSNorm forward, return whether it matches PyTorch",
    "run", forward.CALL, _FORWARD_SIGNATURE,
    "# Launch your Triton RMSNorm on seeded (M, N) float32 inputs; return torch.allclose vs PyTorch.",
    (("Problem", "Write a Triton kernel for the RMSNorm forward, launch it on seeded random float32 "
                 "inputs x (M, N) and weight (N,), compare its output with a plain-PyTorch "
                 "reference and return whether they agree. Make the inputs on the CPU as "
                 f"g = torch.Generator().manual_seed({forward.SEED}); x = torch.randn(M, N, "
                 "generator=g); weight = torch.randn(N, generator=g), then move them to the GPU."),
     ("Math", "rstd = 1 / sqrt(mean(x²) + eps)      (mean over the N values of a row)\n"
              "y    = x · rstd · weight"),
     ("Signature", _FORWARD_SIGNATURE + "\n\nReturns the Python bool True when the outputs agree."),
     ("Constraints", "M ≥ 1, N ≥ 1, eps ≥ 0, float32. normkit's own run compares with "
                     f"torch.allclose(out, reference, atol={forward.ATOL:g}, rtol={forward.RTOL:g})."),
     ("Example", "run(M=64, N=256, eps=1e-6) -> True\n"
                 "(`python -m normkit challenge rms-norm-forward` prints normkit's own answer.)"),
     ("How it is tested", "The grader calls run(M=64, N=256, eps=1e-6) once, in a Python process "
                          "of its own, and watches the Triton kernels it launches (kernel[grid](...), "
                          "autotuned ones too). It passes when run returns exactly the bool True (not "
                          "1, not a tensor) and one launch took the statement's x and weight, left "
                          "them unchanged and wrote an (M, N) output that matches a float64 "
                          f"reference computed by the grader (atol = rtol = {forward.ATOL:g}). That "
                          "kernel must be defined in the solution file, and the grader runs that launch "
                          "again on an x and weight of its own choosing, the launch's other tensors as "
                          "they were before it: y must be computed there, from x and weight, not "
                          "copied from a tensor made elsewhere. A "
                          "raise, an exit or a call past the time limit "
                          f"({DEFAULT_TIMEOUT:g} s, and as much for the import; --timeout) fails. "
                          "The exit status is 0 only on a pass.")))

STATEMENTS: Dict[str, Statement] = {s.name: s for s in (FORWARD, BACKWARD)}
_WIDTH = 78


def _paragraphs(body: str) -> str:
    """Wrap prose paragraphs to the terminal; keep lines of code and math as they are."""
    blocks = []
    for block in body.split("\n\n"):
        prose = "\n" not in block and len(block) > _WIDTH - 2 and not block.startswith("def ")
        blocks.append(textwrap.fill(block, _WIDTH - 2, break_on_hyphens=False) if prose else block)
    return textwrap.indent("\n\n".join(blocks), "  ")


def render(name: str) -> str:
    """The statement of challenge `name` as plain text for a terminal."""
    statement = STATEMENTS[name]
    heading = f"{statement.title}  ({statement.name})"
    parts = [heading, "=" * len(heading)]
    for title, body in statement.sections:
        parts += ["", title.upper(), _paragraphs(body)]
    return "\n".join(parts)


def starter(name: str, lang: str) -> str:
    """The text of a starter file: imports, the signature and one comment line."""
    statement = STATEMENTS[name]
    imports = "import torch\n" + ("import triton\nimport triton.language as tl\n" if lang == "triton" else "")
    return f"{imports}\n\n{statement.signature}\n    {statement.comment}\n    pass\n"


def write_starter(name: str, lang: str, path: str, force: bool) -> None:
    """Write starter(name, lang) to `path`; FileExistsError when it exists and not `force`."""
    if os.path.exists(path) and not force:
        raise FileExistsError(f"{path} exists; pass --force to overwrite it")
    with open(path, "w", encoding="utf-8") as file:
        file.write(starter(name, lang))
