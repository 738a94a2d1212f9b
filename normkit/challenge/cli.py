"""`python -m normkit challenge {list,show,starter,rms-norm-forward,rms-norm-backward}`.

Exit status: 0 when everything passed (or was shown/written), 1 when a case failed, 2 for a
solution file that cannot be loaded, a starter that would overwrite a file, bad arguments or no
device to run on; each of those ends in one line on stderr, "normkit challenge: …".
"""

import argparse
import math
import os
import sys
from typing import List

from . import statements
from .backward import solve
from .checks import check_eps, check_positive_int
from .device import challenge_device
from .forward import run
from .grader import grade_backward, grade_forward
from .sandbox import DEFAULT_TIMEOUT, StartError
from .solution import SolutionError

__all__ = ["main", "grade_backward", "grade_forward"]


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text}")
    return value


def _add_solution_options(parser: argparse.ArgumentParser, function: str) -> None:
    parser.add_argument("--solution", metavar="FILE",
                        help=f"a Python file defining {function}(...) to grade (default: normkit's own)")
    parser.add_argument("--timeout", type=_seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"time limit for each call of {function} (default {DEFAULT_TIMEOUT:g})")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m normkit challenge",
        description="LeetGPU-style RMSNorm challenges: read a statement, write a solution file, grade it\n"
                    "(on a CUDA GPU; without one, in Triton's interpreter on the CPU).",
        epilog="examples:\n"
               "  python -m normkit challenge show rms-norm-backward\n"
               "  python -m normkit challenge starter rms-norm-backward --lang pytorch\n"
               "  python -m normkit challenge rms-norm-backward --solution solve_rms_norm_backward.py\n"
               "`python -m normkit challenge COMMAND --help` lists a command's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("list", help="the challenges, one line each")
    show = commands.add_parser("show", help="print a challenge's statement")
    challenge_name = f"the challenge: {' or '.join(statements.STATEMENTS)}"
    show.add_argument("name", choices=statements.STATEMENTS, metavar="NAME", help=challenge_name)
    starter = commands.add_parser("starter", help="write a starter solution file")
    starter.add_argument("name", choices=statements.STATEMENTS, metavar="NAME", help=challenge_name)
    starter.add_argument("--lang", choices=("triton", "pytorch"), default="triton",
                         help="the starter's language (default triton; rms-norm-forward grades Triton launches)")
    starter.add_argument("--out", metavar="PATH", help="where to write it (default e.g. solve_rms_norm_backward.py)")
    starter.add_argument("--force", action="store_true", help="overwrite PATH when it exists")
    forward = commands.add_parser(
        "rms-norm-forward", help="grade run(M, N, eps) -> bool: it must return True",
        description="Call run(M=64, N=256, eps=1e-6) once. Without --solution, normkit's own run "
                    "launches its Triton forward and the result is printed (exit 0 iff True).")
    forward.add_argument("-M", type=int, default=64, help="rows (default 64)")
    forward.add_argument("-N", type=int, default=256, help="row length (default 256)")
    forward.add_argument("--eps", type=float, default=1e-6, help="epsilon (default 1e-6)")
    _add_solution_options(forward, "run")
    backward = commands.add_parser(
        "rms-norm-backward", help="grade solve(x, weight, dy, dx, dweight, N, C, eps)",
        description="Run solve through the example (--action run) or the 12 functional cases "
                    "(float64 reference, atol = rtol = 1e-3) and, on a GPU, the 16384x4096 "
                    "performance case (--action submit). Exit 0 iff every case passed.")
    _add_solution_options(backward, "solve")
    backward.add_argument("--action", choices=("run", "submit"), default="submit",
                          help="run: the example only; submit (default): every case")
    return parser


def _list() -> int:
    for statement in statements.STATEMENTS.values():
        print(f"{statement.name:<19} {statement.summary}")
    print("(`python -m normkit challenge show NAME` prints a statement)")
    return 0


def _starter(args) -> int:
    statement = statements.STATEMENTS[args.name]
    path = args.out or statement.starter_path()
    if os.path.isdir(path):
        return _error(f"--out {path} is a directory; give a file path")
    try:
        statements.write_starter(args.name, args.lang, path, args.force)
    except FileExistsError as error:
        return _error(error)
    except OSError as error:  # no such directory, not writable
        return _error(f"cannot write the starter to --out {path}: {error.strerror or error}")
    print(f"wrote {path}; grade it with: python -m normkit challenge {args.name} --solution {path}")
    return 0


def _error(error: Exception) -> int:
    print(f"normkit challenge: {error}", file=sys.stderr)
    return 2


def _grade(args) -> int:
    try:
        if args.command == "rms-norm-forward":
            check_positive_int("M", args.M)
            check_positive_int("N", args.N)
            check_eps(args.eps)
        challenge_device()  # no GPU and no interpreter: said before anything runs
    except (ValueError, TypeError, RuntimeError) as error:
        return _error(error)
    try:
        return _run_grader(args)
    except (SolutionError, StartError) as error:
        return _error(error)
    except RuntimeError as error:  # the grader's own tensors (x, the reference) did not fit
        message = str(error)
        if "out of memory" not in message and "can't allocate memory" not in message:
            raise
        print(f"normkit challenge: the inputs do not fit in memory ({message.splitlines()[0][:200]}); "
              "try a smaller -M / -N", file=sys.stderr)
        return 1


def _run_grader(args) -> int:
    if args.command == "rms-norm-forward":
        if args.solution is None:  # normkit's own run: prints just the bool, as ever
            matched = run(args.M, args.N, args.eps)
            print(matched)
            return 0 if matched else 1
        return 0 if grade_forward(args.solution, args.M, args.N, args.eps, args.timeout) else 1
    return 0 if grade_backward(args.solution or solve, args.action, args.timeout) else 1


def main(argv: List[str]) -> int:
    args = _parser().parse_args(argv)
    if args.command == "list":
        return _list()
    if args.command == "show":
        print(statements.render(args.name))
        return 0
    if args.command == "starter":
        return _starter(args)
    return _grade(args)
