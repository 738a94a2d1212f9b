"""`python -m normkit bench --eager`: per-call wall time in an eager loop, host overhead included.

How most Hugging Face training and every `generate()` runs: no CUDA graph, so the Python above
each launch (validation, dispatch, autograd, allocation) counts as much as the kernels at small M.
Three passes per implementation, each timed the same way (`method`, `normkit.bench.timing.loop_times`):

  fwd (no grad)   with torch.no_grad(): apply(x, weight)
  fwd             apply(x, weight) on inputs that require grad (autograd records the graph)
  fwd + bwd       torch.autograd.grad(apply(x, weight), (x, weight), dy)

with the family's inputs in place of (x, weight) for the other families (`normkit.bench.families`).
"""

from typing import Callable, Dict, List, Mapping, Sequence, Tuple

import torch

from . import output, peers, timing
from .families import FAMILIES, Case, Sample, make_sample

# M from a decode step (1) to a training batch (16384) at a LLaMA width: the host dominates below
# ~1024 rows, the kernels above.
DEFAULT_GRID: List[Case] = [(torch.bfloat16, m, 4096) for m in (1, 8, 1024, 16384)]
CALLS = 100  # calls a loop: one synchronize per 100 calls hides the synchronize itself
REPEATS = 20  # loops: min and median steady, p20–p80 shows the noise
WARMUP = 10  # calls before the loops (compilation, allocator, clocks)
DRY_RUN = {"calls": 2, "repeats": 2, "warmup": 1}  # the interpreter: plumbing only


def method(calls: int, repeats: int, warmup: int, device: str, on_gpu: bool = True) -> str:
    """What is timed and how: printed above the tables."""
    sync = "torch.cuda.synchronize()" if on_gpu else "nothing to synchronize on CPU"
    return (f"Eager wall time per call on {device}, host clock, no CUDA graph (Python, dispatch and launches "
            f"count): {warmup} warm-up call(s), a synchronize, then {repeats} loops of {calls} calls back to back on "
            f"the same inputs, each loop ended by one synchronize ({sync}); per call = loop time / {calls}. Min, "
            f"median and p20–p80 over the {repeats} loops, µs.\n"
            "fwd (no grad): apply(x, weight) under torch.no_grad(); fwd: the same on inputs that require grad; "
            "fwd + bwd: torch.autograd.grad(apply(x, weight), (x, weight), dy). Other families: their own inputs.")


def passes(impl: peers.Impl, sample: Sample, eps: float) -> Dict[str, Callable[[], object]]:
    """The three timed callables of one implementation on one sample, keyed as in `output.EAGER_PASSES`."""
    leaves = [t.detach().requires_grad_() for t in sample.inputs]

    def fwd_no_grad():
        with torch.no_grad():
            return impl.apply(*sample.inputs, eps)

    return {"eager_fwd_no_grad": fwd_no_grad,
            "eager_fwd": lambda: impl.apply(*leaves, eps),
            "eager_fwd_bwd": lambda: torch.autograd.grad(impl.apply(*leaves, eps), leaves, sample.grads)}


def measure(impl: peers.Impl, sample: Sample, device: torch.device, eps: float, calls: int, repeats: int,
            warmup: int) -> Dict[str, float]:
    """{f"{pass}_{min,p20,median,p80}_s"} of one implementation; the median also as f"{pass}_s"."""
    row = {}
    for key, fn in passes(impl, sample, eps).items():
        times = timing.loop_times(fn, device, calls, repeats, warmup)
        p20, median, p80 = timing.spread(times)
        row.update({f"{key}_min_s": min(times), f"{key}_p20_s": p20, f"{key}_s": median,
                    f"{key}_p80_s": p80})
    return row


def run(grids: Mapping[str, Sequence[Case]], impl_names: Sequence[str], device: torch.device, *, eps: float,
        calls: int, repeats: int, warmup: int, dry_run: bool = False, quiet: bool = False
        ) -> Tuple[List[Dict], Dict]:
    """Every family × case × implementation; returns (result rows, environment)."""
    from . import cli  # (cli imports this module)

    impls = {family: cli.load_impls(impl_names, family, quiet) for family in grids}
    env = cli.environment(device, impls, dry_run)
    env["eager"] = {"calls": calls, "repeats": repeats, "warmup": warmup}
    steps = [(FAMILIES[family], case, impl) for family, cases in grids.items() for case in cases
             for impl in impls[family]]
    rows, sample, current = [], None, None
    for family, case, impl in output.progress(steps, "bench --eager"):
        if (family, case) != current:  # new inputs per shape; free the last shape's first
            sample = None
            if device.type == "cuda":
                torch.cuda.empty_cache()
            sample, current = make_sample(family, case, device), (family, case)
        row = cli.result_row(family.name, impl.name, case)
        try:
            row.update(measure(impl, sample, device, eps, calls, repeats, warmup))
        except Exception as exc:  # one peer failing (Liger at N > 65536) must not stop the run
            row["error"] = cli.first_line(exc)
        rows.append(row)
    return rows, env
