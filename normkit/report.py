"""`python -m normkit verify` (the default command): the verification report.

Every case runs normkit's kernels and compares them with `normkit.reference` run on float64
copies of the inputs (relative Frobenius error, see `normkit.bench.inputs`):

  y, rstd          the forward, storing the statistics (`normkit.lowlevel.rms_norm_fwd` /
                   `layer_norm_fwd`)
  dx, dweight      the backward with the saved statistics (`rms_norm_bwd` / `layer_norm_bwd`)
  dx*, dweight*    the backward op recomputing them in the kernel
  autograd         rms_norm / layer_norm + torch.autograd.grad: the worst of its outputs and gradients

A case is a shape and a layout (`normkit.bench.cases.FEATURES`): RMSNorm or LayerNorm (with a bias,
whose dbias counts in the verdict), a residual (the fused pre-norm path: residual_out and a gradient
arriving on it count too), per-head parameters, Gemma's weight offset, Llama casting, no weight,
strided rows.

An output passes when it is finite and its error is within the tolerance of its own dtype:

  bf16 1e-2   rounding the output alone costs ~1.7e-3 (3.3e-3 in Triton's CPU interpreter,
              which truncates float32 → bf16); the rest is headroom
  fp16 2e-3   rounding alone ~2.1e-4
  fp32 1e-5   observed ≤ 2e-7; dweight sums up to 16384 rows, still far below
  fp64 1e-12  observed ~1e-16

rstd is float32 (float64 for fp64 inputs), so it is held to that dtype's tolerance.

On a GPU the grid is larger (up to 16384×4096 and N = 262144) and a first timing table follows
(`normkit.bench`). On a CPU the kernels run in Triton's interpreter on small shapes, and nothing
is timed. Exit status 0 iff every case passes.

The default subset. Compiling the kernels is what a first run on a GPU costs (Triton compiled 88
cases for 166 s on a fresh H200), so by default verify runs a representative subset and `--full`
every case. Each case × dtype of the grid is labelled with what it exercises: its family, its
layout's features (residual, bias, per-head, offset, llama casting, no weight, strided), its dtype,
and per pass — forward, backward with saved statistics, backward recomputing them — the tile this
device's launch heuristics pick (whole row, column tiles or split rows, with their options: re-read,
prefetch, staged loads, register cap, ...). The subset is the greedy cover of every label of the
grid: repeatedly the case × dtype adding the most labels not yet covered, until none is left
(`normkit.bench.cases.representative`). Computed, not listed: a heuristic that moves a shape onto a
new tile keeps that tile in the default check. On an H200 that is about one case in eight (15 of
124 when written), on the CPU one in five; a case has the same inputs (seed) in the subset and in
--full.

On a GPU the kernels of the cases (and of the timing table) are first compiled in parallel worker
processes (`normkit.bench.precompile`): that only fills Triton's on-disk cache, so the results are
those of a serial run.
"""

import argparse
import math
import sys
import time
from typing import Callable, Dict, List, Optional, Tuple

import torch

from . import _runtime, lowlevel
from .bench import output, precompile
from .bench.options import output_path
from .bench.cases import Case, representative
from .bench.inputs import float64_errors, make_inputs

EPS = 1e-6
TOLERANCE = {torch.bfloat16: 1e-2, torch.float16: 2e-3, torch.float32: 1e-5, torch.float64: 1e-12}
DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64)
COLUMNS = ("y", "rstd", "dx", "dweight", "dx*", "dweight*", "autograd")

_SMALL = [Case((1, 1)), Case((3, 7)), Case((64, 256)), Case((2, 3, 40)),
          Case((12, 96), "strided"), Case((64, 256), "no weight"), Case((33, 300), "layer norm"),
          Case((2, 16, 200), "residual"), Case((4, 3, 96), "per-head"), Case((64, 256), "offset"),
          Case((64, 256), "llama"), Case((33, 300), "layer norm, residual")]
_CPU_MORE = [Case((4, 5000)), Case((2, 70000))]  # 70000 > the interpreter's 65536-wide tile
# GPU: every tile rule of the launch heuristics (docs/design.md#heuristics) — stacked rows (128,
# 768), whole rows (2048 … 12000), the backward's split rows past 16384 (20000, 40000), the
# forward's past 32768 (40000, 70000, 262144), the backward's column tiles where split rows of
# every head would not all be resident (64 heads × 40000); QK-norm rows; large M.
_GPU_MORE = [Case((4, 5000)), Case((2, 70000)), Case((4096, 2048)), Case((1000, 12000)),
             Case((300, 20000)), Case((100, 40000)), Case((65537, 128)), Case((4, 33, 768)),
             Case((512, 3000), "strided"), Case((16384, 4096)), Case((64, 262144)),
             Case((4096, 4096), "layer norm"), Case((4096, 4096), "residual"), Case((64, 70000), "layer norm"),
             Case((2048, 32, 128), "per-head"), Case((2, 64, 40000), "per-head"), Case((4096, 4096), "llama"),
             Case((4096, 4096), "layer norm, residual"), Case((64, 70000), "layer norm, residual")]
