#!/usr/bin/env bash
# Device run ZZZQ (session 17, nvidia-h200-x2, ~4 min; carry [".whl"]): RMSNorm bf16 131072×8192's
# backward spread (1540-1747 µs across side-by-side runs, torch.compile 1684-1697 meanwhile; 1552 in
# run ZZZI, 1717 in ZZZO). Is it per process (each process allocates its 6.4 GB anew: physical pages,
# TLB reach) or per machine? Five fresh processes on each GPU, normkit and torch.compile in each; then
# on GPU 1 the heuristic's tile with other persistent grid sizes (tools/tune.py --grids).
# Prediction: per process — some processes near 1550, others near 1720, torch.compile flat.
# Outcome: per process, yes. normkit bwd 1659 / 1547 / 1597 / 1549 / 1543 (GPU 0), 1605 / 1545 / 1724 /
# 1723 / 1546 (GPU 1) µs; torch.compile 1685-1697 in each. Grids (a slow process): 132 programs 1735.5,
# 66: 2248.8, 264: 1750.7. The cause: BENCHMARKS "Session 17" (tools/offset_probe.py's calls after it).
source tools/device_env.sh
for gpu in 0 1; do
  (
    export CUDA_VISIBLE_DEVICES=$gpu
    for i in 1 2 3 4 5; do
      timeout 100 python3 -m normkit bench --family rms --impls normkit,compile --dtypes bf16 --shapes 131072x8192 \
          --json "$L/spread_${gpu}_$i.json" > "$L/spread_${gpu}_$i.log" 2>&1
      python3 -c "
import json, sys
rows = json.load(open(sys.argv[1]))['results']
print('gpu $gpu process $i', ' '.join(f\"{r['impl']} bwd {r['bwd_s'] * 1e6:.0f}\" for r in rows if 'bwd_s' in r))" "$L/spread_${gpu}_$i.json"
    done
    if [ $gpu = 1 ]; then
      timeout 150 python3 tools/tune.py --kind bwd --family rms --dtype bf16 --shapes 131072x8192 \
          --grids heuristic,66,132,264 2>&1 | grep -vE "^\s*$" | tail -8
    fi
  ) > "$L/gpu$gpu.log" 2>&1 &
done
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
