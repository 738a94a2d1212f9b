"""Where a solution runs: a contestant's file in a process of its own, a trusted callable here.

`Isolated` spawns a fresh Python process (multiprocessing's "spawn", never "fork": the child
shares no memory with the grader) that imports the file and answers jobs over a pipe
(`child.main`, `wire`). The grader keeps the expected values and the checker; it sends copies of
the inputs and reads back raw arrays, never a pickle. Each exchange has a wall-clock limit
enforced from outside: past it the process is killed (SIGKILL), whatever it is doing, an import,
an endless loop or a C call that holds the GIL. A process that exits, crashes or answers out of
format fails the job, and the next job gets a fresh process. What it prints goes to a log that
the grader shows, indented, under the case: it cannot pass for the grader's own lines.

This guards the verdict against a solution that tampers with the grader in Python. What only the
solution's process can see is its own word, though: the forward's record of Triton launches and
the backward's time are made there, and a file that rewrites normkit's code in its process can
forge them (the backward's values, judged here, cannot be). The process also runs with the user's
rights: a hostile solution belongs in a container as well.

`InProcess` calls a callable the caller trusts (normkit's own solve, the mutants in tests) in
this process, with no isolation and no time limit.
"""

import contextlib
import multiprocessing
import os
import signal
import sys
import tempfile
import threading
import types
from typing import Callable, NamedTuple, Optional, Union

from . import child, wire
from .solution import SolutionError, check_file

DEFAULT_TIMEOUT = 60.0  # seconds a solution gets per call (and for its import), unless told otherwise
STARTUP_TIMEOUT = 300.0  # a new process importing torch: the grader's own time, not the solution's
SHOWN_OUTPUT_LINES = 20  # lines of a solution's printed output shown per case
SHOWN_OUTPUT_BYTES = 1 << 14  # and at most this much of it read
_SPAWN = multiprocessing.get_context("spawn")


class StartError(RuntimeError):
    """No Python process could be started for the solution (the grader's side, not the file)."""


class Reply(NamedTuple):
    header: dict  # what the solution's side reported ({} when lost)
    tensors: wire.Tensors
    lost: str = ""  # why no reply came ("had not returned after 3 s, …"); "" when one came
    output: str = ""  # what the solution printed meanwhile (isolated only)


class InProcess:
    """A trusted callable, called in this process (no isolation, no time limit)."""

    def __init__(self, fn: Callable):
        self.fn = fn

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def call(self, job: dict, inputs: wire.Tensors, max_elements: Optional[int] = None) -> Reply:
        return Reply(*child.handle(self.fn, job, inputs))


