"""Does the backward's time at a shape depend on where its tensors lie, or on their values? (RMSNorm
bf16 131072×8192 ran 1543-1724 µs across fresh benchmark processes, torch.compile 1685-1697: run
ZZZQ. Session 17's answer: not on where — 1535-1552 at every placement and in 52 fresh processes with
N(0, 1) inputs —, on the values: with the benchmark's inputs (--bench-inputs) 11 of 12 processes ran
1725-1754. BENCHMARKS.md, "Session 17".)

Places x, dy and dx as views of one buffer, dy and dx at given byte offsets past the end of x
(--gaps, e.g. 0,4096,65536,2097152: the gap between consecutive tensors), and times the normkit
backward (`ops.launch_bwd` with the saved rstd, the heuristic's tile) at each placement, CUDA graphs
as tools/tune.py. One line a placement: the gap, the tensors' addresses mod 2 MiB, µs.

    python tools/offset_probe.py --shape 131072x8192 --gaps 0,4096,65536,1048576,2097152,33554432
"""
import argparse

import torch

import normkit
from normkit import ops
from normkit.bench.timing import graph_time


def _where(t, name):
    """`name@S+O`: the tensor's caching-allocator segment (S: its size, GiB) and offset in it (O, GiB),
    and the address's distance from the first segment's start in GiB (virtual layout)."""
    segments = sorted(torch.cuda.memory_snapshot(), key=lambda seg: seg["address"])
    for seg in segments:
        if seg["address"] <= t.data_ptr() < seg["address"] + seg["total_size"]:
            return (f"{name}@{seg['total_size'] / 2**30:.1f}+{(t.data_ptr() - seg['address']) / 2**30:.1f}"
                    f"[{(t.data_ptr() - segments[0]['address']) / 2**30:+.1f}]")
    return f"{name}@?"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", default="131072x8192")
    p.add_argument("--gaps", default="0,4096,65536,1048576,2097152,33554432")
    p.add_argument("--repeats", type=int, default=2, help="each placement timed this many times, interleaved")
    p.add_argument("--separate", action="store_true", help="x, dy and dx as three allocations of their own "
                   "(what the benchmark does), timed --repeats times, instead of views of one buffer")
    p.add_argument("--bench-inputs", action="store_true", help="with --separate: the benchmark's inputs "
                   "(normkit.bench.inputs.make_inputs: dy = 0.5·x + noise, weight ~ 1 + 0.25·N(0, 1)) and the "
                   "forward's rstd, instead of independent N(0, 1) values and a random rstd")
    p.add_argument("--swap", choices=("none", "fresh-copies", "empty-cache-copies", "randn-values"), default="none",
                   help="with --bench-inputs: time copies of them (their values, other allocations: from the "
                   "caching allocator's free blocks, or after torch.cuda.empty_cache() from new segments), or "
                   "overwrite them with N(0, 1) values (their allocations, other values)")
    p.add_argument("--forward-rstd", action="store_true", help="with --separate: rstd from normkit's forward")
    p.add_argument("--weight-near-one", action="store_true", help="weight ~ 1 + 0.25·N(0, 1), the benchmark's")
    p.add_argument("--ballast", type=float, default=0.0, help="GiB allocated (and kept) before the tensors")
    p.add_argument("--api", action="store_true", help="with --separate: time normkit.rms_norm_bwd (dx and "
                   "dweight allocated by each call, as the benchmark's) instead of ops.launch_bwd into dx")
    args = p.parse_args()
    if not torch.cuda.is_available():
        p.error("times kernels on a CUDA GPU; none is visible")
    ballast = torch.empty(int(args.ballast * (1 << 30)), dtype=torch.uint8, device="cuda")  # noqa: F841
    m, n = map(int, args.shape.split("x"))
    gaps = [int(g) for g in args.gaps.split(",")]
    size = m * n * 2
    if not args.separate:  # (session 17's calls allocated it in --separate mode too, then freed it:
        # their "separate" tensors were carved from that cached segment — BENCHMARKS "Session 17")
        pool = torch.empty(3 * size + 2 * max(gaps) + (1 << 21), dtype=torch.uint8, device="cuda")
        base = (-pool.data_ptr()) % (1 << 21)  # x starts on a 2 MiB boundary
    w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    if args.weight_near_one:
        w = (1.0 + 0.25 * torch.randn(n, device="cuda")).to(torch.bfloat16)
    dw = torch.empty(n, device="cuda", dtype=torch.bfloat16)
    rstd = torch.rand(m, device="cuda", dtype=torch.float32) + 0.5
    stream = torch.cuda.Stream()
    if args.separate:
        tensors = [torch.randn(m, n, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
        if args.forward_rstd:
            _, _, rstd = normkit.rms_norm_fwd(tensors[0], w, eps=1e-6, store_rstd=True)
        if args.bench_inputs:
            from normkit.bench.inputs import make_inputs

            tensors[0], w, tensors[1] = make_inputs((m, n), torch.bfloat16, "cuda")
            _, _, rstd = normkit.rms_norm_fwd(tensors[0], w, eps=1e-6, store_rstd=True)
            if args.swap == "empty-cache-copies":
                torch.cuda.empty_cache()
            if args.swap in ("fresh-copies", "empty-cache-copies"):
                tensors[0], tensors[1] = tensors[0].clone(), tensors[1].clone()
            elif args.swap == "randn-values":
                tensors[0].normal_(), tensors[1].normal_()
        gaps = [f"separate {i}" for i in range(args.repeats)]
    for _ in range(1 if args.separate else args.repeats):
        for gap in gaps:
            if args.separate:
                x, dy, dx = tensors
            else:
                offsets = [base, base + size + gap, base + 2 * (size + gap)]
                x, dy, dx = (pool[o:o + size].view(torch.bfloat16).view(m, n) for o in offsets)
                x.normal_(), dy.normal_()
            with torch.cuda.stream(stream):
                if args.api:
                    t = graph_time([lambda: normkit.rms_norm_bwd(x, w, dy, rstd=rstd)])
                else:
                    t = graph_time([lambda: ops.launch_bwd(x, dy, dx, weight=w, dweight=dw, rstd=rstd, eps=1e-6)])
            mods = " ".join(f"{t_.data_ptr() % (1 << 21):>7}" for t_ in (x, dy, dx))
            print(f"gap {gap:>9}{'' if args.separate else ' B'}  addr mod 2 MiB {mods}  "
                  f"{_where(x, 'x')} {_where(dy, 'dy')}  {t * 1e6:7.1f} us", flush=True)


if __name__ == "__main__":
    main()
