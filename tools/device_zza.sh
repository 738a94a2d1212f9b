#!/usr/bin/env bash
# Device run ZZA (session 11, nvidia-h200-x2): the build with staged backward loads (run ZZ's A/B),
# side by side and checked.
# GPU 0: every family side by side (normkit, native, compile, Liger): BENCHMARKS' current numbers.
#   Prediction: LayerNorm bf16 backward 16384×2048 ≥ 90 % of copy (~53 µs), ×4096 ~102; RMSNorm
#   ×1024 ~28, ×2048 ~52, ×4096 ~99, ×8192 ~195; forwards and fp32 as in run ZU.
# GPU 1: the GPU test files (device_reliability.sh gpu_tests), then racecheck over the staged tiles.
# Outcome: (filled in after the run)
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  side_by_side 340
) &
(
  export CUDA_VISIBLE_DEVICES=1
  gpu_tests_on 1 270
  ( OUT=$L RACECHECK_LIMIT=70 bash tools/device_reliability.sh racecheck_only )
) &
wait
pack_logs
