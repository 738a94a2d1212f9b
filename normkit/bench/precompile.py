"""Compile kernels in worker processes before they are needed (`python -m normkit verify` on a GPU).

Triton compiles a kernel at its first launch in a process and keeps the binary in its on-disk cache
(~/.triton/cache, or TRITON_CACHE_DIR), which processes share safely: each entry is written to a
temporary file and renamed into place. So worker processes that each run a few cases once leave
every kernel there, and the main process, running the same cases afterwards, loads them instead
of compiling them one after another (torch.compile's Inductor cache works the same way). Nothing
else passes between the processes: the results are those of a serial run.

Workers are spawned, not forked (CUDA does not survive a fork); each job is a module-level function
and its (picklable) arguments, taken by the workers in the order given.
"""

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Optional, Sequence, Tuple

from .cli import first_line

# Processes compiling at once: each holds a CUDA context (~0.5 GB) and its own Python; past ~8,
# the jobs of a verification run are too few to keep more busy.
MAX_WORKERS = 8
Job = Tuple[Callable[..., object], tuple]


def workers(requested: Optional[int], jobs: int) -> int:
    """Worker processes for `jobs` jobs: `requested` (--jobs; 0: none), by default
    min(MAX_WORKERS, CPU count); never more than the jobs."""
    if requested is not None and (not isinstance(requested, int) or requested < 0):
        raise ValueError(f"requested must be None or an int ≥ 0 (0: no worker processes), got {requested!r}")
    wanted = min(MAX_WORKERS, os.cpu_count() or 1) if requested is None else requested
    return max(0, min(wanted, jobs))


class Pool:
    """Jobs running in `worker_count` spawned processes from the start; `wait(i)` until job i is
    done, `close()` until all are (and the workers gone). A job that fails is only counted: whatever
    it would have compiled, the caller compiles itself when it gets there."""

    def __init__(self, jobs: Sequence[Job], worker_count: int):
        self.jobs, self.workers, self.failures, self.note = len(jobs), worker_count, [], None
        self._futures, self._done, self._executor = [], set(), None
        if worker_count < 1 or not jobs:
            return
        try:
            self._executor = ProcessPoolExecutor(max_workers=worker_count,
                                                 mp_context=multiprocessing.get_context("spawn"))
            self._futures = [self._executor.submit(fn, *args) for fn, args in jobs]
        except Exception as exc:  # no pool at all (spawning failed)
            self.note = f"no worker processes ({first_line(exc)}); compiling here, one kernel at a time"

    def wait(self, index: int) -> None:
        if index in self._done or index >= len(self._futures):
            return
        self._done.add(index)
        try:
            self._futures[index].result()
        except Exception as exc:  # the job, or a worker process that died (BrokenProcessPool)
            self.failures.append(exc)

    def close(self) -> Optional[str]:
        """Wait for every job; None when all ran, else one line saying what failed."""
        for index in range(len(self._futures)):
            self.wait(index)
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None
        if self.note is None and self.failures:
            self.note = (f"{len(self.failures)} of {self.jobs} jobs failed in the workers (first: "
                         f"{first_line(self.failures[0])}); their kernels compile here, one at a time")
        return self.note

