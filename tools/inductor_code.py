"""What torch.compile makes of a benchmark family's forward (a development tool, GPU only).

For each shape: compile the family's "compile" peer (the float32 composite of
normkit.bench.families), print the Triton kernels Inductor generated and the launch configuration
its autotuner kept, then graph-time that peer and normkit's forward on the same rotated inputs
(% of the copy bandwidth measured in the same process). Where torch.compile beats normkit's
forward, the kernel printed here is what to read first.

    python tools/inductor_code.py --family fused_add --shapes 16384x2048,16384x4096

--launches N instead: the compiled peer launched N more times on the first shape, untimed — a profiler's
target. Autotuning launches its candidates too, so profile a second process over a warm cache
(TORCHINDUCTOR_CACHE_DIR): the autotuner then loads its kept config and launches nothing else.

    ncu --kernel-name regex:triton_ --launch-skip 2 --launch-count 1 \
        python tools/inductor_code.py --family layer_norm --shapes 8192x32768 --launches 3
"""

import argparse
import gc
import sys

import torch
from torch._inductor.utils import run_and_get_code

from normkit.bench.cli import parse_shapes
from normkit.bench.families import FAMILIES, make_sample
from normkit.bench.timing import copy_bandwidth, graph_time, input_sets_needed, min_bytes

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
EPS = 1e-6


def kept_configs() -> list:
    """The launch configurations Inductor's autotuners kept (each autotuner after its first run)."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    out = []
    for obj in gc.get_objects():
        try:
            if not isinstance(obj, CachingAutotuner):
                continue
        except ReferenceError:  # a dead weak proxy
            continue
        name = getattr(obj.fn, "__name__", "?")
        configs = [str(launcher.config) for launcher in getattr(obj, "launchers", [])]
        out.append(f"{name} {getattr(obj, 'size_hints', '')}: {configs}")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="fused_add", choices=sorted(FAMILIES))
    parser.add_argument("--shapes", type=parse_shapes, default="16384x2048,16384x4096", help="M×N shapes")
    parser.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    parser.add_argument("--no-source", action="store_true", help="print timings and configs only")
    parser.add_argument("--launches", type=int, default=0,
                        help="launch the compiled peer this many times more, untimed (a profiler's target)")
    args = parser.parse_args(argv)
    if args.launches < 0:
        parser.error(f"--launches is a count of launches (0: time them instead), got {args.launches}")
    if not torch.cuda.is_available():
        print("inductor_code: needs a CUDA device (it compiles and times for the GPU)", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    family, dtype = FAMILIES[args.family], DTYPES[args.dtype]
    bw = copy_bandwidth(dev)
    print(f"copy bandwidth {bw / 1e9:.0f} GB/s", flush=True)
    side = torch.cuda.Stream()  # graph_time captures on a side stream
    impls = {name: family.load(name) for name in ("normkit", "compile")}
    for m, n in args.shapes:
        shape = f"{m}x{n}"
        nbytes = min_bytes("fwd", m, n, torch.empty((), dtype=dtype).element_size(), family.name)
        samples = [make_sample(family, (dtype, m, n), dev, seed) for seed in range(input_sets_needed(nbytes))]
        with torch.no_grad(), torch.cuda.stream(side):
            _, sources = run_and_get_code(impls["compile"].apply, *samples[0].inputs, EPS)
            if args.launches:
                for _ in range(args.launches):
                    impls["compile"].apply(*samples[0].inputs, EPS)
                torch.cuda.synchronize()
                print(f"inductor_code: {shape} {family.name} {args.dtype}: {args.launches} launches", flush=True)
                return 0
            if not args.no_source:
                for source in sources:
                    print(f"===== {shape}: Inductor's code\n{source}", flush=True)
            for name, impl in impls.items():
                calls = [lambda s=s, impl=impl: impl.apply(*s.inputs, EPS) for s in samples]
                t = graph_time(calls)
                print(f"{shape} {family.name} {args.dtype} fwd {name}: {t * 1e6:.1f} us "
                      f"({100 * nbytes / t / bw:.1f}% of copy)", flush=True)
        for line in kept_configs():
            print(f"  kept {line}", flush=True)
        del samples
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