@contextlib.contextmanager
def _without_main_module():
    """Spawn re-runs the parent's __main__ in the child unless it has none: the solution's process
    needs nothing of it (and a script without an `if __name__ == "__main__"` guard would rerun)."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def _ending(exitcode: Optional[int]) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


class Isolated:
    """A contestant's file, loaded and called in a spawned process (see the module docstring).

    Entering starts the process and loads the file: SolutionError when it cannot be loaded (it
    raised, lacks `function`, exited or ran past `timeout` seconds). `call` sends a job and
    waits at most `timeout` seconds (None: no limit) for the reply.
    """

    def __init__(self, path: str, function: str, call: str, timeout: Optional[float]):
        check_file(path)  # missing, not a file, not Python: said without starting a process
        self.path, self.function, self.call_text, self.timeout = path, function, call, timeout
        self._process = self._conn = None
        self._seen = 0  # bytes of the log already shown
        self._log = tempfile.NamedTemporaryFile(prefix="normkit-solution-", suffix=".log", delete=False)

    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self) -> None:
        self._stop(graceful=True)
        self._log.close()
        with contextlib.suppress(OSError):
            os.unlink(self._log.name)

    # -------------------------------------------------------------------------- process
    def _start(self) -> None:
        conn, child_end = _SPAWN.Pipe()
        spec = {"path": os.path.abspath(self.path), "function": self.function, "call": self.call_text,
                "output": self._log.name}
        self._process = _SPAWN.Process(target=child.main, args=(child_end, spec), name="normkit solution")
        with _without_main_module():
            self._process.start()
        child_end.close()  # only the child holds its end: its exit reads as EOF here
        self._conn = conn
        header, _, lost = self._exchange(lambda: wire.receive(conn, 0), STARTUP_TIMEOUT, "started")
        if lost:
            output = self._output()
            raise StartError(f"the grader could not start a Python process for the solution: it {lost}"
                               + (f"; it printed:\n{output}" if output else ""))
        header, _, lost = self._exchange(lambda: wire.receive(conn, 0), self.timeout, "finished")
        output = self._output()
        shown = f"; it printed:\n{output}" if output else ""
        if lost:
            raise SolutionError(f"importing {self.path} {lost}{shown}")
        if header.get("status") != "loaded":
            self._stop()
            raise SolutionError(wire.printable(header.get("error", "the solution could not be loaded")) + shown)

    def _stop(self, graceful: bool = False) -> None:
        if self._process is None:
            return
        self._conn.close()  # the child's next read ends, and so does it
        if graceful:
            self._process.join(5)
        self._kill()
        self._process.join()
        self._process.close()
        self._process = self._conn = None

    def _kill(self) -> None:
        """SIGKILL the process group child.main made (what the solution started, even once the
        process itself has ended: a forked child would outlive the grading), then the process."""
        with contextlib.suppress(OSError):
            os.killpg(self._process.pid, signal.SIGKILL)  # (a group's id is not reused while a member is left)
        if self._process.is_alive():
            self._process.kill()

    def _exchange(self, action: Callable, timeout: Optional[float], done: str):
        """Run action (pipe I/O) in a helper thread; past `timeout` s, or when the pipe breaks or
        the reply is out of format, stop the process. Returns (header, tensors, why it was lost)."""
        box = {}

        def target():
            try:
                box["reply"] = action()
            except BaseException as error:  # reported below, the process stopped
                box["error"] = error

        helper = threading.Thread(target=target, name="normkit grader pipe", daemon=True)
        helper.start()
        helper.join(timeout)
        if helper.is_alive():
            self._kill()
            helper.join(5)  # the pipe's other end is gone: the read or write ends now
            lost = f"had not {done} after {timeout:g} s, so its process was killed"
        elif "error" in box:
            error = box["error"]
            if not isinstance(error, wire.Malformed):
                self._process.join(5)  # a broken pipe is mostly an exit: let it finish first
            if isinstance(error, wire.Malformed):
                lost = f"sent a malformed reply ({error}), so its process was killed"
            elif not self._process.is_alive():
                lost = f"ended its process ({_ending(self._process.exitcode)}) before it {done}"
            else:
                lost = f"broke the pipe to the grader ({type(error).__name__}), so its process was killed"
        else:
            return box["reply"][0], box["reply"][1], ""
        self._stop()
        return {}, {}, lost

    def _output(self) -> str:
        """What the solution printed since the last look: its first SHOWN_OUTPUT_LINES lines,
        each indented with "| "."""
        with open(self._log.name, "rb") as log:
            size = os.fstat(log.fileno()).st_size
            log.seek(self._seen)
            text = log.read(min(size - self._seen, SHOWN_OUTPUT_BYTES)).decode("utf-8", "replace")
        cut, self._seen = size - self._seen > SHOWN_OUTPUT_BYTES, size
        if not text:
            return ""
        lines = wire.printable(text).rstrip("\n").split("\n")
        if len(lines) > SHOWN_OUTPUT_LINES or cut:
            lines = lines[:SHOWN_OUTPUT_LINES] + ["… (more lines)"]
        return "\n".join(f"| {line}" for line in lines)

    # -------------------------------------------------------------------------- jobs
    def call(self, job: dict, inputs: wire.Tensors, max_elements: Optional[int] = None) -> Reply:
        """Send job and inputs, wait for the reply; a process lost before is replaced first."""
        if self._process is None:
            try:
                self._start()
            except SolutionError as error:
                return Reply({}, {}, f"could not be loaded again after its last process was lost: {error}")
        conn = self._conn

        def exchange():
            wire.send(conn, job, inputs)
            return wire.receive(conn, max_elements)

        header, tensors, lost = self._exchange(exchange, self.timeout, "returned")
        return Reply(header, tensors, lost, self._output())


def open_solution(solution: Union[str, os.PathLike, Callable], function: str, call: str,
                  timeout: Optional[float] = None):
    """A path → Isolated (a process of its own); a callable → InProcess (trusted)."""
    if callable(solution):
        return InProcess(solution)
    return Isolated(os.fspath(solution), function, call, timeout)
