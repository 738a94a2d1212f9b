"""Option checks shared by the command line (`verify`, `bench`, `bench --model`) and tools/*.py.

Output files are checked when the options are parsed, before anything runs: a benchmark that
measured for minutes must not end in a traceback because --json names a directory.
"""

import argparse
import math
import os
from typing import List, Optional, Sequence


def output_path(option: str):
    """An argparse type: a file PATH that can be written (its folder exists; it is not a folder)."""

    def parse(text: str) -> str:
        problem = unwritable(text)
        if problem:
            raise argparse.ArgumentTypeError(f"{option} must be a file path that can be written, got {text!r}: "
                                             f"{problem}")
        return text

    return parse


def unwritable(path: str) -> Optional[str]:
    """Why `path` cannot be written as a file, or None when it can."""
    if not path.strip():
        return "an empty path"
    if os.path.isdir(path) or path.endswith(("/", os.sep)):
        return "it is a directory"
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return f"no directory {folder}"
    existed = os.path.exists(path)
    try:  # the real test (root passes os.access anywhere); a file made here is removed again
        with open(path, "a"):
            pass
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    if not existed:
        os.remove(path)
    return None


def distinct_outputs(parser: argparse.ArgumentParser, args: argparse.Namespace, options: Sequence[str]) -> None:
    """parser.error when two of the output options (e.g. "json", "csv") name the same file."""
    given = [(f"--{name}", getattr(args, name)) for name in options if getattr(args, name, None)]
    for i, (first, path) in enumerate(given):
        for second, other in given[i + 1:]:
            if os.path.abspath(path) == os.path.abspath(other):
                parser.error(f"{first} and {second} name the same file {path!r}; each needs its own")


def whole_numbers(option: str, minimum: int = 1):
    """An argparse type: '1,2, 4' → [1, 2, 4], each a whole number ≥ minimum, each once."""

    def parse(text: str) -> List[int]:
        items = [s.strip() for s in text.split(",") if s.strip()]
        if not items or not all(s.isdigit() and int(s) >= minimum for s in items):
            raise argparse.ArgumentTypeError(f"{option} must be comma-separated whole numbers ≥ {minimum}, "
                                             f"got {text!r}")
        return list(dict.fromkeys(int(s) for s in items))

    return parse


def whole_number(option: str, minimum: int = 1):
    """An argparse type: one whole number ≥ minimum."""

    def parse(text: str) -> int:
        if not text.strip().isdigit() or int(text) < minimum:
            raise argparse.ArgumentTypeError(f"{option} must be a whole number ≥ {minimum}, got {text!r}")
        return int(text)

    return parse


def positive_number(option: str):
    """An argparse type: one finite number > 0."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not 0 < value < math.inf:
            raise argparse.ArgumentTypeError(f"{option} must be a finite number > 0, got {text!r}")
        return value

    return parse