BENCH_GRID = [(torch.bfloat16, 4096, 2048), (torch.bfloat16, 16384, 4096),
              (torch.float32, 16384, 4096)]
# The first timing table: normkit against PyTorch's own kernels. torch.compile joins with --full: building its
# kernels on a fresh machine is the longest job of a first run (Inductor, ~20 s), and `python -m normkit bench`
# times every peer.
BENCH_IMPLS = ["normkit", "native"]
FULL_BENCH_IMPLS = ["normkit", "native", "compile"]


def bench_impls(full: bool) -> List[str]:
    return FULL_BENCH_IMPLS if full else BENCH_IMPLS


def grid(on_gpu: bool, quick: bool) -> List[Tuple[Case, torch.dtype]]:
    """Every case of this device (--quick: the small shapes, on a GPU plus the first three large ones)."""
    cases = list(_SMALL)
    if on_gpu:
        cases += _GPU_MORE[:3] if quick else _GPU_MORE
    elif not quick:
        cases += _CPU_MORE
    return [(case, dtype) for case in cases for dtype in DTYPES]


def selected(on_gpu: bool, quick: bool, full: bool) -> List[Tuple[int, Case, torch.dtype]]:
    """(seed, case, dtype) to run: the whole grid with --full, else its representative subset
    (`normkit.bench.cases`). The seed is the case's place in the grid: the same inputs either way."""
    cases = grid(on_gpu, quick)
    picked = cases
    if not full:
        device = torch.device("cuda" if on_gpu else "cpu")
        picked = representative(cases, interpret=not on_gpu, multiprocessors=lowlevel.multiprocessors(device))
    return [(seed, case, dtype) for seed, (case, dtype) in enumerate(cases) if (case, dtype) in picked]


def case_inputs(case: Case, dtype: torch.dtype, device: torch.device, seed: int
                ) -> Dict[str, Optional[torch.Tensor]]:
    """x, weight, dy (`make_inputs`), and as the layout asks: bias ~ 0.1·N(0, 1), per-head parameters
    (H, N), residual and dresidual_out ~ N(0, 1), from a generator seeded apart from make_inputs'."""
    layout = "strided" if case.has("strided") else "contiguous"
    x, weight, dy = make_inputs(case.shape, dtype, device, seed, layout=layout,
                                with_weight=not case.has("no weight") and not case.has("per-head"))
    gen = torch.Generator(device=x.device).manual_seed(seed + 7919)
    randn = lambda *size: torch.randn(*size, generator=gen, device=x.device)  # noqa: E731
    params = (case.heads, x.shape[-1]) if case.has("per-head") else (x.shape[-1],)
    if case.has("per-head") and not case.has("no weight"):
        weight = (1.0 + 0.25 * randn(*params)).to(dtype)
    bias = (0.1 * randn(*params)).to(dtype) if case.has("layer norm") else None
    residual = randn(*x.shape).to(dtype) if case.has("residual") else None
    dresidual_out = randn(*x.shape).to(dtype) if case.has("residual") else None
    return dict(x=x, weight=weight, bias=bias, residual=residual, dy=dy, dresidual_out=dresidual_out)


