"""Probe (GPU, a development experiment): would a persistent forward with staged loads beat the
forward's one-program-per-row-block grid on the shapes below 95 % of copy?

The forward (kernels/forward.py) launches one program per row block; the backward's staged loads
(async_stages, session 11) suggested the same for the forward: persistent programs walking row
blocks in a loop that carries num_stages, so Triton issues the next row blocks' loads by cp.async
while this block reduces. This stand-alone kernel is the forward's whole-row, unmasked
(EVEN_ROWS) path — RMSNorm or LayerNorm with weight and bias, statistics stored — inside such a
loop. It is timed against normkit's forward in the same process (same inputs, same graph timing)
and checked against its output. Not used by normkit; the kernel family would take it as a flag.

    python tools/persistent_fwd_probe.py --shapes 16384x2048,16384x4096 --family layer_norm
"""

import argparse
import itertools

import torch
import triton
import triton.language as tl

from normkit import ops
from normkit.bench.timing import copy_bandwidth, graph_time, input_sets_needed, min_bytes


@triton.jit
def persistent_fwd(X, W, B, Y, MEAN, RSTD, M, N, eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   IS_RMS_NORM: tl.constexpr, STAGES: tl.constexpr):
    cols = tl.arange(0, BLOCK_N)
    w = tl.load(W + cols).to(tl.float32)
    b = tl.load(B + cols).to(tl.float32)
    for row_block in tl.range(tl.program_id(0), M // BLOCK_M, tl.num_programs(0), num_stages=STAGES):
        rows = (row_block * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
        offs = rows[:, None] * N + cols[None, :]
        h = tl.load(X + offs).to(tl.float32)
        if IS_RMS_NORM:
            mean = tl.zeros([BLOCK_M], dtype=tl.float32)
            centered = h
        else:
            mean = tl.sum(h, axis=1) / N
            centered = h - mean[:, None]
        rstd = 1.0 / tl.sqrt(tl.sum(centered * centered, axis=1) / N + eps)
        tl.store(RSTD + rows, rstd)
        if not IS_RMS_NORM:
            tl.store(MEAN + rows, mean)
        y = centered * rstd[:, None] * w[None, :]
        if not IS_RMS_NORM:
            y += b[None, :]
        tl.store(Y + offs, y)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="16384x2048,16384x4096")
    p.add_argument("--family", default="layer_norm", choices=["rms", "layer_norm"])
    args = p.parse_args()
    dev = torch.device("cuda")
    sms = ops.multiprocessor_count(dev)
    bw = copy_bandwidth(dev)
    print(f"copy bandwidth {bw / 1e9:.0f} GB/s", flush=True)
    rms = args.family == "rms"
    side = torch.cuda.Stream()
    for shape in args.shapes.split(","):
        m, n = map(int, shape.split("x"))
        nbytes = min_bytes("fwd", m, n, 2, args.family)
        sets = input_sets_needed(nbytes)
        g = torch.Generator(device=dev).manual_seed(0)
        xs = [torch.randn(m, n, device=dev, dtype=torch.bfloat16, generator=g) for _ in range(sets)]
        w = (1 + 0.1 * torch.randn(n, device=dev, generator=g)).to(torch.bfloat16)
        b = (0.1 * torch.randn(n, device=dev, generator=g)).to(torch.bfloat16)
        ys = [torch.empty_like(x) for x in xs]
        mean, rstd = torch.empty(m, device=dev), torch.empty(m, device=dev)
        pct = lambda t: 100 * nbytes / t / bw  # noqa: E731
        with torch.cuda.stream(side):
            base = [lambda i=i: ops.launch_fwd(xs[i], ys[i], weight=w, bias=None if rms else b, mean=None if rms else mean,
                                               rstd=rstd, eps=1e-5, is_rms_norm=rms) for i in range(sets)]
            base[0]()
            ref = ys[0].clone()
            t0 = graph_time(base)
            print(f"{shape} {args.family} normkit forward: {t0 * 1e6:.1f} us ({pct(t0):.0f}%)", flush=True)
            rows = []
            for block_m, warps, stages, per_sm in itertools.product((1, 2, 4), (4, 8, 16), (1, 2, 3, 4), (1, 2, 4, 8)):
                if m % block_m or block_m * n // (32 * warps) < 8 or block_m * n // (32 * warps) > 64:
                    continue
                grid = (min(m // block_m, sms * per_sm),)

                def call(i, block_m=block_m, warps=warps, stages=stages, grid=grid):
                    persistent_fwd[grid](xs[i], w, b, ys[i], mean, rstd, m, n, 1e-5, BLOCK_M=block_m, BLOCK_N=n,
                                         IS_RMS_NORM=rms, STAGES=stages, num_warps=warps)
                try:
                    call(0)
                    torch.cuda.synchronize()
                    ok = torch.allclose(ys[0].float(), ref.float(), rtol=1e-2, atol=1e-2)
                    t = graph_time([lambda i=i: call(i) for i in range(sets)])
                except Exception as e:  # noqa: BLE001 - report, go on
                    print(f"  {block_m}x{n} w{warps} s{stages} pp{per_sm}: {type(e).__name__} {str(e)[:100]}")
                    continue
                rows.append((t, f"{block_m}x{n} w{warps} stages {stages} grid {grid[0]}", ok))
                print(f"  each {t * 1e6:.1f} us ({pct(t):.0f}%) {rows[-1][1]} ok={ok}", flush=True)
            rows.sort()
            for t, name, ok in rows[:6]:
                print(f"  best {t * 1e6:.1f} us ({pct(t):.0f}%) {name} ok={ok}", flush=True)
        del xs, ys
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
