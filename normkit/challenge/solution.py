"""Loading a contestant's solution file: import it under a fresh module name, take one function.

It runs in the solution's own process (`child.main`): importing a contestant's file runs its
code. Anything that keeps the grader from getting a callable (a failing import, the name missing
or not callable) raises SolutionError with a message for the person who wrote the file; the
command line turns it into exit status 2. `check_file` makes the checks that need no import
(the file exists, it compiles) in the grader's process.
"""

import importlib.machinery
import importlib.util
import itertools
import os
import sys
import textwrap
from typing import Callable

from .child import format_trace

_loaded = itertools.count()  # a fresh module name per load: two files never share one


class SolutionError(Exception):
    """The solution file could not be loaded, or does not define what the challenge calls."""


def check_file(path: str) -> None:
    """SolutionError unless `path` is a file of Python that compiles (nothing of it runs)."""
    if not os.path.exists(path):
        raise SolutionError(f"no solution file at {path}")
    if not os.path.isfile(path):
        raise SolutionError(f"the solution {path} is not a file")
    try:
        with open(path, "rb") as file:
            compile(file.read(), os.path.abspath(path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as error:  # ValueError: a NUL byte in the source
        trace = textwrap.indent(format_trace(error), "    ")
        raise SolutionError(f"could not import {path}:\n{trace}") from None


def load_solution(path: str, name: str, call: str) -> Callable:
    """Import the file at `path` and return its `name`, a callable; `call` (how the grader calls
    it, "solve(x, weight, …)") is for messages."""
    check_file(path)
    module_name = f"normkit_solution_{next(_loaded)}"
    loader = importlib.machinery.SourceFileLoader(module_name, os.path.abspath(path))
    spec = importlib.util.spec_from_file_location(module_name, os.path.abspath(path), loader=loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # some libraries look a function's module up by name
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as error:
        del sys.modules[module_name]
        trace = textwrap.indent(format_trace(error), "    ")
        raise SolutionError(f"could not import {path}:\n{trace}") from None
    fn = getattr(module, name, None)
    if fn is None:
        raise SolutionError(f"{path} does not define {call}")
    if not callable(fn):
        raise SolutionError(f"{name} in {path} must be a function, {call}; got {type(fn).__name__}")
    return fn
