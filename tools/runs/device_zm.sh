#!/usr/bin/env bash
# Device run ZM (session 9, nvidia-h200-x2): the build to land, side by side and checked.
#  - the backward's grid fitted to the compiled kernel (run ZL's A/B: fp32 fused add 16384×1024
#    79.9 → 69.4 µs, ×2048 142.9 → 130.9; bf16 unchanged where the tiles fit);
#  - 2 × 1024 on 4 warps, 4 an SM, for every family; LayerNorm's own 1 × 4096 tile for 2-byte
#    elements (run ZL: 107.0 → 105.9); the fused add's fp32 1 × 4096 on 16 warps (run ZL's sweep:
#    253.5 against 280.2).
# GPU 0: every family side by side (normkit, native, compile, Liger): BENCHMARKS' current numbers;
#   then the fused add in fp32 side by side (not in the default grid).
# GPU 1: the GPU test files (every heuristic configuration compiled and checked against float64),
#   then memcheck over the fused add's and LayerNorm's backward configurations.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  timeout 320 python3 -m normkit bench --family all --impls normkit,native,compile,liger --markdown \
      --json $OUT/bench.json --plot $OUT/bench.png > $OUT/bench.log 2>&1; echo "bench rc=$?"
  timeout 90 python3 -m normkit bench --family fused_add --dtypes fp32 --shapes 16384x1024,16384x2048,16384x4096 \
      --impls normkit,native,compile,liger --markdown --json $L/bench_fused_add_fp32.json \
      > $L/bench_fused_add_fp32.log 2>&1; echo "bench fp32 fused add rc=$?"
) &
(
  export CUDA_VISIBLE_DEVICES=1
  OUT=$L TESTS_LIMIT=330 bash tools/device_reliability.sh gpu_tests
  FAMILIES=fused_add,layer_norm WIDTHS=lo MEMCHECK_LIMIT=100 OUT=$L bash tools/device_reliability.sh memcheck_bwd
) &
wait
pack_logs