def run_case(case: Case, dtype: torch.dtype, t: Dict[str, Optional[torch.Tensor]]
             ) -> Dict[str, Tuple[str, torch.Tensor]]:
    """Every output of one case, {label: (kind, tensor)} as `float64_errors` takes them.

    The forward op (storing the statistics), the backward op with them and recomputing them, and
    autograd. With a residual the backward's input is residual_out = x + residual, and dx is the
    gradient of x and of the residual alike.
    """
    import normkit

    x, weight, bias, residual, dy = t["x"], t["weight"], t["bias"], t["residual"], t["dy"]
    casting = "llama" if case.has("llama") else "fp32"
    if case.is_rms_norm:
        y, residual_out, rstd = lowlevel.rms_norm_fwd(x, weight, bias, residual, eps=EPS, store_rstd=True,
                                                      weight_offset=case.weight_offset, casting_mode=casting)
        mean, stats = None, {"weight_offset": case.weight_offset}
        backward = lowlevel.rms_norm_bwd
    else:
        y, residual_out, mean, rstd = lowlevel.layer_norm_fwd(x, weight, bias, residual, eps=EPS,
                                                              store_rstd=True, casting_mode=casting)
        stats, backward = {"mean": mean}, lowlevel.layer_norm_bwd
    h = residual_out  # (x itself without a residual)
    gradients = dict(dresidual_out=t["dresidual_out"], has_bias=bias is not None, eps=EPS, casting_mode=casting)
    dx, dweight, dbias, _ = backward(h, weight, dy, rstd=rstd, **stats, **gradients)
    no_stats = {k: v for k, v in stats.items() if k != "mean"}
    dx_r, dweight_r, dbias_r, _ = backward(h, weight, dy, **no_stats, **gradients)
    outputs = {"y": ("y", y), "rstd": ("rstd", rstd), "dx": ("dx", dx), "dx*": ("dx", dx_r)}
    if residual is not None:
        outputs["residual_out"] = ("residual_out", residual_out)
    if weight is not None:
        outputs.update({"dweight": ("dweight", dweight), "dweight*": ("dweight", dweight_r)})
    if bias is not None:
        outputs.update({"dbias": ("dbias", dbias), "dbias*": ("dbias", dbias_r)})
    leaves = {name: t[name].detach().requires_grad_() for name in ("x", "weight", "bias", "residual")
              if t[name] is not None}
    norm, extra = ((normkit.rms_norm, {"weight_offset": case.weight_offset}) if case.is_rms_norm
                   else (normkit.layer_norm, {}))
    got = norm(*(leaves.get(k) for k in ("x", "weight", "bias", "residual")), eps=EPS, prenorm=residual is not None,
               casting_mode="llama" if case.has("llama") else "fp32", **extra)
    got, arriving = (got, (dy, t["dresidual_out"])) if residual is not None else ((got,), (dy,))
    grads = torch.autograd.grad(got, list(leaves.values()), arriving)
    kinds = {"x": "dx", "weight": "dweight", "bias": "dbias", "residual": "dx"}
    outputs.update({f"autograd {kind}": (kind, value.detach()) for kind, value in zip(("y", "residual_out"), got)})
    outputs.update({f"autograd d{name}": (kinds[name], grad) for name, grad in zip(leaves, grads)})
    return outputs


def check(case: Case, dtype: torch.dtype, device: torch.device, seed: int) -> Dict[str, Tuple[float, float]]:
    """{output: (error, tolerance)} of one case (error NaN for an output that is not finite)."""
    t = case_inputs(case, dtype, device, seed)
    outputs = run_case(case, dtype, t)
    errors = float64_errors(t["x"], t["weight"], t["dy"], EPS, outputs, bias=t["bias"], residual=t["residual"],
                            dresidual_out=t["dresidual_out"], is_rms_norm=case.is_rms_norm,
                            weight_offset=case.weight_offset, x_hat_dtype=dtype if case.has("llama") else None)
    return {label: (errors[label], TOLERANCE[value.dtype]) for label, (_, value) in outputs.items()}


def warm_case(case: Case, dtype: torch.dtype, seed: int, device: str = "cuda") -> None:
    """Run one case's kernels once, nothing compared: a precompile worker's job."""
    run_case(case, dtype, case_inputs(case, dtype, torch.device(device), seed))
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def verdict(results: Dict[str, Tuple[float, float]]) -> bool:
    return bool(results) and all(err <= tol for err, tol in results.values())  # NaN fails


# the outputs each column shows (the worst of them); every output counts in the verdict
_SHOWN = {"y": ("y", "residual_out"), "dweight": ("dweight", "dbias"), "dweight*": ("dweight*", "dbias*")}


def _cell(results: Dict[str, Tuple[float, float]], column: str) -> str:
    if column == "autograd":
        picked = [v for k, v in results.items() if k.startswith("autograd")]
    else:
        picked = [results[k] for k in _SHOWN.get(column, (column,)) if k in results]
    if not picked:
        return "—"
    err, tol = max(picked, key=lambda v: (math.isnan(v[0]), v[0] / v[1]))
    return output.fmt_err(err) + ("" if err <= tol else " !")


