"""Loading a contestant's solution file: import it under a fresh module name, take one function.

Anything that keeps the grader from getting a callable (no such file, a syntax error, a failing
import, the name missing or not callable) raises SolutionError with a message for the person
who wrote the file; the command line turns it into exit status 2.
"""

import importlib.machinery
import importlib.util
import itertools
import os
import sys
import textwrap
from typing import Callable

from . import guard

_loaded = itertools.count()  # a fresh module name per load: two files never share one


class SolutionError(Exception):
    """The solution file could not be loaded, or does not define what the challenge calls."""


def load_solution(path: str, name: str, call: str) -> Callable:
    """Import the file at `path` and return its `name`, a callable; `call` (how the grader calls
    it, "solve(x, weight, …)") is for messages."""
    if not os.path.exists(path):
        raise SolutionError(f"no solution file at {path}")
    if not os.path.isfile(path):
        raise SolutionError(f"the solution {path} is not a file")
    module_name = f"normkit_solution_{next(_loaded)}"
    loader = importlib.machinery.SourceFileLoader(module_name, os.path.abspath(path))
    spec = importlib.util.spec_from_file_location(module_name, os.path.abspath(path), loader=loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # some libraries look a function's module up by name
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as error:
        del sys.modules[module_name]
        trace = textwrap.indent(guard.format_trace(error), "    ")
        raise SolutionError(f"could not import {path}:\n{trace}") from None
    fn = getattr(module, name, None)
    if fn is None:
        raise SolutionError(f"{path} does not define {call}")
    if not callable(fn):
        raise SolutionError(f"{name} in {path} must be a function, {call}; got {type(fn).__name__}")
    return fn
