"""Launch one backward tile configuration on one problem, a few times: the target for a profiler.

    ncu --kernel-name norm_bwd_kernel --launch-skip 2 --launch-count 1 --section WarpStateStats \
        python3 tools/launch_tile.py --family layer_norm --shape 16384x4096 --tile 2,4096,16,1 --joined

--tile is block_m,block_n,num_warps,programs_per_sm (a whole-row tile, prefetching unless
--no-prefetch); without it the heuristic's tile. Each launch is checked against the heuristic's
dx (the first launch), so a profile of a wrong kernel says so. Runs on the CPU through Triton's
interpreter too (TRITON_INTERPRET=1, small shapes): that is how its test runs.
"""

import argparse
import sys

import torch

from normkit import config as cfg
from normkit import ops

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--family", choices=["rms", "fused_add", "layer_norm"], default="layer_norm")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    p.add_argument("--shape", default="16384x4096", help="MxN")
    p.add_argument("--tile", help="block_m,block_n,num_warps,programs_per_sm (default: the heuristic's)")
    p.add_argument("--no-prefetch", action="store_true", help="with --tile: do not prefetch the next row block")
    p.add_argument("--joined", action="store_true", help="with --tile: Σ(g·h) and Σg in one reduction tree")
    p.add_argument("--launches", type=int, default=4)
    return p.parse_args(argv)


def tile(args) -> "cfg.TileConfig | None":
    if not args.tile:
        return None
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
    m, n = (int(v) for v in args.shape.split("x"))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
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

    def launch(c):
        ops.launch_bwd(x, dy, dx, weight=w, dweight=dw, dbias=db, dresidual_out=dres, mean=mean, rstd=rstd,
                       eps=1e-6, is_rms_norm=rms, config=c)
        return dx.float().clone()

    ref = launch(None)
    worst = 0.0
    for _ in range(args.launches):
        worst = max(worst, (launch(config) - ref).abs().max().item())
    scale = ref.abs().max().item() or 1.0
    print(f"launch_tile: {args.family} {args.dtype} {m}x{n} {config or 'heuristic'}: {args.launches} launches, "
          f"max |dx - heuristic's| = {worst:.3g} (|dx| ≤ {scale:.3g})")
    return 0 if worst <= 2e-2 * scale else 1


if __name__ == "__main__":
    sys.exit(main())