def verify(cases: List[Tuple[int, Case, torch.dtype]], device: torch.device,
           ready: Optional[Callable[[int], None]] = None) -> List[Dict]:
    """One row per (seed, case, dtype): errors, verdict, table cells (a crash fails its case only).
    ready(i), when given, returns once the i-th case may run (its kernels compiled elsewhere)."""
    rows = []
    for i, (seed, case, dtype) in enumerate(output.progress(cases, "verify")):
        if ready is not None:
            ready(i)
        row = {"case": case.label, "shape": list(case.shape), "layout": case.layout,
               "dtype": output.DTYPE_NAMES[str(dtype)], "tolerance": TOLERANCE[dtype]}
        try:
            results = check(case, dtype, device, seed)
            row.update(errors={k: e for k, (e, _) in results.items()}, passed=verdict(results),
                       cells=[_cell(results, c) for c in COLUMNS])
        except Exception as exc:  # a crash is a failure of that case, not of the report
            row.update(errors={}, passed=False, cells=["—"] * len(COLUMNS),
                       error=f"{type(exc).__name__}: {exc}")
        rows.append(row)
    return rows


def timing_summary(results: List[Dict]) -> str:
    """normkit against the peers timed (native, and compile with --full) per shape: µs, % copy, and
    normkit's speed-up."""
    impls = [name for name in FULL_BENCH_IMPLS if any(r["impl"] == name for r in results)]
    peers = [name for name in impls if name != "normkit"]
    table = []
    for label in dict.fromkeys(output.shape_label(r) for r in results):
        by_impl = {r["impl"]: r for r in results if output.shape_label(r) == label}
        for key in ("fwd", "bwd"):
            ours = by_impl.get("normkit", {}).get(f"{key}_s")
            cells = []
            for name in impls:
                r = by_impl.get(name, {})
                t = r.get(f"{key}_s")
                cells.append("fails" if r.get("error") else
                             f"{output.fmt_us(t)} ({output.fmt_pct(r.get(f'{key}_pct'))})")
            times = [by_impl[n][f"{key}_s"] for n in peers if by_impl.get(n, {}).get(f"{key}_s")]
            speedup = f"{min(times) / ours:.2f}×" if ours and times else "—"
            table.append([label, key, *cells, speedup])
    headers = ("dtype M×N", "pass", *(f"{name} µs (% copy)" for name in impls),
               "normkit speed-up vs " + ("best peer" if len(peers) > 1 else ", ".join(peers) or "—"))
    return output.text_table(headers, table)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m normkit verify",
        description="Check normkit's kernels (forward, backward, autograd) on a grid of shapes, dtypes and "
                    "layouts against a float64 reference: relative error ‖got − ref‖ / ‖ref‖ per output "
                    "(dx: relative to the larger of ‖dx_ref‖ and ‖rstd·dy·weight‖), within a tolerance per "
                    "dtype. By default a representative subset of the grid: every kernel path, feature and "
                    "dtype at least once. On a GPU a first timing table follows. Exit status 0 iff every "
                    "case passes.")
    p.add_argument("--full", action="store_true",
                   help="every case of the grid, not the representative subset, and torch.compile in the timing table")
    p.add_argument("--quick", action="store_true", help="only the small shapes (on a GPU, plus the first three large ones)")
    p.add_argument("--no-bench", action="store_true", help="skip the timing table that follows on a GPU")
    p.add_argument("--jobs", type=_jobs, metavar="N",
                   help=f"on a GPU, compile the kernels first in N worker processes (default: min("
                        f"{precompile.MAX_WORKERS}, CPU count); 0: none, each compiles on first use)")
    p.add_argument("--json", metavar="PATH", type=output_path("--json"),
                   help="write every case's errors, verdict and timings as JSON")
    return p


def _jobs(text: str) -> int:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"--jobs must be a whole number ≥ 0 (0: no worker processes), got {text!r}")
    return int(text)


