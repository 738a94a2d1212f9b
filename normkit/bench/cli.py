"""`python -m normkit bench`: normkit against its peers, GPU time and % of copy bandwidth.

For every shape and implementation: forward and backward GPU time from CUDA-graph replays
(`normkit.bench.timing`), % of the copy bandwidth measured in the same run, eager wall time per
call (fwd, and fwd + torch.autograd.grad), and the relative error against float64.

    python -m normkit bench                                   # the ANCHORS.md grid, every peer found
    python -m normkit bench --shapes 4096x2048 --dtypes bf16,fp32 --impls normkit,compile
    python -m normkit bench --markdown --json bench.json --plot bench.png
    python -m normkit bench --dry-run                         # no GPU: checks the plumbing only
"""

import argparse
import contextlib
import importlib.metadata
import json
import sys
from typing import Dict, List, Optional, Sequence, Tuple

import torch

from . import output, peers, timing
from .inputs import float64_errors, make_inputs

EPS = 1e-6
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32,
          "fp64": torch.float64}
Case = Tuple[torch.dtype, int, int]  # (dtype, M, N)

# ANCHORS.md's RMSNorm backward table, in its order.
DEFAULT_GRID: List[Case] = [
    (torch.float32, 16384, 4096),
    *((torch.bfloat16, 16384, n) for n in (1024, 2048, 4096, 8192)),
    *((torch.bfloat16, m, n) for m, n in ((4096, 16384), (4096, 2048), (32768, 2048),
                                          (32768, 8192), (131072, 8192), (524288, 128),
                                          (8192, 32768), (4096, 65536), (2048, 131072))),
    (torch.float16, 16384, 4096),
]
DRY_RUN_GRID: List[Case] = [(torch.float32, 64, 256)]
DRY_RUN_IMPLS = ("normkit", "native")  # compile would spend most of a dry run compiling C++


def parse_shapes(text: str) -> List[Tuple[int, int]]:
    """'4096x2048,16384x4096' → [(4096, 2048), (16384, 4096)] (× or x, spaces allowed)."""
    shapes = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        parts = item.lower().replace("×", "x").split("x")
        if len(parts) != 2 or not all(p.strip().isdigit() and int(p) > 0 for p in parts):
            raise argparse.ArgumentTypeError(f"shape must look like 4096x2048, got {item!r}")
        shapes.append((int(parts[0]), int(parts[1])))
    if not shapes:
        raise argparse.ArgumentTypeError("no shape given")
    return shapes


def parse_dtypes(text: str) -> List[torch.dtype]:
    names = [s.strip().lower() for s in text.split(",") if s.strip()]
    unknown = [n for n in names if n not in DTYPES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"dtypes must be among {', '.join(DTYPES)}, got {text!r}")
    return [DTYPES[n] for n in names]


def parse_impls(text: str) -> List[str]:
    names = [s.strip().lower() for s in text.split(",") if s.strip()]
    unknown = [n for n in names if n not in peers.NAMES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"impls must be among {', '.join(peers.NAMES)}, got {text!r}")
    return names


def build_grid(shapes: Optional[List[Tuple[int, int]]], dtypes: Optional[List[torch.dtype]],
               default: Sequence[Case] = DEFAULT_GRID) -> List[Case]:
    """--shapes × --dtypes (bf16 when no dtype given); else the default grid, filtered by --dtypes."""
    if shapes:
        return [(dtype, m, n) for m, n in shapes for dtype in (dtypes or [torch.bfloat16])]
    return [case for case in default if dtypes is None or case[0] in dtypes]


