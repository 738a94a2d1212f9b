"""Compile kernels in worker processes before a run (`python -m normkit verify` on a GPU).

Triton compiles a kernel at its first launch in a process and keeps the binary in its on-disk cache
(~/.triton/cache, or TRITON_CACHE_DIR), which processes share safely: each entry is written to a
temporary file and renamed into place. So worker processes that each run a few cases once leave
every kernel there, and the main process, running the same cases afterwards, loads them instead
of compiling them one after another (torch.compile's Inductor cache works the same way). Nothing
else passes between the processes: the results are those of a serial run.

Workers are spawned, not forked (CUDA does not survive a fork); each job is a module-level function
and its (picklable) arguments.
"""

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Optional, Sequence, Tuple

from . import output
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


def run(jobs: Sequence[Job], worker_count: int) -> Optional[str]:
    """Run every job once across `worker_count` spawned processes. None when all ran; else one line
    saying what failed (whatever a failed job would have compiled, the caller compiles itself)."""
    if worker_count < 1 or not jobs:
        return None
    failures = []
    try:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=worker_count, mp_context=context) as pool:
            futures = [pool.submit(fn, *args) for fn, args in jobs]
            for future in output.progress(futures, "compile"):
                try:
                    future.result()
                except Exception as exc:  # a job, or a worker process that died (BrokenProcessPool)
                    failures.append(exc)
    except Exception as exc:  # no pool at all (spawning failed)
        return f"no worker processes ({first_line(exc)}); compiling here, one kernel at a time"
    if not failures:
        return None
    return (f"{len(failures)} of {len(jobs)} jobs failed in the workers (first: {first_line(failures[0])}); "
            "their kernels compile here, one at a time")
