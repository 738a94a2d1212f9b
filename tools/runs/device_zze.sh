#!/usr/bin/env bash
# Device run ZZE (session 12, nvidia-h200-x2): backward tiles for short rows (QK-norm heads of 128
# and 256), where run ZZD's cut sweep found 16 rows × 128 on 1 warp, 4 an SM, loads staged 3 deep:
# 101.5 µs against 116 for the heuristic (32 × 128, 2 warps, 4/SM, unstaged), RMSNorm 524288×128 bf16.
# Count: x, dy read and dx written, 3 × 134 MB = 403 MB → 95.8 µs at 4205 GB/s; 101.5 = 94 %.
# Prediction: staged short-row tiles win every family by 10-15 µs; more programs an SM (8) helps
# while they fit (16 × 128 × 2 B × 2 loads × 3 stages = 24 KB of shared memory a program).
# GPU 0: RMSNorm and LayerNorm 524288×128, RMSNorm 262144×256; GPU 1: fused add 524288×128, then the
# GPU test files (this session's forward evict_first, fp32 plain 4096 backward, launch_fitted fix).
# Outcome (copy 4238 GB/s; one timing a config): staged tiles won every family. RMSNorm ×128: 16 × 128
# on 1 warp, 4/SM, 3 stages 101.5 µs against the heuristic's 113.8; LayerNorm ×128: 8 × 128 on 1
# warp, 8/SM 107.9 against 135.5 (RMSNorm's tile 121.6); fused add ×128: 16 × 128 on 2 warps, 4/SM
# 130.6 against 171.4; RMSNorm 262144×256: 8 × 256 on 1 warp, 4/SM 101.2 against 156.5. Single
# timings scatter by up to ~15 µs between neighbouring configs (RMSNorm 8 × 128 3 vs 4 stages:
# 120.9 / 106.4), hence run ZZF's A/B. GPU tests: 34 failed — the forward's column tiles did not
# compile (evict_first patch: a @triton.jit helper's str default), fixed before run ZZF.
source tools/device_env.sh
sweep() {  # TAG FAMILY SHAPE BLOCK_MS
  timeout 150 python3 tools/tune.py --kind bwd --family $2 --shapes $3 --split no --prefetch no \
      --block-m $4 --warps 1,2,4 --ppsm 4,8 --async-stages 3,4 --each --json $L/tune_$1.json > $L/tune_$1.log 2>&1
  echo "tune $1 rc=$?"; grep -A5 " heuristic " $L/tune_$1.log | cut -c1-220
  grep "^  each" $L/tune_$1.log | sort -k3 -n | head -4 | cut -c1-220
}
(
  export CUDA_VISIBLE_DEVICES=0
  sweep rms128 rms 524288x128 8,16,32
  sweep ln128 layer_norm 524288x128 8,16,32
  sweep rms256 rms 262144x256 4,8,16
) &
(
  export CUDA_VISIBLE_DEVICES=1
  sweep fused128 fused_add 524288x128 8,16,32
  gpu_tests_on 1 280
) &
wait
pack_logs
