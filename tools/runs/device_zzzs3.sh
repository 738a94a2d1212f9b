#!/usr/bin/env bash
# Device run ZZZS3 (session 18, nvidia-h200-x2, ~1 min): after ZZZS2, where every eager launch of the
# backward kernel (launches 2-4, no cache flush) took 1.52-1.54 ms at 87-88 % of DRAM peak with 6.44 GB
# moved, in the benchmark-input processes as in the N(0, 1) ones. The slow 1715-1740 µs (ZZZS) are CUDA
# graph replays of normkit.rms_norm_bwd (offset_probe --separate --api). No Nsight Systems on the
# machine (first try of this run): torch.profiler (CUPTI) times each kernel inside 20 graph replays,
# then 20 eager calls timed by events, one process of each input kind a GPU, twice.
# Prediction: in the bench processes either norm_bwd_kernel is slower inside the graph, or the
# sum_partials kernel / the gap after it carries the ~190 µs.
# First try (kernel averages only): graph events randn 1529.6 / 1529.4 µs a call, kernels inside
# 1522.7 + 43.3 / 1521.0 + 42.1; bench 1671.9 / 1660.2, kernels 1530.6 + 48.2 / 1530.7 + 47.6 (eager
# 1580 against 1782-1863). So the kernels are not slower in the bench processes; the ~130 µs a call
# is outside them. Second try (this version): the gaps between the activities.
# Second try: profiled spans randn 1529.5 / 1529.9 µs a replay, bench 1533.1 / 1534.8 — yet the same
# processes' unprofiled graph replays: randn 1530.0 / 1531.0, bench 1709.6 / 1707.8. The finisher
# starts ~40 µs before the backward's last program ends (programmatic dependent launch) in both.
# Third try (this version): each kind with and without PDL (normkit.ops.dependent_launch → False).
# Third try: unprofiled graph replays randn 1529.0 / 1531.0 (without PDL 1529.8 / 1527.8), bench 1704.8
# / 1702.2 (without PDL 1668.3 / 1704.3); profiled spans 1530-1536 in all eight. Not PDL.
# Fourth try (this version, PDL as shipped): the replays timed again after the profiler, after 3 s
# idle, and once more — is the slowness transient, or does profiling end it?
# Fourth try: bench 1697.6 / 1649.3 µs before the profiler, then 1535.8 / 1535.7 after it, 1538.3 /
# 1538.4 after 3 s idle, 1539.5 / 1537.7 again; randn 1530-1537 throughout.
# Fifth try (this version, argument noprof): no profiler at all, 12 blocks of 20 replays in a row with
# the wall time of each — transient (fast after some seconds) or ended by the profiler?
# Outcome (session 18): transient. Fifth try, bench processes: the first 20 graph replays 1703.0 /
# 1675.1 µs a call, 20 eager calls 1724.8 / 1853.4, then 12 blocks of 20 replays 1532.7-1537.4 from
# the first block on (0.03 s later); N(0, 1) processes 1529.2-1535.0 throughout. The slowness lasts
# the first ~70 ms of timed work after make_inputs, and graph_time's 10 timed replays (~15 ms) sit
# inside it: the 1644-1754 µs of the side-by-side runs are that transient, not the kernel (1.52-1.53
# ms, 99 % of copy). Cause of the transient itself unknown (not clocks, layout, values, PDL).
source tools/device_env.sh
cat > /tmp/graph_kernels.py <<'PY'
import sys
import time
import torch
from torch.profiler import ProfilerActivity, profile
import normkit
from normkit.bench.inputs import make_inputs

m, n = 131072, 8192
if sys.argv[2:] == ["nopdl"]:  # the finisher launched as an ordinary kernel
    import normkit.ops
    normkit.ops.dependent_launch = lambda device: False
    sys.argv[1] += "-nopdl"
x = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
dy = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
w = torch.randn(n, device="cuda", dtype=torch.bfloat16)
if sys.argv[1].startswith("bench"):
    x, w, dy = make_inputs((m, n), torch.bfloat16, "cuda")
_, _, rstd = normkit.rms_norm_fwd(x, w, eps=1e-6, store_rstd=True)
stream = torch.cuda.Stream()
with torch.cuda.stream(stream):
    for _ in range(3):
        normkit.rms_norm_bwd(x, w, dy, rstd=rstd)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        normkit.rms_norm_bwd(x, w, dy, rstd=rstd)
    g.replay()
torch.cuda.synchronize()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
for mode in ("graph", "eager"):
    start.record()
    for _ in range(20):
        g.replay() if mode == "graph" else normkit.rms_norm_bwd(x, w, dy, rstd=rstd)
    end.record()
    torch.cuda.synchronize()
    print(f"{sys.argv[1]} {mode}: {start.elapsed_time(end) / 20 * 1e3:.1f} us a call (events)")
if "noprof" in sys.argv[2:]:  # fifth try: no profiler, blocks of 20 replays in a row
    t0 = time.time()
    for block in range(12):
        start.record()
        for _ in range(20):
            g.replay()
        end.record()
        torch.cuda.synchronize()
        print(f"{sys.argv[1]} block {block} at {time.time() - t0:.2f} s: {start.elapsed_time(end) / 20 * 1e3:.1f} us a call")
    sys.exit(0)
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    for _ in range(20):
        g.replay()
    torch.cuda.synchronize()
for e in prof.key_averages():
    if e.device_type.name == "CUDA" and e.count:
        print(f"{sys.argv[1]} graph kernel {e.key[:40]:40s} count {e.count:4d} avg {e.device_time:.1f} us")
# the device activities in time order: each one's duration and the idle gap before it
acts = sorted((e for e in prof.events() if e.device_type.name == "CUDA"), key=lambda e: e.time_range.start)
gaps = {}
for a, b in zip(acts, acts[1:]):
    gaps.setdefault(f"{a.name[:20]} -> {b.name[:20]}", []).append(b.time_range.start - a.time_range.end)
for k, v in gaps.items():
    v.sort()
    print(f"{sys.argv[1]} gap {k}: n {len(v)} median {v[len(v) // 2]:.1f} us min {v[0]:.1f} max {v[-1]:.1f}")
span = acts[-1].time_range.end - acts[0].time_range.start
print(f"{sys.argv[1]} profiled span {span / 20:.1f} us a replay")
import time
for when in ("after the profiler", "after 3 s idle", "again"):
    if when == "after 3 s idle":
        time.sleep(3)
    start.record()
    for _ in range(20):
        g.replay()
    end.record()
    torch.cuda.synchronize()
    print(f"{sys.argv[1]} graph {when}: {start.elapsed_time(end) / 20 * 1e3:.1f} us a call (events)")
PY
(for a in noprof noprof; do CUDA_VISIBLE_DEVICES=0 timeout 60 python3 /tmp/graph_kernels.py randn $a; done) > "$L/gpu0.log" 2>&1 &
(for a in noprof noprof; do CUDA_VISIBLE_DEVICES=1 timeout 60 python3 /tmp/graph_kernels.py bench $a; done) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
