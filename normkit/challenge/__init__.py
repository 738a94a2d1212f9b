"""LeetGPU-style RMSNorm challenges on normkit's Triton kernels.

- `run(M, N, eps)`: the seed problem, Triton forward vs plain torch → bool.
- `solve(x, weight, dy, dx, dweight, N, C, eps)`: the backward, written into caller tensors.
- `run_suite(solution)`: the 12 functional cases; `mutants`: wrong solutions it must reject.
- `main(argv)`: `python -m normkit challenge {list,show,starter,rms-norm-forward,rms-norm-backward}`;
  with `--solution FILE` it grades a contestant's file against the statements in `statements`:
  the file runs in a process of its own (`sandbox`, `child`, `wire`), the grader judges what
  comes back (`cases`, `grader`, `perf`).
"""

from .backward import solve
from .cases import CASES, CaseResult, run_suite
from .cli import main
from .forward import run

__all__ = ["run", "solve", "run_suite", "CASES", "CaseResult", "main"]
