"""Time the dweight finisher (`sum_partials_kernel`) on the GPU, alone and inside the backward.

For each shape: the heuristic backward with dweight (partials + finisher) and without any
parameter (neither: no weight read, no partials; until session 32 this passed the weight without
dweight, which ops.launch_bwd now refuses — the kernel's one HAS_WEIGHT flag then dropped the weight
from dx too, so that run's dx was wrong, its timing a weightless backward's), then the finisher
alone on a (G, N) fp32 partial buffer (G = the backward's persistent programs) for its current tile
and every candidate tile. All times are
CUDA-graph replays (graph_time: K calls back to back, so a launch's gap is counted).

    python tools/time_finisher.py --shapes 16384x1024,16384x4096 --json $OUT/finisher.json
    python tools/time_finisher.py --no-sweep --shapes 4096x16384    # the current finisher tile only
    python tools/time_finisher.py --partials 8x131072,16x65536x2      # the finisher alone: G x N (x K grads)
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


def candidates(rows: int):
    """Finisher tiles for `rows` partial rows: every row in one or two steps (block_g the next power of
    two of rows, or half of it), 16-1024 columns, 1-8 warps, 4-64 values a thread."""
    top = cfg.next_power_of_2(rows)
    for block_g, block_n, warps in itertools.product(sorted({max(2, top // 2), top}), (16, 32, 64, 128, 256, 512, 1024),
                                                     (1, 2, 4, 8)):
        if block_g <= 512 and 4 <= block_g * block_n // (32 * warps) <= 64:
            yield block_g, block_n, warps


def time_finisher(g: int, n: int, grads: int, dev, sweep: bool) -> dict:
    """The finisher alone on a (grads, g, n) fp32 partial buffer: its current tile and, with `sweep`,
    every candidate, each checked against torch's sum."""
    partial = torch.randn(grads, g, n, device=dev)
    outs = [torch.empty(n, device=dev, dtype=torch.bfloat16) for _ in range(grads)]
    ref = partial.sum(1)

    def finisher(block_g, block_n, warps):
        def call():
            sum_partials_kernel[(cfg.cdiv(n, block_n), grads)](partial, outs[0], outs[-1], g, n, g * n,
                                                               BLOCK_G=block_g, BLOCK_N=block_n, num_warps=warps)
        call()
        for k, out in enumerate(outs):
            torch.testing.assert_close(out.float(), ref[k], rtol=1e-2, atol=1e-2)
        return graph_time([call])

    cur = cfg.finish_config(False, g, n)
    tile = (cur.block_m, cur.block_n, cur.num_warps)
    current = finisher(*tile)
    ranked = sorted((finisher(*c), c) for c in candidates(g)) if sweep else [(current, tile)]
    return dict(programs=g, n=n, grads=grads, finisher_us=current * 1e6, finisher_config=tile,
                best_us=ranked[0][0] * 1e6, best=ranked[0][1], top5=[(t * 1e6, c) for t, c in ranked[:5]],
                ranked=[(t * 1e6, c) for t, c in ranked])


def describe(row: dict) -> str:
    return (f"finisher {row['finisher_us']:5.2f} µs {row['finisher_config']}, best {row['best_us']:5.2f} {row['best']}"
            " | next: " + ", ".join(f"{t:.2f} {c}" for t, c in row["top5"][1:4]))


def parse_partials(p: argparse.ArgumentParser, text: str) -> list:
    """--partials' specs as (spec, G, N, K) — G ≥ 1 partial rows, N ≥ 1 columns, K 1 or 2 gradients —
    or the parser's error naming the spec (before any GPU use)."""
    specs = []
    for spec in text.split(","):
        parts = spec.split("x")
        numbers = [int(v) for v in parts if v.isdigit()]
        if len(parts) not in (2, 3) or len(numbers) != len(parts) or min(numbers[:2]) < 1 or numbers[2:] not in ([], [1], [2]):
            p.error(f"--partials takes GxN or GxNxK (G, N ≥ 1 partial rows and columns, K 1 or 2 gradients), got {spec!r}")
        specs.append((spec, numbers[0], numbers[1], numbers[2] if len(numbers) == 3 else 1))
    return specs


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default=SHAPES, help="MxN backward shapes (RMSNorm bf16, the heuristic's tile)")
    p.add_argument("--partials", help="GxN or GxNxK: the finisher alone on G partial rows of N columns, K "
                                      "gradients (1: dweight, 2: with dbias); replaces --shapes")
    p.add_argument("--json")
    p.add_argument("--no-sweep", action="store_true", help="time the finisher's current tile only, no candidates")
    args = p.parse_args(argv)
    partials = parse_partials(p, args.partials) if args.partials else []
    dev = torch.device("cuda")
    sms = ops.multiprocessor_count(dev)
    rows = []
    with torch.cuda.stream(torch.cuda.Stream()):
        for spec, g, n, k in partials:
            row = dict(partials=spec, **time_finisher(g, n, k, dev, not args.no_sweep))
            rows.append(row)
            print(f"{spec:>14}  " + describe(row), flush=True)
        for shape in [] if args.partials else args.shapes.split(","):
            m, n = map(int, shape.split("x"))
            x = torch.randn(m, n, device=dev, dtype=torch.bfloat16)
            dy = torch.randn_like(x)
            w = torch.randn(n, device=dev, dtype=torch.bfloat16)
            rstd = torch.rand(m, device=dev) + 0.5
            dx, dw = torch.empty_like(x), torch.empty_like(w)
            config = cfg.fit_block_m(cfg.tile_config(n, True, False, multiprocessors=sms), m)
            g = cfg.backward_grid(config, m, sms, n=n)  # groups of parts: the partial rows

            def bwd(with_weight):
                return lambda: ops.launch_bwd(x, dy, dx, weight=w if with_weight else None,
                                              dweight=dw if with_weight else None, rstd=rstd, eps=1e-6)

            full, bare = graph_time([bwd(True)]), graph_time([bwd(False)])
            row = dict(shape=shape, bwd_us=full * 1e6, bwd_no_param_grads_us=bare * 1e6,
                       **time_finisher(g, n, 1, dev, not args.no_sweep))
            rows.append(row)
            print(f"{shape:>12} G={g:3d}  bwd {full * 1e6:7.1f} µs, without dweight {bare * 1e6:7.1f};  "
                  + describe(row), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
