"""`python -m normkit bench`: normkit against its peers, GPU time and % of copy bandwidth.

For every family (RMSNorm, fused residual add + RMSNorm, LayerNorm, fused residual add + LayerNorm:
`normkit.bench.families`),
shape and implementation: forward and backward GPU time from CUDA-graph replays, median with
p20 and p80 (`normkit.bench.timing`), % of the copy bandwidth measured in the same run, eager wall
time per call (fwd, and fwd + torch.autograd.grad), and the relative error against float64.

    python -m normkit bench                                   # the default grid, every peer found
    python -m normkit bench --family all                      # RMSNorm, LayerNorm, each fused or not
    python -m normkit bench --shapes 4096x2048 --dtypes bf16,fp32 --impls normkit,compile
    python -m normkit bench --markdown --json bench.json --csv bench.csv --plot bench.png
    python -m normkit bench --dry-run                         # no GPU: checks the plumbing only
    python -m normkit bench --eager                           # host + device µs per call, eager loop
    python -m normkit bench --model llama                     # training steps of a model: `normkit.bench.model`

--eager times an eager loop instead (`normkit.bench.eager`): per-call wall time of the forward and
forward + backward at M = 1 … 16384, the host's Python and launches included.
"""

import argparse
import contextlib
import importlib.metadata
import sys
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

import torch

from .. import lowlevel
from . import eager, output, peers, timing
from . import model_cli
from . import options
from .options import distinct_outputs, output_path
from .families import FAMILIES, Case, Family, Sample, errors, make_sample

EPS = 1e-6
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32,
          "fp64": torch.float64}

# RMSNorm: the shapes of the reference peer measurements (torch.compile, quack, Liger, native on an
# H200): LLaMA-like widths at 16 K rows, small M, huge M with N = 128 (QK-norm), very wide rows.
DEFAULT_GRID: List[Case] = [
    (torch.float32, 16384, 4096),
    *((torch.bfloat16, 16384, n) for n in (1024, 2048, 4096, 8192)),
    *((torch.bfloat16, m, n) for m, n in ((4096, 16384), (4096, 2048), (32768, 2048),
                                          (32768, 8192), (131072, 8192), (524288, 128),
                                          (8192, 32768), (4096, 65536), (2048, 131072))),
    (torch.float16, 16384, 4096),
]
# Wide rows, 128-512 MiB per tensor: every family is measured where N > 8192 too.
WIDE_ROWS = ((4096, 16384), (8192, 32768), (4096, 65536), (2048, 131072))
# Every family also at two fp32 wide rows: the backward splits them into parts of their own (4-byte
# elements), a path that once ran 13-17× slow unnoticed because no grid shape had it.
FP32_WIDE_ROWS: List[Case] = [(torch.float32, 4096, 16384), (torch.float32, 4096, 65536)]
DEFAULT_GRIDS: Dict[str, List[Case]] = {
    "rms": [*DEFAULT_GRID, *FP32_WIDE_ROWS],
    "fused_add": [*((torch.bfloat16, m, n) for m, n in ((16384, 2048), (16384, 4096), (16384, 8192),
                                                        (4096, 2048), *WIDE_ROWS)), *FP32_WIDE_ROWS],
    "layer_norm": [*((torch.bfloat16, m, n) for m, n in ((16384, 1024), (16384, 4096),
                                                         (16384, 8192), (4096, 2048), *WIDE_ROWS)),
                   (torch.float32, 16384, 4096), *FP32_WIDE_ROWS],
    # the LayerNorm grid's ≥ 64 MB bf16 shapes and the fp32 wide rows
    "fused_layer_norm": [*((torch.bfloat16, m, n) for m, n in ((16384, 4096), (16384, 8192), *WIDE_ROWS)),
                         *FP32_WIDE_ROWS],
    # Qwen3-Next / Qwen3.5 gate rows of one head (128 values), then hidden-size rows; every tensor ≥ 64 MB
    "gated": [*((torch.bfloat16, m, n) for m, n in ((262144, 128), (524288, 128), (16384, 2048), (16384, 4096),
                                                    (8192, 8192), (4096, 16384))), (torch.float32, 131072, 128)],
}
DRY_RUN_GRID: List[Case] = [(torch.float32, 64, 256)]
DRY_RUN_IMPLS = ("normkit", "native")  # compile would spend most of a dry run compiling C++