def _backend(on_gpu: bool) -> Optional[str]:
    """Where the kernels run, or None when they cannot run here at all."""
    if on_gpu and lowlevel.backend("cuda") == "triton":
        return f"Triton on {torch.cuda.get_device_name()}"
    if not on_gpu and lowlevel.backend("cpu") == "interpreter":
        return "Triton interpreter on CPU (TRITON_INTERPRET=1): verification only, no timing"
    return None


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    started = time.perf_counter()
    on_gpu = torch.cuda.is_available()
    backend = _backend(on_gpu)
    info = lowlevel.runtime_info()
    if backend is None:
        way = "compiled" if on_gpu else "interpreter"
        why = ("triton is not installed" if info["triton"] is None else
               f"Triton {info['triton']} is older than {'.'.join(map(str, _runtime.MIN_TRITON[way]))}"
               if not _runtime.triton_supported(way) else
               "no GPU, and Triton's interpreter is off (TRITON_INTERPRET=1 must be set before the first "
               "launch; `python -m normkit` does that)")
        print(f"normkit verify: the Triton kernels cannot run here: {why}. Nothing verified.", file=sys.stderr)
        return 1
    print(f"normkit {info['normkit']} verification · {backend} · torch {info['torch']} · triton {info['triton']}")
    cases = selected(on_gpu, args.quick, args.full)
    total = len(grid(on_gpu, args.quick))
    print(f"{len(cases)} of {total} cases: " + ("all (--full)" if len(cases) == total else
          "a representative subset, every kernel path, feature and dtype at least once (--full: all)"))
    report = {"backend": backend, **info, "measure": "relative error vs float64, ‖got − ref‖ / ‖ref‖",
              "grid_cases": total}
    pool, first = _precompile(cases, args) if on_gpu else (None, 0)
    print("Each cell: relative error vs a float64 reference, ‖got − ref‖ / ‖ref‖; a case passes when "
          "every error is finite and ≤ its dtype's tolerance (tol).")
    started_cases = time.perf_counter()
    rows = verify(cases, torch.device("cuda" if on_gpu else "cpu"),
                  ready=None if pool is None else lambda i: pool.wait(first + i))
    if pool is not None:  # every worker gone before anything is timed
        report["precompile"] = {"workers": pool.workers, "jobs": pool.jobs, "note": pool.close(),
                                "cases_seconds": time.perf_counter() - started_cases}
        if pool.note:
            print(f"precompile: {pool.note}")
    table = [[r["case"], r["dtype"], *r["cells"], f"{r['tolerance']:.0e}",
              "PASS" if r["passed"] else "FAIL"] for r in rows]
    print(output.text_table(("case", "dtype", *COLUMNS, "tol", "result"), table))
    print("* statistics recomputed in the kernel; y: with residual_out; dweight: with dbias; autograd: the worst "
          "of its outputs and gradients; '!' = above tolerance or not finite")
    for r in rows:
        if r.get("error"):
            print(f"FAIL {r['case']} {r['dtype']}: {r['error']}")
    passed = all(r["passed"] for r in rows)
    report["cases"] = [{k: v for k, v in r.items() if k != "cells"} for r in rows]
    if on_gpu and not args.no_bench:
        passed = _bench(report, bench_impls(args.full)) and passed
    report["passed"] = passed
    failures = sum(not r["passed"] for r in rows)
    print(f"\n{'PASS' if passed else 'FAIL'}: {len(rows) - failures}/{len(rows)} cases pass "
          f"({time.perf_counter() - started:.1f} s)")
    if args.json:
        output.write_json(report, args.json)
    return 0 if passed else 1


def _precompile(cases: List[Tuple[int, Case, torch.dtype]], args: argparse.Namespace
                ) -> Tuple[Optional[precompile.Pool], int]:
    """Start compiling the kernels of the cases (and of the timing table) in worker processes;
    returns the pool (None without workers) and the job index of the first case."""
    from .bench import cli

    # the timing table's first: torch.compile's are the longest to build, and workers take jobs in order
    jobs = [] if args.no_bench else [(cli.warm, (case, [n for n in bench_impls(args.full) if n != "native"]))
                                     for case in BENCH_GRID]
    first = len(jobs)
    jobs += [(warm_case, (case, dtype, seed)) for seed, case, dtype in cases]
    workers = precompile.workers(args.jobs, len(jobs))
    if not workers:
        return None, first
    print(f"Compiling the kernels in {workers} worker processes ({len(jobs)} jobs; --jobs 0: none); each case "
          "runs here once its kernels are built")
    return precompile.Pool(jobs, workers), first


def _bench(report: Dict, impls: List[str]) -> bool:
    """The first timing table; False when normkit itself fails to run in it."""
    from .bench import cli

    results, env = cli.run(BENCH_GRID, impls, torch.device("cuda"))
    print(f"\nTiming: GPU µs per call, median of CUDA-graph replays, rotating among input sets where one "
          f"call's data would stay in the L2 ({env['l2_bytes'] / 2**20:.0f} MiB, read from the device); "
          f"% copy = minimum bytes moved / time / copy bandwidth ({env['copy_gbps']:.0f} GB/s, measured now)")
    print(timing_summary(results))
    if "compile" not in impls:
        print("torch.compile, Liger and quack side by side: python -m normkit bench (benchmarks/README.md); "
              "--full adds torch.compile here")
    report["bench"] = {"environment": env, "results": results}
    broken = [r for r in results if r["impl"] == "normkit" and r.get("error")]
    for r in broken:
        print(f"FAIL timing {output.shape_label(r)}: {r['error']}")
    return not broken
