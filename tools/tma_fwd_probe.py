"""Probe (GPU, a development experiment): would the forward reach ≥ 95 % of copy if its rows moved
through the Hopper Tensor Memory Accelerator (TMA) instead of per-thread vector loads and stores?

Why (BENCHMARKS "Open gaps", forward): LayerNorm's bf16 forward at 16384×4096 runs at 93-94 % of
copy; the bytes, tiles, occupancy, grid, statistics and L2 policy are measured out, and Nsight
Compute (run ZO) found it issue-busy (14.2 cycles between a warp's instructions). A TMA copy is
one instruction a tile instead of one 16-byte load or store a thread per 8 elements, and lands in
shared memory without registers; the store goes back the same way.

The kernel: x viewed as (M·K, C) with C = min(N, 256) (a TMA box is at most 256 elements a
dimension) and K = N / C, so a block of BLOCK_M rows is one [BLOCK_M·K, C] box; the statistics sum
over the last two axes of its [BLOCK_M, K, C] view. Whole rows, N a power of two ≥ 256 and M a
multiple of BLOCK_M (what the shapes below are). PERSISTENT walks row blocks in a loop that
carries num_stages (Triton pipelines descriptor loads with mbarriers). Timed against normkit's
forward in the same process (same inputs, CUDA-graph replays) and checked against its output.
Not used by normkit; the kernel family would take it as a flag if it wins.

    python tools/tma_fwd_probe.py --shapes 16384x2048,16384x4096 --family layer_norm
    TRITON_INTERPRET=1 python tools/tma_fwd_probe.py --check   # the kernel's math on the CPU
"""

import argparse
import itertools

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def tma_fwd(x_desc, W, B, y_desc, MEAN, RSTD, M, N, eps, BLOCK_M: tl.constexpr, K: tl.constexpr,
            C: tl.constexpr, IS_RMS_NORM: tl.constexpr, PERSISTENT: tl.constexpr, STAGES: tl.constexpr):
    wc = tl.arange(0, K)[:, None] * C + tl.arange(0, C)[None, :]
    w = tl.load(W + wc).to(tl.float32)
    b = tl.load(B + wc).to(tl.float32)
    blocks = M // BLOCK_M
    first = tl.program_id(0)
    step = tl.num_programs(0) if PERSISTENT else blocks
    for row_block in tl.range(first, blocks, step, num_stages=STAGES):
        h = tl.reshape(x_desc.load([row_block * BLOCK_M * K, 0]).to(tl.float32), [BLOCK_M, K, C])
        if IS_RMS_NORM:
            mean = tl.zeros([BLOCK_M], dtype=tl.float32)
            centered = h
        else:
            mean = tl.sum(tl.sum(h, axis=2), axis=1) / N
            centered = h - mean[:, None, None]
        rstd = 1.0 / tl.sqrt(tl.sum(tl.sum(centered * centered, axis=2), axis=1) / N + eps)
        rows = row_block * BLOCK_M + tl.arange(0, BLOCK_M)
        tl.store(RSTD + rows, rstd)
        if not IS_RMS_NORM:
            tl.store(MEAN + rows, mean)
        y = centered * rstd[:, None, None] * w[None, :, :]
        if not IS_RMS_NORM:
            y += b[None, :, :]
        y_desc.store([row_block * BLOCK_M * K, 0], tl.reshape(y, [BLOCK_M * K, C]).to(y_desc.dtype))


def launch(x, w, b, y, mean, rstd, eps, rms, block_m, warps, persistent, stages, programs):
    m, n = x.shape
    c = min(n, 256)
    k = n // c
    box = [block_m * k, c]
    x_desc = TensorDescriptor(x, [m * k, c], [c, 1], box)
    y_desc = TensorDescriptor(y, [m * k, c], [c, 1], box)
    grid = (programs if persistent else m // block_m,)
    tma_fwd[grid](x_desc, w, b, y_desc, mean, rstd, m, n, eps, BLOCK_M=block_m, K=k, C=c, IS_RMS_NORM=rms,
                  PERSISTENT=persistent, STAGES=stages, num_warps=warps)


def check() -> int:
    """The kernel's math against float64 on the CPU (Triton's interpreter)."""
    g = torch.Generator().manual_seed(0)
    for m, n, rms, block_m in ((8, 512, False, 2), (4, 256, True, 1), (6, 1024, False, 2)):
        x = torch.randn(m, n, generator=g)
        w, b = 1 + 0.1 * torch.randn(n, generator=g), 0.1 * torch.randn(n, generator=g)
        y, mean, rstd = torch.empty_like(x), torch.empty(m), torch.empty(m)
        launch(x, w, b, y, mean, rstd, 1e-5, rms, block_m, 4, False, 1, 0)
        xd = x.double()
        mu = torch.zeros(m, 1, dtype=torch.float64) if rms else xd.mean(1, keepdim=True)
        r = ((xd - mu).square().mean(1, keepdim=True) + 1e-5).rsqrt()
        want = (xd - mu) * r * w.double() + (0 if rms else b.double())
        err = (y.double() - want).abs().max().item()
        print(f"check {m}x{n} {'rms' if rms else 'ln'} BLOCK_M={block_m}: max |y - float64| {err:.1e}")
        if err > 1e-5:
            return 1
    return 0


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default="16384x2048,16384x4096")
    p.add_argument("--family", default="layer_norm", choices=["rms", "layer_norm"])
    p.add_argument("--check", action="store_true", help="the kernel's math on the CPU (TRITON_INTERPRET=1)")
    p.add_argument("--block-m", default="1,2", help="rows a box (comma-separated)")
    p.add_argument("--grid-only", action="store_true", help="only one program a row block (no persistent modes)")
    args = p.parse_args()
    if args.check:
        return check()
    import fwd_probe

    # descriptors built on the device need a scratch allocator; these are host-built, but set one anyway
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    # (persistent, stages, programs an SM): one program a row block, or persistent and pipelined
    modes = [(False, 1, 0)] + ([] if args.grid_only else [(True, s, pp) for s in (2, 3) for pp in (1, 2, 4)])

    def candidates(m, n, sms):
        for block_m, warps, (persistent, stages, per_sm) in itertools.product(
                [int(v) for v in args.block_m.split(",")], (4, 8), modes):
            if m % block_m or block_m * n * 2 * (stages if persistent else 1) > 160 * 1024:
                continue  # the boxes of a program must fit shared memory
            programs = min(m // block_m, sms * per_sm)

            def call(x, w, b, y, mean, rstd, rms, block_m=block_m, warps=warps, persistent=persistent,
                     stages=stages, programs=programs):
                launch(x, w, b, y, mean, rstd, 1e-5, rms, block_m, warps, persistent, stages, programs)
            yield f"{block_m}x{n} w{warps} " + (f"persistent s{stages} grid {programs}" if persistent
                                                 else "grid M/BLOCK_M"), call

    return fwd_probe.run(args.family, args.shapes, candidates)

if __name__ == "__main__":
    raise SystemExit(main())
