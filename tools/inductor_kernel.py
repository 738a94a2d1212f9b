"""Run torch.compile's LayerNorm or RMSNorm forward (the composites the benchmark gives it) on one
problem a few times — the target for a profiler, and a way to read the kernel Inductor generates:

    TORCHINDUCTOR_CACHE_DIR=/tmp/ic python3 tools/inductor_kernel.py --family layer_norm \
        --shape 8192x32768 --dump-to logs/inductor
    ncu --kernel-name regex:triton_ --launch-skip 2 --launch-count 1 --section WarpStateStats \
        python3 tools/inductor_kernel.py --family layer_norm --shape 8192x32768

--dump-to copies every generated Python file of Inductor's cache that defines a Triton kernel, and
the autotuner's chosen configs (*.best_config), into a folder. Each launch is checked against
float64 (normkit.reference), so a profile of a wrong kernel says so. On a CPU, Inductor generates
C++, not Triton: the check still runs (tests/test_tools.py), the dump finds no Triton kernel.
"""

import argparse
import os
import pathlib
import shutil
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from normkit import reference  # noqa: E402
from normkit.bench.families import layer_norm_composite  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def rms_norm_composite(x, weight, bias, eps):
    """RMSNorm in float32, cast back (bias unused): what torch.compile is given for RMSNorm."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + eps) * weight.float()).to(x.dtype)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--family", choices=["layer_norm", "rms"], default="layer_norm")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    p.add_argument("--shape", default="8192x32768", help="MxN")
    p.add_argument("--launches", type=int, default=3)
    p.add_argument("--dump-to", help="a folder for Inductor's generated Triton kernels and chosen configs")
    return p.parse_args(argv)


def dump(cache: pathlib.Path, out: pathlib.Path) -> int:
    """Copies the cache's generated kernels (Python files with @triton.jit) and *.best_config files into
    out; returns how many kernel files it found."""
    out.mkdir(parents=True, exist_ok=True)
    kernels = 0
    for path in sorted(cache.rglob("*")):
        if path.suffix == ".best_config" or (path.suffix == ".py" and "@triton.jit" in path.read_text(errors="ignore")):
            kernels += path.suffix == ".py"
            shutil.copy(path, out / f"{path.parent.name}_{path.name}")
    return kernels


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        m, n = (int(v) for v in args.shape.lower().split("x"))
    except ValueError:
        raise SystemExit(f"--shape is MxN (two integers), got {args.shape!r}") from None
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator(device).manual_seed(0)
    dtype = DTYPES[args.dtype]
    x = torch.randn(m, n, device=device, dtype=dtype, generator=gen)
    weight = (1 + 0.1 * torch.randn(n, device=device, generator=gen)).to(dtype)
    bias = (0.1 * torch.randn(n, device=device, generator=gen)).to(dtype)
    eps = 1e-5 if args.family == "layer_norm" else 1e-6
    composite = layer_norm_composite if args.family == "layer_norm" else rms_norm_composite
    compiled = torch.compile(composite)
    rms = args.family == "rms"
    want = reference.norm_fwd(x.double(), weight.double(), None if rms else bias.double(), eps=eps,
                              is_rms_norm=rms)[0]
    worst = 0.0
    for _ in range(args.launches):
        y = compiled(x, weight, bias, eps)
        worst = max(worst, (y.double() - want).abs().max().item())
    if device == "cuda":
        torch.cuda.synchronize()
    print(f"inductor_kernel: {args.family} {args.dtype} {m}x{n} on {device}: {args.launches} launches, "
          f"max |y - float64| = {worst:.3g}")
    if args.dump_to:
        cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        if not cache:
            raise SystemExit("--dump-to reads Inductor's cache: set TORCHINDUCTOR_CACHE_DIR for the run")
        found = dump(pathlib.Path(cache), pathlib.Path(args.dump_to))
        print(f"inductor_kernel: {found} generated Triton kernel file(s) → {args.dump_to}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
