#!/usr/bin/env bash
# Device run ZZZZ (session 18, nvidia-h200-x2, ~6 min; carry [".whl"]): design change 17 as it lands
# (ZZZY's working tree + the fp32 parts held on RMSNorm's rows ≤ 65536 and LayerNorm's ≤ 16384).
#  - GPU 1 (ZZZO's GPU): the side-by-side grid (BENCHMARKS' current numbers).
#  - GPU 0: the check-mode GPU tests (every split configuration the heuristics pick, forced, against
#    float64; test_split_rows; 20-run bitwise), then the fused add bf16 4096×16384's tiles (+3 % in
#    ZZZV / ZZZY with the 2 × 2048 parts without Σg).
# Prediction: backward as ZZZY's new column ±2 % (fp32 RMSNorm 4096×16384 ~221, LayerNorm fp32 ~224);
# RMSNorm bf16 geomean ≥ 1.44×; tests 0 failed.
# Outcome (session 18): side by side docs/bench_h200_run_zzzz.json (copy 4255 GB/s) — backward
# RMSNorm bf16 124 / 460 / 469 / 498 µs (76 / 82 / 81 / 76 % of copy), fp32 220 / 855 (86 / 88 %); the
# fused add bf16 169 / 634 / 655 / 656, fp32 289 / 1189 (Liger 286 at 4096×16384); LayerNorm bf16
# 136 / 524 / 539 / 558, fp32 224 / 930; geomean 1.47× (RMSNorm bwd). Check-mode GPU tests 122 passed,
# 1 skipped. Fused add bf16 4096×16384: 2 × 2048 168.0 / 168.2, reloading 175.1, 1 × 4096 165.1,
# 2 × 4096 on 8 175.0 (the +3 % of A not recovered by a tile change worth landing untested).
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=1
  side_by_side 300
) > "$L/gpu1.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=0 PYTHONPATH=/tmp/site:$PWD
  TESTS_LOG=final checked_tests 290 tests/test_properties.py tests/test_split_rows.py tests/test_reliability.py \
      -k "gpu_heuristic_config and split or test_split_rows or bitwise"
  tune_sweep bwd fused_add bf16 4096x16384 40 2x2048:4:split:pf:p2 2x2048:4:split:pf:p2:reload \
      1x4096:4:split:pf:p2 2x4096:8:split:pf
) > "$L/gpu0.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