def load_impls(names: Sequence[str], quiet: bool = False) -> List[peers.Impl]:
    """The implementations that import; a note on stderr for each that does not."""
    impls = []
    for name in names:
        try:
            impls.append(peers.load(name))
        except Exception as exc:  # optional peers: ImportError, or a broken install
            if not quiet:
                print(f"bench: skipping {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
    return impls


def _device_time(calls) -> Tuple[Optional[float], str]:
    """GPU seconds per call: CUDA-graph replays, or do_bench when the capture fails."""
    try:
        return timing.graph_time(calls), "graph"
    except Exception:  # a peer that cannot be captured (host sync, unsupported op)
        torch.cuda.synchronize()
        return timing.do_bench_time(calls[0]), "do_bench"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def measure(impl: peers.Impl, case: Case, inputs, device: torch.device, copy_bps: Optional[float],
            dry_run: bool) -> Dict:
    """One row of results: errors, GPU times (not in a dry run), eager wall times."""
    dtype, m, n = case
    row: Dict = {"impl": impl.name, "dtype": str(dtype), "m": m, "n": n}
    x, weight, dy = inputs[0]
    with torch.no_grad():
        y = impl.apply(x, weight, EPS)
    dx, dweight = impl.backward(x, weight, dy, EPS)()[:2]
    errors = float64_errors(x, weight, dy, EPS, {"y": ("y", y), "dx": ("dx", dx),
                                                  "dweight": ("dweight", dweight)})
    row.update({f"err_{k}": v for k, v in errors.items()})
    del y, dx, dweight
    if not dry_run:
        for key in ("fwd", "bwd"):
            if key == "fwd":
                calls = [lambda x=x, w=w: _no_grad(impl.apply, x, w) for x, w, _ in inputs]
            else:
                calls = [impl.backward(x, w, dy, EPS) for x, w, dy in inputs]
            seconds, method = _device_time(calls)
            del calls
            nbytes = timing.min_bytes(key, m, n, x.element_size())
            row.update({f"{key}_s": seconds, f"{key}_method": method,
                        f"{key}_pct": timing.percent_of_copy(nbytes, seconds, copy_bps)})
    x_leaf, w_leaf = x.detach().requires_grad_(), weight.detach().requires_grad_()
    few = {"min_seconds": 0.0, "min_calls": 2} if dry_run else {}
    row["wall_fwd_s"] = timing.wall_time(lambda: impl.apply(x_leaf, w_leaf, EPS), device, **few)
    row["wall_fwd_bwd_s"] = timing.wall_time(
        lambda: torch.autograd.grad(impl.apply(x_leaf, w_leaf, EPS), (x_leaf, w_leaf), dy),
        device, **few)
    return row


def _no_grad(apply, x, weight):
    with torch.no_grad():
        return apply(x, weight, EPS)


def run(grid: Sequence[Case], impl_names: Sequence[str], device: torch.device,
        dry_run: bool = False, copy_bps: Optional[float] = None, quiet: bool = False
        ) -> Tuple[List[Dict], Dict]:
    """Measure every case × implementation; returns (result rows, environment)."""
    impls = load_impls(impl_names, quiet)
    env = environment(device, impls, dry_run)
    if not dry_run and copy_bps is None:
        copy_bps = timing.copy_bandwidth(device)
    env["copy_gbps"] = copy_bps / 1e9 if copy_bps else None
    stream = torch.cuda.Stream(device) if device.type == "cuda" else None
    results = []
    steps = [(case, impl) for case in grid for impl in impls]
    inputs, current = None, None
    for case, impl in output.progress(steps, "bench"):
        if case != current:  # new inputs per shape; free the last shape's first
            inputs = None
            if device.type == "cuda":
                torch.cuda.empty_cache()
            inputs, current = _inputs(case, device, dry_run), case
        try:
            with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
                results.append(measure(impl, case, inputs, device, copy_bps, dry_run))
        except Exception as exc:  # one peer failing (Liger at N > 65536) must not stop the run
            results.append({"impl": impl.name, "dtype": str(case[0]), "m": case[1], "n": case[2],
                            "error": _first_line(exc)})
    return results, env


def _inputs(case: Case, device: torch.device, dry_run: bool):
    dtype, m, n = case
    nbytes = timing.min_bytes("fwd", m, n, torch.empty((), dtype=dtype).element_size())
    count = 1 if dry_run else timing.input_sets_needed(nbytes)
    sets = [make_inputs((m, n), dtype, device, seed=i) for i in range(count)]
    if device.type == "cuda":
        torch.cuda.synchronize(device)  # made on the default stream, used on the bench stream
    return sets


def environment(device: torch.device, impls: Sequence[peers.Impl], dry_run: bool) -> Dict:
    import triton

    env = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU",
           "torch": torch.__version__, "triton": triton.__version__, "dry_run": dry_run,
           "impls": [i.name for i in impls], "notes": {i.name: i.note for i in impls}, "peers": {}}
    for name, dist in (("liger", "liger-kernel"), ("quack", "quack-kernels")):
        if name in env["impls"]:
            try:
                env["peers"][name] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                env["peers"][name] = "?"
    return env


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m normkit bench", description=__doc__.split("\n")[0])
    p.add_argument("--shapes", type=parse_shapes, help="e.g. 4096x2048,16384x4096")
    p.add_argument("--dtypes", type=parse_dtypes, help="among bf16,fp16,fp32,fp64")
    p.add_argument("--impls", type=parse_impls,
                   help="among " + ",".join(peers.NAMES) + " (default: all that import; "
                        "a dry run: " + ",".join(DRY_RUN_IMPLS) + ")")
    p.add_argument("--json", metavar="PATH", help="write the result rows and environment as JSON")
    p.add_argument("--plot", metavar="PATH", help="PNG of % copy vs N (needs matplotlib)")
    p.add_argument("--markdown", action="store_true", help="also print tables for BENCHMARKS.md")
    p.add_argument("--dry-run", action="store_true",
                   help="tiny shape, wall time only: checks the plumbing, not a GPU measurement")
    return p


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    on_gpu = torch.cuda.is_available()
    if not on_gpu and not args.dry_run:
        print("normkit bench: timing needs a CUDA GPU (none here); nothing measured.\n"
              "Use --dry-run to check the benchmark's plumbing with wall time on a tiny shape.")
        return 0
    device = torch.device("cuda" if on_gpu else "cpu")
    grid = build_grid(args.shapes, args.dtypes, DRY_RUN_GRID if args.dry_run else DEFAULT_GRID)
    impls = args.impls or list(DRY_RUN_IMPLS if args.dry_run else peers.NAMES)
    results, env = run(grid, impls, device, dry_run=args.dry_run)
    if args.dry_run:
        print("DRY RUN: wall time on a tiny shape; not a GPU measurement.")
    else:
        print(f"{env['device']} · copy bandwidth {env['copy_gbps']:.0f} GB/s (bytes read + written)")
    print(output.text_table(output.BENCH_HEADERS, output.bench_rows(results)))
    if any(r.get("fwd_method") == "do_bench" or r.get("bwd_method") == "do_bench" for r in results):
        print("† graph capture failed: triton do_bench time (L2 flushed between calls)")
    if args.markdown:
        print("\n" + output.render_markdown(results, env))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"environment": env, "results": results}, f, indent=1)
    if args.plot:
        problem = output.plot(results, args.plot)
        if problem:
            print(f"normkit bench: no plot written: {problem}", file=sys.stderr)
    failed = [r for r in results if r["impl"] == "normkit" and r.get("error")]
    for r in failed:
        print(f"normkit failed on {output.shape_label(r)}: {r['error']}", file=sys.stderr)
    return 1 if failed else 0
