"""Calling a contestant's function: in a worker thread, under a time limit, its traceback kept.

A thread cannot be killed, so a solution that hangs is left running (as a daemon thread, which
does not keep the process alive) and the grader stops waiting for it after `timeout` seconds.
"""

import os
import threading
import traceback
from typing import Callable, NamedTuple, Optional

DEFAULT_TIMEOUT = 60.0  # seconds a solution gets per call, unless the command line says otherwise
TRACE_FRAMES = 3  # how many of the innermost frames a crash report shows
_PLUMBING = {os.path.join(os.path.dirname(os.path.abspath(__file__)), name) for name in ("guard.py", "solution.py")}


class Outcome(NamedTuple):
    value: object = None
    error: str = ""  # "IndexError: boom" when the call raised
    trace: str = ""  # the innermost frames of its traceback and the error line
    timed_out: bool = False


def _harness_frame(filename: str) -> bool:
    """Frames of the grader's own plumbing (this file, the solution loader, importlib)."""
    return filename.startswith("<frozen ") or filename in _PLUMBING


def format_trace(error: BaseException) -> str:
    """The innermost TRACE_FRAMES frames of error's traceback, the grader's own left out, and
    the error line(s) (with the file, line and caret of a SyntaxError)."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if not _harness_frame(frame.filename)]
    lines = traceback.format_list(frames[-TRACE_FRAMES:]) + traceback.format_exception_only(error)
    return "".join(lines).rstrip()


def call(fn: Callable, args: tuple = (), kwargs: Optional[dict] = None, timeout: Optional[float] = None,
         after: Optional[Callable[[], None]] = None) -> Outcome:
    """fn(*args, **kwargs) in a daemon thread, then after() there (e.g. a device synchronize, so
    that asynchronous work counts against the limit); stop waiting after `timeout` s (None: wait)."""
    box = {}

    def target():
        try:
            box["value"] = fn(*args, **(kwargs or {}))
            if after is not None:
                after()
        except BaseException as error:  # SystemExit too: a solution must not end the grader
            box["error"] = error

    worker = threading.Thread(target=target, name=f"solution {getattr(fn, '__name__', 'call')}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        return Outcome(timed_out=True)
    error = box.get("error")
    if error is not None:
        return Outcome(error=f"{type(error).__name__}: {error}", trace=format_trace(error))
    return Outcome(value=box.get("value"))
