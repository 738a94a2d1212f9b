#!/usr/bin/env bash
# Device run ZZT (session 14, nvidia-h200-x2, ~8 min).
# Found in run ZZS's A/B: 4-byte backward rows of 65536 take 16.2-16.7 ms (fp32 4096×65536: the
# fused add 16188-16280 µs, LayerNorm 16682-16700 on main) — 12× their 2-byte time for twice the
# bytes; LayerNorm's 2 × 4096 parts (this build) 1442-1453. The 1 × 8192 split part holds 8192
# fp32 values of x, dy, the weight, the prefetched next row and the dweight partial on 8 warps
# (32 a thread each): ptxas at 255 registers spills even in bf16 (16-68 B), so in fp32 it spills
# most of them (local memory: the 12×).
#  - GPU 0: split-part sweeps in fp32 (tools/tune.py --config, each family, 4096×65536 and
#    8192×32768): parts of 4096 / 2048 columns, 1-2 rows, 8-16 warps, with and without prefetch;
#    then the backward's forced heuristic configurations (check mode; run ZZS ran out of time
#    before them).
#  - GPU 1: every family side by side (normkit, native, compile, Liger): BENCHMARKS' current
#    numbers for this build (its fp32 changes are outside the grid, which is bf16 but for 16384×4096).
# Prediction: parts of 8-16 KB of x (fp32: 2 × 2048 / 1 × 4096) at 1.3-1.6 ms (50-60 % of copy)
# for every family; side by side: LayerNorm / the fused add at 65536-131072 as run ZZS's A/B.
# Outcome (run ZZT): fp32 split parts (µs): 1 × 4096 on 16 warps with prefetch the best or within
# 3-7 % of it everywhere — RMSNorm 975.4 (4096×65536; main 13708) / 1030.8 (8192×32768; best 965.9
# for 2 × 2048 on 16), the fused add 1243.3 (main 16388) / 1245.2 (best 1207.5), LayerNorm 1045.4
# (this build's 2 × 4096 1410.3) / 1110.5 (best 1096.9 on 8 warps; 2 × 4096 14872 at 8192×32768).
# Backward configurations (check mode): 31 passed, 0 failed, 17/33 run before the limit. Side by
# side (copy 4232 GB/s): BENCHMARKS' current numbers, docs/bench_h200_run_zzt.json.
source tools/device_env.sh
t() { timeout 100 python3 tools/tune.py "$@" 2>&1 | grep -E "each|heuristic|MISMATCH|Error"; }
(
  export CUDA_VISIBLE_DEVICES=0
  for fam in rms fused_add layer_norm; do
    t --kind bwd --family $fam --dtype fp32 --shapes 4096x65536,8192x32768 --each --config 1x4096:8:split:pf \
        --config 1x4096:16:split:pf --config 1x4096:8:split --config 2x2048:8:split:pf --config 2x2048:16:split:pf \
        --config 1x2048:8:split:pf --config 2x4096:8:split:pf
  done
  checked_tests 150 tests/test_properties.py -k "gpu_heuristic_config and bwd"
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  side_by_side 540
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log"; tail -5 "$L/gpu1.log"
pack_logs
