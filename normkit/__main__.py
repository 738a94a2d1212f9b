"""`python -m normkit [COMMAND] [OPTIONS]` (or the `normkit` console script): the command line.

    python -m normkit                  # verify: the kernels against a float64 reference
    python -m normkit verify --quick   # the same on the small shapes only
    python -m normkit bench --help     # timing against the peers (a GPU)
    python -m normkit bench --model llama   # training steps of a model, stock vs normkit.patch
    python -m normkit demo             # a tiny model trained with torch's norms and with normkit's
    python -m normkit challenge list   # the LeetGPU-style challenges
    python -m normkit help bench       # = python -m normkit bench --help

Each command parses its own options (`python -m normkit COMMAND --help`); with no command, or
with options only, the command is `verify`. `report` is an alias of `verify`.
"""

import argparse
import difflib
import importlib
import os
import sys
from typing import List, Optional

# name: (module whose main(argv) runs it, one line for --help)
COMMANDS = {
    "verify": ("normkit.report", "check the kernels vs float64 (default; alias: report)"),
    "bench": ("normkit.bench", "time normkit vs its peers on a GPU (--model: steps)"),
    "demo": ("normkit.demo", "train a tiny model with torch's, then normkit's norms"),
    "challenge": ("normkit.challenge", "LeetGPU-style RMSNorm challenges and their grader"),
}
ALIASES = {"report": "verify"}
DEFAULT = "verify"
EXAMPLES = """examples:
  python -m normkit                       verify the kernels vs float64 (no GPU: in Triton's interpreter)
  python -m normkit verify --full         every case of the grid, not the representative subset
  python -m normkit bench --family all    forward and backward µs of every family (a CUDA GPU)
  python -m normkit demo                  a tiny Llama-style model trained with torch's and normkit's norms
  python -m normkit challenge list        the challenges; `challenge show NAME` prints one
  python -m normkit help bench            a command's options (= python -m normkit bench --help)"""


def _prefer_interpreter_without_gpu() -> None:
    # Must happen before anything imports triton: on a machine with no GPU the kernels can only
    # run through Triton's interpreter, on CPU tensors.
    import torch

    if not torch.cuda.is_available():
        if not os.environ.get("TRITON_INTERPRET"):  # unset or empty
            os.environ["TRITON_INTERPRET"] = "1"


def parser() -> argparse.ArgumentParser:
    """The top-level parser: the command list, --help and --version. Options belong to each command."""
    from . import __version__

    p = argparse.ArgumentParser(
        prog="python -m normkit", description="normkit: RMSNorm and LayerNorm kernels for PyTorch, in Triton.",
        epilog=f"With no command, or with options only, runs {DEFAULT}. `python -m normkit COMMAND --help`\n"
               f"(or `python -m normkit help COMMAND`) lists a command's options.\n\n{EXAMPLES}",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"normkit {__version__}")
    commands = p.add_subparsers(dest="command", title="commands", help=f"the command to run (default {DEFAULT})")
    for name, (_, summary) in COMMANDS.items():
        # add_help=False: `COMMAND --help` is answered by the command's own parser, after dispatch
        commands.add_parser(name, help=summary, add_help=False)
    return p


def _command(name: str) -> str:
    """The command `name` names (aliases resolved); otherwise argparse's one-line error, exit 2, with
    the closest command suggested where one is close."""
    name = ALIASES.get(name, name)
    if name not in COMMANDS:
        close = difflib.get_close_matches(name, [*COMMANDS, *ALIASES], n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        choices = ", ".join(map(repr, COMMANDS))
        parser().error(f"argument command: invalid choice: {name!r} (choose from {choices}){hint}")
    return name


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help", "--version"):
        parser().parse_args(argv[:1])  # prints and exits 0
    if argv and argv[0] == "help":  # `help` and `help COMMAND`, as git and pip answer them
        if len(argv) == 1:
            parser().parse_args(["--help"])
        argv = [*argv[1:], "--help"]  # (`help challenge show`: the subcommand's own help)
    if argv and not argv[0].startswith("-"):
        command = _command(argv[0])
        argv = argv[1:]
    else:
        command = DEFAULT
    _prefer_interpreter_without_gpu()
    module = importlib.import_module(COMMANDS[command][0])
    return module.main(argv)


if __name__ == "__main__":
    sys.exit(main())
