#!/usr/bin/env bash
# (ZN_COPY_ONLY=1: only the copy sizes — how its second call ran, after the first had no side stream)
# Device run ZN (session 9, nvidia-h200-x2): the rest of run ZM's GPU tests (its 330 s limit stopped
# them at 55 %, all passing), and the copy bandwidth by size timed like the kernels (CUDA-graph
# replays, inputs rotated past L2) — run ZK timed it with events around single copies, which adds
# the launch to small copies.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  python3 - <<'PY' 2>&1 | tee $L/copy_sizes_graph.log
import torch
from normkit.bench.timing import copy_bandwidth, graph_time, input_sets_needed
dev = torch.device("cuda")
print(f"copy_bandwidth() (2 GiB, events): {copy_bandwidth(dev) / 1e9:.0f} GB/s")
side = torch.cuda.Stream()  # graph_time captures on a side stream
for mib in (64, 96, 128, 192, 256, 512, 1024, 2048):
    nbytes = mib << 20
    sets = input_sets_needed(2 * nbytes)
    srcs = [torch.randn(nbytes // 2, device=dev).to(torch.bfloat16) for _ in range(sets)]
    dsts = [torch.empty_like(s) for s in srcs]
    with torch.cuda.stream(side):
        t = graph_time([lambda i=i: dsts[i].copy_(srcs[i]) for i in range(sets)])
    print(f"copy {mib} MiB each way, graph-timed: {t * 1e6:.1f} us, {2 * nbytes / t / 1e9:.0f} GB/s")
    del srcs, dsts
PY
  [ -n "$ZN_COPY_ONLY" ] && exit 0
  NORMKIT_HYPOTHESIS_EXAMPLES=0.3 timeout 240 python3 -m pytest -q -p no:cacheprovider -rfE -W ignore::DeprecationWarning \
      tests/test_reliability.py tests/test_failure_paths.py > $L/tests0.log 2>&1
  echo "tests (reliability, failure paths) rc=$? $(tail -1 $L/tests0.log)"; grep -E "^(FAILED|ERROR)" $L/tests0.log | head
) &
[ -z "$ZN_COPY_ONLY" ] && (
  export CUDA_VISIBLE_DEVICES=1
  NORMKIT_HYPOTHESIS_EXAMPLES=0.3 timeout 260 python3 -m pytest -q -p no:cacheprovider -rfE -W ignore::DeprecationWarning \
      tests/test_ops.py tests/test_launch.py > $L/tests1.log 2>&1
  echo "tests (ops, launch) rc=$? $(tail -1 $L/tests1.log)"; grep -E "^(FAILED|ERROR)" $L/tests1.log | head
) &
wait
pack_logs
