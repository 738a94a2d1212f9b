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

import triton
import triton.language as tl

import fwd_probe


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

    def candidates(m, n, sms):
        for block_m, warps, stages, per_sm in itertools.product((1, 2, 4), (4, 8, 16), (1, 2, 3, 4), (1, 2, 4, 8)):
            if m % block_m or block_m * n // (32 * warps) < 8 or block_m * n // (32 * warps) > 64:
                continue
            grid = (min(m // block_m, sms * per_sm),)

            def launch(x, w, b, y, mean, rstd, rms, block_m=block_m, warps=warps, stages=stages, grid=grid):
                persistent_fwd[grid](x, w, b, y, mean, rstd, m, n, 1e-5, BLOCK_M=block_m, BLOCK_N=n,
                                     IS_RMS_NORM=rms, STAGES=stages, num_warps=warps)
            yield f"{block_m}x{n} w{warps} stages {stages} grid {grid[0]}", launch

    return fwd_probe.run(args.family, args.shapes, candidates)


if __name__ == "__main__":
    raise SystemExit(main())
