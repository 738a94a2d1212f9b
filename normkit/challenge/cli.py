"""`python -m normkit challenge {rms-norm-forward,rms-norm-backward}`."""

import argparse
from typing import Callable, List

from .backward import solve
from .cases import run_suite
from .forward import run
from .perf import run_performance


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m normkit challenge",
        description="LeetGPU-style RMSNorm challenges, run against normkit's Triton kernels "
                    "(on a CUDA GPU, or on the CPU under TRITON_INTERPRET=1).")
    problems = parser.add_subparsers(dest="problem", required=True, metavar="PROBLEM")
    forward = problems.add_parser(
        "rms-norm-forward", help="run the Triton forward once; print True when it matches torch",
        description="Launch normkit's Triton RMSNorm forward on seeded float32 inputs and print "
                    "whether torch.allclose agrees with a plain-torch reference (exit 0 iff True).")
    forward.add_argument("-M", type=int, default=64, help="rows (default 64)")
    forward.add_argument("-N", type=int, default=256, help="row length (default 256)")
    forward.add_argument("--eps", type=float, default=1e-6, help="epsilon (default 1e-6)")
    problems.add_parser(
        "rms-norm-backward", help="run the 12 backward cases, then the timed case on a GPU",
        description="Run normkit's solve(x, weight, dy, dx, dweight, N, C, eps) through the 12 "
                    "functional cases (float64 reference, atol = rtol = 1e-3), one line per case, "
                    "then the 16384x4096 performance case on a GPU. Exit 0 iff every case passed.")
    return parser


def grade_backward(solve_fn: Callable) -> bool:
    """Print one PASS/FAIL line per case, then the performance case; True iff all passed."""
    results = run_suite(solve_fn)
    for result in results:
        print(f"{'PASS' if result.passed else 'FAIL'} {result.name}: {result.message}")
    functional = all(result.passed for result in results)
    print(f"{sum(result.passed for result in results)}/{len(results)} cases passed")
    return run_performance(solve_fn) and functional


def main(argv: List[str]) -> int:
    args = _parser().parse_args(argv)
    if args.problem == "rms-norm-forward":
        matched = run(args.M, args.N, args.eps)
        print(matched)
        return 0 if matched else 1
    return 0 if grade_backward(solve) else 1