def parse_shapes(text: str) -> List[Tuple[int, int]]:
    """'4096x2048,16384x4096' → [(4096, 2048), (16384, 4096)] (× or x, spaces allowed; each shape once)."""
    shapes = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        parts = item.lower().replace("×", "x").split("x")
        if len(parts) != 2 or not all(p.strip().isdigit() and int(p) > 0 for p in parts):
            raise argparse.ArgumentTypeError(f"shape must look like 4096x2048, got {item!r}")
        shapes.append((int(parts[0]), int(parts[1])))
    if not shapes:
        raise argparse.ArgumentTypeError("no shape given")
    return list(dict.fromkeys(shapes))


def _parse_names(text: str, allowed: Sequence[str], what: str) -> List[str]:
    """'a, B, a' → ['a', 'b'], each among `allowed`, each once."""
    names = [s.strip().lower() for s in text.split(",") if s.strip()]
    if not names or any(n not in allowed for n in names):
        raise argparse.ArgumentTypeError(f"{what} must be among {', '.join(allowed)}, got {text!r}")
    return list(dict.fromkeys(names))


def parse_dtypes(text: str) -> List[torch.dtype]:
    return [DTYPES[n] for n in _parse_names(text, list(DTYPES), "dtypes")]


def parse_impls(text: str) -> List[str]:
    return _parse_names(text, peers.NAMES, "impls")


def parse_families(text: str) -> List[str]:
    """'fused_add,rms' → ['fused_add', 'rms']; 'all' → every family."""
    names = _parse_names(text, [*FAMILIES, "all"], "families")
    return list(FAMILIES) if "all" in names else list(dict.fromkeys(names))


def build_grid(shapes: Optional[List[Tuple[int, int]]], dtypes: Optional[List[torch.dtype]],
               default: Sequence[Case] = DEFAULT_GRID) -> List[Case]:
    """--shapes × --dtypes (bf16 when no dtype given); else the default grid, filtered by --dtypes."""
    if shapes:
        return [(dtype, m, n) for m, n in shapes for dtype in (dtypes or [torch.bfloat16])]
    return [case for case in default if dtypes is None or case[0] in dtypes]


def build_grids(families: Sequence[str], shapes: Optional[List[Tuple[int, int]]],
                dtypes: Optional[List[torch.dtype]], dry_run: bool = False,
                default: Optional[Sequence[Case]] = None) -> Dict[str, List[Case]]:
    """{family: its cases}: `build_grid` over each family's default grid, or `default` for every
    family (DRY_RUN_GRID in a dry run)."""
    return {family: build_grid(shapes, dtypes, DRY_RUN_GRID if dry_run else default or DEFAULT_GRIDS[family])
            for family in families}


def load_impls(names: Sequence[str], family: str = "rms", quiet: bool = False) -> List[peers.Impl]:
    """The implementations of `family` that import; a note on stderr for each that does not."""
    impls = []
    for name in names:
        try:
            impls.append(FAMILIES[family].load(name))
        except Exception as exc:  # ImportError, a broken install, LookupError: no such peer
            if not quiet:
                print(f"bench: skipping {name} ({family}): {type(exc).__name__}: {exc}",
                      file=sys.stderr)
    return impls


