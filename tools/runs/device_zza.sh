#!/usr/bin/env bash
# Device run ZZA (session 11, nvidia-h200-x2): the build with staged backward loads (run ZZ's A/B),
# side by side and checked.
# GPU 0: every family side by side (normkit, native, compile, Liger): BENCHMARKS' current numbers.
#   Prediction: LayerNorm bf16 backward 16384×2048 ≥ 90 % of copy (~53 µs), ×4096 ~102; RMSNorm
#   ×1024 ~28, ×2048 ~52, ×4096 ~99, ×8192 ~195; forwards and fp32 as in run ZU.
# GPU 1: the GPU test files (device_reliability.sh gpu_tests), then racecheck over the staged tiles.
# Outcome (copy 4146 GB/s — ~2 % below run ZU's 4235, so % of copy reads ~2 % high against run ZU):
# RMSNorm backward ×1024 28.2 µs (run ZU 30.2), ×2048 51.9 (53.8), ×4096 98.8 (105), ×8192 196
# (200), 4096×2048 15.8 (16.7), 32768×8192 383 (397), 131072×8192 1714 (1712; compile 1695), fp16
# ×4096 98.6 (103); LayerNorm ×1024 29.0, ×4096 102 (105), ×8192 200, fp32 ×4096 195; fused add
# ×2048 68.0, ×4096 130, ×8192 259. Forwards as in run ZU. Geomean backward speedup over the best
# peer 1.36× (run ZU 1.33×). GPU tests 257 passed, 0 failed (cut by the limit), 25/25 backward
# configurations; racecheck over the four staged tiles: 16 runs, 0 hazards.
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
