"""Time the dweight finisher (`sum_partials_kernel`) on the GPU, alone and inside the backward.

For each shape: the heuristic backward with dweight (partials + finisher) and without any
parameter gradient (neither), then the finisher alone on a (G, N) fp32 partial buffer (G = the
backward's persistent programs) for its current tile and every candidate tile. All times are
CUDA-graph replays (graph_time: K calls back to back, so a launch's gap is counted).

    python tools/time_finisher.py --shapes 16384x1024,16384x4096 --json $OUT/finisher.json
"""

import argparse
import itertools
import json

import torch

from normkit import config as cfg
from normkit import ops
from normkit.bench.timing import graph_time
from normkit.kernels import sum_partials_kernel

SHAPES = "524288x128,16384x1024,16384x2048,4096x2048,16384x4096,16384x8192,4096x16384"


def candidates():
    for block_g, block_n, warps in itertools.product((32, 64, 128, 256, 512), (16, 32, 64, 128), (2, 4, 8)):
        if 512 <= block_g * block_n <= 16384 and block_g * block_n >= 32 * warps * 4:
            yield block_g, block_n, warps


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default=SHAPES)
    p.add_argument("--json")
    args = p.parse_args()
    dev = torch.device("cuda")
    sms = ops.multiprocessor_count(dev)
    rows = []
    with torch.cuda.stream(torch.cuda.Stream()):
        for shape in args.shapes.split(","):
            m, n = map(int, shape.split("x"))
            x = torch.randn(m, n, device=dev, dtype=torch.bfloat16)
            dy = torch.randn_like(x)
            w = torch.randn(n, device=dev, dtype=torch.bfloat16)
            rstd = torch.rand(m, device=dev) + 0.5
            dx, dw = torch.empty_like(x), torch.empty_like(w)
            config = cfg.fit_block_m(cfg.tile_config(n, True, False, multiprocessors=sms), m)
            g = cfg.backward_grid(config, m, sms, n=n)

            def bwd(with_weight):
                return lambda: ops.launch_bwd(x, dy, dx, weight=w, dweight=dw if with_weight else None,
                                              rstd=rstd, eps=1e-6)

            full, bare = graph_time([bwd(True)]), graph_time([bwd(False)])
            partial = torch.randn(g, n, device=dev)
            out = torch.empty(n, device=dev, dtype=torch.bfloat16)
            ref = partial.sum(0)

            def finisher(block_g, block_n, warps):
                def call():
                    sum_partials_kernel[(cfg.cdiv(n, block_n), 1)](partial, out, out, g, n, g * n, BLOCK_G=block_g,
                                                                 BLOCK_N=block_n, num_warps=warps)
                call()
                torch.testing.assert_close(out.float(), ref, rtol=1e-2, atol=1e-2)
                return graph_time([call])

            cur = cfg.finish_config(False, g)
            current = finisher(cur.block_m, cur.block_n, cur.num_warps)
            sweep = sorted((finisher(*c), c) for c in candidates())
            row = dict(shape=shape, programs=g, bwd_us=full * 1e6, bwd_no_param_grads_us=bare * 1e6,
                       finisher_us=current * 1e6, finisher_config=(cur.block_m, cur.block_n, cur.num_warps),
                       best_us=sweep[0][0] * 1e6, best=sweep[0][1], top5=[(t * 1e6, c) for t, c in sweep[:5]])
            rows.append(row)
            print(f"{shape:>12} G={g:3d}  bwd {full * 1e6:7.1f} µs, without dweight {bare * 1e6:7.1f};  finisher "
                  f"{current * 1e6:5.2f} µs {row['finisher_config']}, best {sweep[0][0] * 1e6:5.2f} {sweep[0][1]} "
                  f"| next: " + ", ".join(f"{t * 1e6:.2f} {c}" for t, c in sweep[1:4]), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
