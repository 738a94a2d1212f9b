#!/usr/bin/env bash
# Device run ZG (session 8, nvidia-h200-x2): after run ZF (joined row sums won on one-row tiles,
# lost 18 µs on LayerNorm's 2 × 4096), joined sums land as a TileConfig flag for the one-row tiles
# (config._JOIN_SUMS_ROWS). Question: does a one-row joined tile beat the heuristic where it keeps
# several rows — LayerNorm bf16 16384×4096 (107 µs, 88 %) and 16384×2048 (55.5), LayerNorm fp32,
# RMSNorm and fused add at 1024? Prediction: LayerNorm bf16 16384×4096 on 1 × 4096 joined, 8
# warps, 2/SM (the fused add's tile, 129.4 µs there for 4 streams) ≈ 104-106 µs.
# GPU 0: tools/tune.py, prefetching whole-row tiles up to 8192 elements, with and without joined
# sums, 1/2/4 programs per SM. GPU 1: the GPU test files on this build (the dependent-launch test
# and every heuristic configuration compiled for real, the joined ones included).
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  for case in layer_norm:bf16:16384x4096 layer_norm:bf16:16384x2048 layer_norm:fp32:16384x4096 \
              rms:bf16:16384x1024 fused_add:bf16:16384x1024; do
    IFS=: read family dtype shape <<< "$case"
    timeout 105 python3 tools/tune.py --kind bwd --family $family --dtype $dtype --shapes $shape --split no \
        --prefetch only --joined also --ppsm 1,2,4 --max-tile 8192 --json $L/tune_${family}_${dtype}_$shape.json \
        > $L/tune_${family}_${dtype}_$shape.log 2>&1
    echo "== tune $case rc=$?"; grep -A5 "heuristic" $L/tune_${family}_${dtype}_$shape.log
  done
) &
gpu_tests_on 1 470 &
wait
pack_logs
