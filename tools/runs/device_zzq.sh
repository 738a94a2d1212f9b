#!/usr/bin/env bash
# Device run ZZQ (session 13, nvidia-h200, ~2 min): (1) memcheck over every forward tile that re-reads
# its row (labels "oner": 8 tiles × 2 widths × the three families, the capped 1 × 32768 among
# them); (2) the forward at 16384×2048 / ×4096 against a graph-timed copy of the same bytes, in one
# process (the bar for rows of 2048: run ZN put a 64 MiB copy at ~96 % of the 2 GiB copy).
# Prediction: 0 memcheck errors; the ×2048 forwards at ~96-97 % of their own-size copy.
# Outcome (run ZZQ): memcheck 48 runs (16 problems × 3 families), 0 errors. Copy 4150 GB/s (2 GiB);
# 16384×2048: a copy of the same bytes 33.7 µs = 96.0 % of it; RMSNorm 34.3 µs = 98.3 % of its own
# copy (94.3 % of 2 GiB), LayerNorm 34.4 = 97.8 % (93.9 %). 16384×4096: copy 65.1 = 99.3 %; RMSNorm
# 66.3 = 98.2 % (97.5 %), LayerNorm 67.1 = 97.0 % (96.4 %).
source tools/device_env.sh
SANITIZER=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 "$SANITIZER" --tool memcheck --target-processes all \
  python3 tools/sanitize_sweep.py --kind fwd --split exclude --only oner > "$L/memcheck_reload.log" 2>&1
echo "memcheck (exit $?): $(grep -c ': ok (' "$L/memcheck_reload.log") runs ok, $(grep -c FAIL "$L/memcheck_reload.log") failed"
grep -E "ERROR SUMMARY|sanitize_sweep:" "$L/memcheck_reload.log" | sort | uniq -c
python3 - <<'PY'
import torch
from normkit import ops
from normkit.bench.timing import copy_bandwidth, graph_time, input_sets_needed
dev = torch.device("cuda")
bw = copy_bandwidth(dev)
side = torch.cuda.Stream()
print(f"copy bandwidth (2 GiB) {bw / 1e9:.0f} GB/s")
for m, n in ((16384, 2048), (16384, 4096)):
    nbytes = 2 * m * n * 2
    sets = input_sets_needed(nbytes)
    xs = [torch.randn(m, n, device=dev, dtype=torch.bfloat16) for _ in range(sets)]
    ys = [torch.empty_like(x) for x in xs]
    w, b = torch.ones(n, device=dev, dtype=torch.bfloat16), torch.zeros(n, device=dev, dtype=torch.bfloat16)
    rstd, mean = torch.empty(m, device=dev), torch.empty(m, device=dev)
    with torch.cuda.stream(side):
        t_copy = graph_time([lambda i=i: ys[i].copy_(xs[i]) for i in range(sets)])
        row = [f"{m}x{n}: copy {t_copy * 1e6:.1f} us ({nbytes / t_copy / 1e9:.0f} GB/s = {100 * nbytes / t_copy / bw:.1f} % of 2 GiB)"]
        for rms in (True, False):
            t = graph_time([lambda i=i: ops.launch_fwd(xs[i], ys[i], weight=w, bias=None if rms else b, mean=None if rms else mean,
                                                       rstd=rstd, eps=1e-5, is_rms_norm=rms) for i in range(sets)])
            row.append(f"{'rms' if rms else 'layer_norm'} {t * 1e6:.1f} us = {100 * t_copy / t:.1f} % of its copy, {100 * nbytes / t / bw:.1f} % of 2 GiB")
    print("; ".join(row), flush=True)
PY
pack_logs