def _device_time(calls) -> Tuple[Tuple[float, float, float], str]:
    """(p20, median, p80) GPU seconds per call: CUDA-graph replays, or do_bench when the capture fails."""
    try:
        return timing.spread(timing.graph_times(calls)), "graph"
    except Exception:  # a peer that cannot be captured (host sync, unsupported op)
        torch.cuda.synchronize()
        return timing.do_bench_spread(calls[0]), "do_bench"


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def measure(impl: peers.Impl, family: Family, case: Case, samples: Sequence[Sample],
            device: torch.device, copy_bps: Optional[float], dry_run: bool) -> Dict:
    """One row of results: errors, GPU times (not in a dry run), eager wall times."""
    dtype, m, n = case
    row = result_row(family.name, impl.name, case)
    first = samples[0]
    with torch.no_grad():
        outputs = impl.apply(*first.inputs, EPS)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    input_grads = impl.backward(first.inputs, first.grads, EPS)()
    row.update({f"err_{k}": v for k, v in errors(family, first, outputs, input_grads, EPS).items()})
    del outputs, input_grads
    if not dry_run:
        for key in ("fwd", "bwd"):
            if key == "fwd":
                calls = [lambda s=s: _no_grad(impl.apply, s.inputs) for s in samples]
            else:
                calls = [impl.backward(s.inputs, s.grads, EPS) for s in samples]
            (p20, seconds, p80), method = _device_time(calls)
            del calls
            nbytes = timing.min_bytes(key, m, n, first.inputs[0].element_size(), family.name)
            row.update({f"{key}_s": seconds, f"{key}_p20_s": p20, f"{key}_p80_s": p80, f"{key}_method": method,
                        f"{key}_pct": timing.percent_of_copy(nbytes, seconds, copy_bps)})
    leaves = [t.detach().requires_grad_() for t in first.inputs]
    few = {"min_seconds": 0.0, "min_calls": 2} if dry_run else {}
    row["wall_fwd_s"] = timing.wall_time(lambda: impl.apply(*leaves, EPS), device, **few)
    row["wall_fwd_bwd_s"] = timing.wall_time(
        lambda: torch.autograd.grad(impl.apply(*leaves, EPS), leaves, first.grads), device, **few)
    return row


def result_row(family: str, impl: str, case: Case) -> Dict:
    dtype, m, n = case
    return {"family": family, "impl": impl, "dtype": str(dtype), "m": m, "n": n}


def _no_grad(apply, inputs):
    with torch.no_grad():
        return apply(*inputs, EPS)


def run(grid: Union[Sequence[Case], Mapping[str, Sequence[Case]]], impl_names: Sequence[str],
        device: torch.device, dry_run: bool = False, copy_bps: Optional[float] = None,
        quiet: bool = False) -> Tuple[List[Dict], Dict]:
    """Measure every case × implementation; returns (result rows, environment).

    `grid` is a list of RMSNorm cases, or {family: its cases} (`build_grids`).
    """
    grids = grid if isinstance(grid, Mapping) else {"rms": grid}
    impls = {family: load_impls(impl_names, family, quiet) for family in grids}
    env = environment(device, impls, dry_run)
    if not dry_run and copy_bps is None:
        copy_bps = timing.copy_bandwidth(device)
    env["copy_gbps"] = copy_bps / 1e9 if copy_bps else None
    stream = torch.cuda.Stream(device) if device.type == "cuda" else None
    results = []
    steps = [(FAMILIES[family], case, impl) for family, cases in grids.items() for case in cases
             for impl in impls[family]]
    samples, current = None, None
    for family, case, impl in output.progress(steps, "bench"):
        if (family, case) != current:  # new inputs per shape; free the last shape's first
            samples = None
            if device.type == "cuda":
                torch.cuda.empty_cache()
            samples, current = _samples(family, case, device, dry_run), (family, case)
        try:
            with torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext():
                results.append(measure(impl, family, case, samples, device, copy_bps, dry_run))
        except Exception as exc:  # one peer failing (Liger at N > 65536) must not stop the run
            results.append({**result_row(family.name, impl.name, case), "error": first_line(exc)})
    return results, env


