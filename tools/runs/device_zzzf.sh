#!/usr/bin/env bash
# Device run ZZZF (session 15, nvidia-h200-x2, ~4 min): the backward's 2-byte split parts on two
# programs an SM (config._PAIRED_SPLIT: LayerNorm 2 × 2048 on 4 warps, every family's rows of
# 8192 < N ≤ 16384 too; _PAIRED_SPLIT_RMS: RMSNorm and the fused add 1 × 4096 on 4 warps), from run
# ZZZE's sweep. Setup here: `.ab_base` = the working tree with config._split_parts as before (one
# program an SM: 2 × 4096 / 1 × 8192 on 8 warps); carry [".whl", ".ab_base"].
#  - GPU 0: A/B, 2 rounds, every family bf16 at 4096×16384, 8192×32768, 4096×65536, 2048×131072.
#  - GPU 1: GPU tests, launcher in check mode: every backward heuristic configuration with split
#    rows forced onto small problems against float64, the split-row tests, the 20-run bitwise
#    determinism tests (2048×20000 takes the new parts).
# Count: e.g. LayerNorm 8192×32768 moves 3 × 512 MiB → 383 µs at 4206 GB/s (632 = 61 % in run ZZZA).
# Prediction (run ZZZE): LayerNorm −8 to −12 % (8192×32768 638 → ~590, 4096×65536 689 → ~605),
# RMSNorm −8 to −10 % (553 → ~510, 592 → ~530, 4096×16384 140 → ~127), the fused add −2 %.
# Outcome (2 rounds, medians, µs): LayerNorm 161.8 → 148.2, 631.8 → 578.1, 683.3 → 598.2, 709.5 →
# 617.9; RMSNorm 138.5 → 125.7, 550.6 → 502.3, 583.3 → 523.3, 572.3 → 544.6; the fused add 171.3 →
# 164.3, 688.2 → 669.5, 710.9 → 694.5 and 2048×131072 709.3 → 755.8 (+6.5 %: its rows wider than
# 65536 keep 1 × 8192 on 8 warps); forwards ±1-2 % (unchanged). Met but the fused add at 131072.
# Tests: 82 passed, 1 skipped (every split backward configuration 5/5, split rows, bitwise 20 runs).
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  ab_summarised 2 "$PWD/.ab_base" "$PWD" "_w|all|bf16|4096x16384,8192x32768,4096x65536,2048x131072"
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  checked_tests 210 tests/test_properties.py tests/test_split_rows.py tests/test_reliability.py \
      -k "gpu_heuristic_config and bwd and split or test_split_rows or bitwise"
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
