#!/usr/bin/env bash
# Device run ZZ (session 11, nvidia-h200-x2): the backward's 2-byte whole-row tiles of 1024 … 8192
# staged in shared memory (config._BWD_ASYNC_2_BYTE, async_stages = 3), chosen from runs ZX-ZY's
# sweeps. Prediction (those sweeps): bf16 backward 16384×N −0.6 … −7 µs (LayerNorm ×2048 55 → ~53,
# ×4096 106 → ~102, ×8192 206 → ~199; RMSNorm ×1024 30 → ~28); forwards unchanged (control).
# GPU 0: A/B, HEAD's build (base_build) against the working tree, 3 rounds alternated, every
#   family bf16 at 16384 × 1024 / 2048 / 4096 / 8192.
# GPU 1: ops and property tests (every heuristic configuration, launcher in check mode), then
#   memcheck over RMSNorm's and LayerNorm's backward configurations and racecheck (shared memory:
#   the staged loads).
# Outcome (A/B medians, base → new, µs): backward LayerNorm ×1024 31.9 → 29.3, ×2048 56.2 → 53.6,
# ×4096 106.8 → 102.9, ×8192 206.9 → 199.5; RMSNorm 30.4 → 28.2, 54.3 → 52.2, 104.2 → 98.7,
# 201.4 → 195.2; fused add 36.9 → 36.9, 68.3 → 67.6, 129.5 → 128.5, 256.5 → 257.7 (+1.3: the
# fused add keeps its prefetching tile at 8192). Forwards ±0.6 (control). Tests 135 passed
# (25/25 backward configurations); memcheck 135 runs, 0 errors (every staged tile, saved and
# recomputed statistics); racecheck 36 runs ok, cut by its limit before the staged tiles.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  ab_summarised 3 base_build . "|all|bf16|16384x1024,16384x2048,16384x4096,16384x8192"
) &
(
  export CUDA_VISIBLE_DEVICES=1
  checked_tests 200 tests/test_ops.py tests/test_properties.py -k "heuristic or staged or bwd or backward"
  FAMILIES=rms,layer_norm MEMCHECK_LIMIT=100 OUT=$L bash tools/device_reliability.sh memcheck_bwd racecheck
) &
wait
pack_logs
