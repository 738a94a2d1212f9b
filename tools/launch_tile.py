"""Launch one tile configuration (backward, or forward with --kind fwd) on one problem, a few times:
the target for a profiler.

    ncu --kernel-name norm_bwd_kernel --launch-skip 2 --launch-count 1 --section WarpStateStats \
        python3 tools/launch_tile.py --family layer_norm --shape 16384x4096 --tile 2,4096,16,1 --joined
    ncu --kernel-name norm_fwd_kernel --launch-skip 2 --launch-count 1 --metrics dram__bytes_read.sum \
        python3 tools/launch_tile.py --kind fwd --family rms --shape 2048x131072 --config 1x32768:32:col

--tile is block_m,block_n,num_warps,programs_per_sm (a whole-row backward tile, prefetching unless
--no-prefetch); --config a tools/tune.py spec (either kind, e.g. 1x65536:32:reload); without either
the heuristic's tile. Each launch is checked against the heuristic's dx / y (the first launch), so a
profile of a wrong kernel says so. Runs on the CPU through Triton's interpreter too
(TRITON_INTERPRET=1, small shapes): that is how its test runs.
"""

import argparse
import pathlib
import sys

import torch

from normkit import config as cfg
from normkit import ops
from normkit.bench.cli import parse_shapes
from normkit.bench.options import whole_number

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
# Without a GPU the launches run in Triton's interpreter: 256x4096 takes a few seconds there, the GPU default
# 16384x4096 minutes, so larger problems are refused rather than left to look like a hang
CPU_MAX_ELEMENTS = 1 << 22


def _one_shape(text):
    shapes = parse_shapes(text)
    if len(shapes) != 1:
        raise argparse.ArgumentTypeError(f"--shape is one MxN problem, got {text!r}")
    return shapes[0]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kind", choices=["bwd", "fwd"], default="bwd")
    p.add_argument("--family", choices=["rms", "fused_add", "layer_norm"], default="layer_norm")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    p.add_argument("--shape", type=_one_shape, default="16384x4096", help="MxN")
    p.add_argument("--tile", help="backward: block_m,block_n,num_warps,programs_per_sm (default: the heuristic's)")
    p.add_argument("--config", help="a tools/tune.py --config spec instead of --tile, e.g. 1x32768:32:col")
    p.add_argument("--no-prefetch", action="store_true", help="with --tile: do not prefetch the next row block")
    p.add_argument("--joined", action="store_true", help="with --tile: Σ(g·h) and Σg in one reduction tree")
    p.add_argument("--launches", type=whole_number("--launches"), default=4, help="launches of the tile checked")
    return p.parse_args(argv)


def tile(args) -> "cfg.TileConfig | None":
    if args.config:
        if args.tile:
            raise ValueError(f"--tile and --config name the same thing; give one, got {args.tile!r} and {args.config!r}")
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # tools/tune.py, when imported by path
        from tune import parse_config
        return parse_config(args.config)
    if not args.tile:
        return None
    if args.kind == "fwd":
        raise ValueError(f"--tile is a backward tile; the forward takes --config, got --tile {args.tile!r}")
    try:
        block_m, block_n, warps, per_sm = (int(v) for v in args.tile.split(","))
    except ValueError:
        raise ValueError(f"--tile: expected block_m,block_n,num_warps,programs_per_sm (four integers), "
                         f"got {args.tile!r}") from None
    return cfg.TileConfig(block_m, block_n, True, num_warps=warps, programs_per_sm=per_sm,
                          prefetch=not args.no_prefetch, joined_sums=args.joined)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        config = tile(args)
    except ValueError as e:
        print(f"launch_tile: {e}", file=sys.stderr)
        return 2
    m, n = args.shape
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cpu" and m * n > CPU_MAX_ELEMENTS:
        print(f"launch_tile: without a GPU (Triton's interpreter) --shape is at most {CPU_MAX_ELEMENTS} elements, "
              f"got {m}x{n} ({m * n}); e.g. --shape 9x300", file=sys.stderr)
        return 2
    dtype = DTYPES[args.dtype]
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(m, n, device=device, dtype=dtype, generator=g)
    dy = (0.5 * x + torch.randn(m, n, device=device, dtype=dtype, generator=g)).to(dtype)
    w = (1 + 0.1 * torch.randn(n, device=device, generator=g)).to(dtype)
    rms = args.family != "layer_norm"
    b = None if rms else torch.zeros_like(w)
    dres = torch.randn(m, n, device=device, dtype=dtype, generator=g) if args.family == "fused_add" else None
    _, _, mean, rstd = ops.norm_fwd(x, w, b, None, eps=1e-6, store_stats=True, is_rms_norm=rms)
    dx, dw = torch.empty_like(x), torch.empty_like(w)
    db = None if rms else torch.empty_like(w)

    y = torch.empty_like(x)
    h = torch.empty_like(x) if dres is not None else None

    def launch(c):
        if args.kind == "fwd":  # the fused add: dres stands in for the residual, h stored
            ops.launch_fwd(x, y, weight=w, bias=b, residual=dres, residual_out=h, mean=mean, rstd=rstd, eps=1e-6,
                           is_rms_norm=rms, config=c)
            return y.float().clone()
        ops.launch_bwd(x, dy, dx, weight=w, dweight=dw, dbias=db, dresidual_out=dres, mean=mean, rstd=rstd,
                       eps=1e-6, is_rms_norm=rms, config=c)
        return dx.float().clone()

    ref = launch(None)
    worst = 0.0
    for _ in range(args.launches):
        worst = max(worst, (launch(config) - ref).abs().max().item())
    scale = ref.abs().max().item() or 1.0
    out = "y" if args.kind == "fwd" else "dx"
    print(f"launch_tile: {args.kind} {args.family} {args.dtype} {m}x{n} {config or 'heuristic'}: {args.launches} "
          f"launches, max |{out} - heuristic's| = {worst:.3g} (|{out}| ≤ {scale:.3g})")
    return 0 if worst <= 2e-2 * scale else 1


if __name__ == "__main__":
    sys.exit(main())