def warm(case: Case, impl_names: Sequence[str], family: str = "rms", device: str = "cuda") -> None:
    """Run every implementation once on one CUDA case, nothing timed: compiles what a timed run of
    it would (into Triton's and Inductor's on-disk caches). A precompile worker's job
    (`normkit.bench.precompile`)."""
    device = torch.device(device)
    sample = make_sample(FAMILIES[family], case, device)
    for impl in load_impls(impl_names, family, quiet=True):
        _no_grad(impl.apply, sample.inputs)
        impl.backward(sample.inputs, sample.grads, EPS)()
        leaves = [t.detach().requires_grad_() for t in sample.inputs]
        torch.autograd.grad(impl.apply(*leaves, EPS), leaves, sample.grads)
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _samples(family: Family, case: Case, device: torch.device, dry_run: bool) -> List[Sample]:
    dtype, m, n = case
    nbytes = timing.min_bytes("fwd", m, n, torch.empty((), dtype=dtype).element_size(), family.name)
    count = 1 if dry_run else timing.input_sets_needed(nbytes, timing.l2_bytes(device))
    sets = [make_sample(family, case, device, seed=i) for i in range(count)]
    if device.type == "cuda":
        torch.cuda.synchronize(device)  # made on the default stream, used on the bench stream
    return sets


def environment(device: torch.device, impls: Mapping[str, Sequence[peers.Impl]], dry_run: bool
                ) -> Dict:
    """Device, versions, and the implementations loaded per family (with their notes)."""
    info = lowlevel.runtime_info()
    names = list(dict.fromkeys(i.name for family_impls in impls.values() for i in family_impls))
    env = {"device": torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU",
           "normkit": info["normkit"], "torch": info["torch"], "triton": info["triton"], "dry_run": dry_run,
           "l2_bytes": timing.l2_bytes(device) if device.type == "cuda" else None,
           "families": list(impls), "impls": names,
           "notes": {family: {i.name: i.note for i in family_impls}
                     for family, family_impls in impls.items()}, "peers": {}}
    for name, dist in (("liger", "liger-kernel"), ("quack", "quack-kernels")):
        if name in env["impls"]:
            try:
                env["peers"][name] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                env["peers"][name] = "?"
    return env


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m normkit bench",
        description="normkit against its peers on a CUDA GPU: forward and backward GPU µs per call (CUDA-graph "
                    "replays, median with p20–p80), % of the copy bandwidth measured in the same run, eager "
                    "wall µs per call, and the relative error vs float64.")
    p.add_argument("--family", type=parse_families, default="rms",
                   help="among " + ",".join(FAMILIES) + ", or all (default: rms)")
    p.add_argument("--shapes", type=parse_shapes,
                   help="M×N shapes instead of the default grid, for every family, e.g. 4096x2048,16384x4096")
    p.add_argument("--dtypes", type=parse_dtypes,
                   help="among bf16,fp16,fp32,fp64: filters the default grid (with --shapes: default bf16)")
    p.add_argument("--impls", type=parse_impls,
                   help="among " + ",".join(peers.NAMES) + " (default: all that import; "
                        "a dry run: " + ",".join(DRY_RUN_IMPLS) + ")")
    p.add_argument("--json", metavar="PATH", type=output_path("--json"),
                   help="write the result rows and environment as JSON")
    p.add_argument("--csv", metavar="PATH", type=output_path("--csv"),
                   help="write the result rows as CSV, one per shape and implementation")
    p.add_argument("--plot", metavar="PATH", type=output_path("--plot"),
                   help="PNG of %% copy vs N, per family (needs matplotlib)")
    p.add_argument("--markdown", action="store_true", help="also print the tables as markdown")
    p.add_argument("--dry-run", action="store_true",
                   help="tiny shape, wall time only: checks the plumbing, not a GPU measurement")
    p.add_argument("--eager", action="store_true",
                   help="instead: wall µs per call of fwd (no grad), fwd and fwd + bwd in an eager loop, host "
                        "included; default shapes M = 1, 8, 1024, 16384 × N = 4096 bf16")
    p.add_argument("--model", choices=list(model_cli.MODELS),
                   help="instead: training steps of a config-sized Hugging Face model, stock vs normkit.patch, eager "
                        "and compiled, with options of its own (`bench --model llama --help`)")
    p.add_argument("--calls", type=options.whole_number("--calls"), metavar="K",
                   help=f"--eager: calls per timed loop (default {eager.CALLS}; a dry run {eager.DRY_RUN['calls']})")
    p.add_argument("--repeats", type=options.whole_number("--repeats"), metavar="R",
                   help=f"--eager: timed loops (default {eager.REPEATS}; a dry run {eager.DRY_RUN['repeats']})")
    return p


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = parser()
    # --model runs normkit.bench.model, whose options are its own; this parser only sees abbreviations of it
    if any(a == "--model" or a.startswith("--model=") for a in argv) or p.parse_known_args(argv)[0].model:
        return model_cli.main(argv)
    args = p.parse_args(argv)
    if not args.eager and (args.calls or args.repeats):
        p.error("--calls and --repeats size the --eager loop; add --eager")
    if args.eager and args.plot:
        p.error("--plot draws % of copy bandwidth, which --eager does not measure")
    distinct_outputs(p, args, ("json", "csv", "plot"))
    on_gpu = torch.cuda.is_available()
    if not on_gpu and not args.dry_run:
        print("normkit bench: timing needs a CUDA GPU (none here); nothing measured.\n"
              "Use --dry-run to check the benchmark's plumbing with wall time on a tiny shape.", file=sys.stderr)
        return 1
    device = torch.device("cuda" if on_gpu else "cpu")
    impls = args.impls or list(DRY_RUN_IMPLS if args.dry_run else peers.NAMES)
    if args.eager:
        return _eager_main(args, device, impls)
    grids = build_grids(args.family, args.shapes, args.dtypes, args.dry_run)
    results, env = run(grids, impls, device, dry_run=args.dry_run)
    if args.dry_run:
        print("DRY RUN: wall time on a tiny shape; not a GPU measurement.")
    else:
        print(f"{env['device']} · L2 {env['l2_bytes'] / 2**20:.0f} MiB · copy bandwidth "
              f"{env['copy_gbps']:.0f} GB/s (bytes read + written)")
    print(output.BENCH_LEGEND)
    print(output.bench_tables(results))
    if any(r.get("fwd_method") == "do_bench" or r.get("bwd_method") == "do_bench" for r in results):
        print("† graph capture failed: triton do_bench time (L2 flushed between calls)")
    if args.markdown:
        print("\n" + output.render_markdown(results, env))
    if args.plot:
        problem = output.plot(results, args.plot)
        if problem:
            print(f"normkit bench: no plot written: {problem}", file=sys.stderr)
    return _finish(args, results, env)


