"""Every launch configuration the GPU heuristics can pick × every family, on small shapes (GPU).

Each configuration (tests/config_cases.py: all those `tile_config` returns for N in 1 … 262144)
is forced through `config=` onto small problems that keep its tiling meaningful (masked tail
rows and columns, persistent programs owning several row blocks, split rows of three parts),
forward and backward, for the families rms (weight), fused_add (residual + dresidual_out +
weight offset), layer_norm (weight + bias) and fused_layer_norm (weight + bias + residual +
dresidual_out); outputs are pre-filled with NaN inside sentinel
bands and compared with float64 (tests/forced_runs.py). Small enough to run under
compute-sanitizer, which works on Triton kernels like on any other (they are ordinary cubins):

    PYTHONPATH=$PWD python tools/sanitize_sweep.py                   # warm Triton's cache, check results
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck --target-processes all \\
        python tools/sanitize_sweep.py --split exclude
    ... --tool racecheck ... --families rms --widths lo
    ... --tool initcheck ...

(PYTORCH_NO_CUDA_MEMORY_CACHING=1 gives every tensor its own cudaMalloc, so memcheck sees
accesses past a tensor and initcheck sees reads of memory nothing wrote.) Split-row
configurations spin on a counter until every part of a row arrived: they need all their programs
resident at once, which a sanitizer that serialises blocks would break — `--split only` runs them
apart, under their own timeout. Prints one line per run and a summary; exit status 1 on any
mismatch.
"""

import argparse
import pathlib
import sys
import time
import traceback

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from tests.config_cases import config_problems, runs_family  # noqa: E402
from tests.forced_runs import SANITIZE_FAMILIES as FAMILIES, run_forced  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32, "fp16": torch.float16}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--families", default=",".join(FAMILIES), help="comma list of " + ", ".join(FAMILIES))
    parser.add_argument("--widths", choices=["lo", "all"], default="all",
                        help="lo: only the first (narrowest / most ragged) width of each configuration")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--split", choices=["include", "exclude", "only"], default="include")
    parser.add_argument("--kind", choices=["fwd", "bwd", "both"], default="both")
    parser.add_argument("--only", help="only configurations whose label contains this, e.g. ones3 (whole rows "
                                       "with loads staged 3 deep)")
    args = parser.parse_args(argv)
    families = [f for f in args.families.split(",") if f]
    unknown = [f for f in families if f not in FAMILIES]
    if unknown or not families:
        parser.error(f"--families takes a comma list of {', '.join(FAMILIES)}, got {args.families!r}")
    if not torch.cuda.is_available():
        print("sanitize_sweep: needs a CUDA device")
        return 2
    problems = []
    for backward in ((False,) if args.kind == "fwd" else (True,) if args.kind == "bwd" else (False, True)):
        seen = set()
        for problem in config_problems(backward):
            if args.widths == "lo" and problem.config in seen:
                continue
            seen.add(problem.config)
            if (args.split == "exclude" and problem.split) or (args.split == "only" and not problem.split):
                continue
            if args.only and args.only not in problem.label():
                continue
            problems.append(problem)
    runs = failures = 0
    start = time.time()
    for index, problem in enumerate(problems):
        for family in (f for f in families if runs_family(problem.config, f)):
            for recompute in ((False, True) if problem.backward else (False,)):
                runs += 1
                t0 = time.time()
                try:
                    run_forced(problem, family, DTYPES[args.dtype], recompute=recompute, seed=index)
                    torch.cuda.synchronize()
                    status = "ok"
                except Exception:  # noqa: BLE001 - reported and counted
                    failures += 1
                    status = "FAIL\n" + traceback.format_exc(limit=4)
                stats = (" recompute" if recompute else " saved") if problem.backward else ""
                print(f"{problem.label()} {family}{stats}: {status} ({time.time() - t0:.2f} s)", flush=True)
    print(f"sanitize_sweep: {runs} runs ({len(problems)} problems × up to {len(families)} families), {failures} failures, "
          f"{time.time() - start:.1f} s", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