def _eager_main(args: argparse.Namespace, device: torch.device, impls: Sequence[str]) -> int:
    grids = build_grids(args.family, args.shapes, args.dtypes, args.dry_run, default=eager.DEFAULT_GRID)
    sizes = dict(eager.DRY_RUN) if args.dry_run else {"calls": eager.CALLS, "repeats": eager.REPEATS,
                                                      "warmup": eager.WARMUP}
    sizes.update({k: v for k, v in (("calls", args.calls), ("repeats", args.repeats)) if v})
    results, env = eager.run(grids, impls, device, eps=EPS, dry_run=args.dry_run, **sizes)
    if args.dry_run:
        print("DRY RUN: the interpreter on a tiny shape; not a GPU measurement.")
    else:
        print(f"{env['device']} · torch {env['torch']} · triton {env['triton']}"
              + "".join(f" · {k} {v}" for k, v in env["peers"].items()))
    print(eager.method(device=env["device"], on_gpu=device.type == "cuda", **sizes))
    print(output.eager_tables(results))
    if args.markdown:
        print("\n" + output.eager_markdown(results, env))
    return _finish(args, results, env)


def _finish(args: argparse.Namespace, results: List[Dict], env: Dict) -> int:
    """--json and --csv; exit status 1 when normkit itself failed on a shape."""
    if args.json:
        output.write_json({"environment": env, "results": results}, args.json)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            output.write_csv(results, f)
    failed = [r for r in results if r["impl"] == "normkit" and r.get("error")]
    for r in failed:
        print(f"normkit failed on {r['family']} {output.shape_label(r)}: {r['error']}",
              file=sys.stderr)
    return 1 if failed else 0
