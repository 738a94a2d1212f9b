#!/usr/bin/env bash
# Device run ZZZX (session 18, nvidia-h200-x2, ~6 min; carry [".whl"]): after run ZZZV.
# ZZZV: A (RMSNorm's split parts without Σg) won where the parts hold their row block (RMSNorm bf16
# 2048×131072 543.9 → 501.8, fp32 4096×16384 233.5 → 226.5, 4096×65536 914.5 → 890.9) but lost where
# the bf16 parts reload (RMSNorm 8192×32768 484.5 → 514.3, 4096×65536 508.3 → 533.8, the fused add
# +0.6-1 %); B on top of A won LayerNorm bf16 (4096×65536 598.6 → 542.5, 2048×131072 617.5 → 559.9,
# 4096×16384 145.8 → 135.7) except at 32768 (capped 8-warp parts, 524.4 → 534.7).
#  - GPU 0, in A + B: the tiles again. With 13-24 fewer registers a part (ptx_stats), holding the row
#    block may now beat reloading it at 32768 / 65536 (as at 131072, where A gained 8 %), and
#    LayerNorm's 4-warp parts may now beat its capped 8-warp ones at 32768.
#    Then memcheck over every split backward configuration.
#  - GPU 1: ZZZW's checks of A + B (check-mode tests, test_split_rows, bitwise; memcheck fwd).
# Prediction: holding (no reload) within 1 % of 470-490 at RMSNorm 8192×32768 (main reloading 484.5);
# LayerNorm 4 warps at 32768 ≤ 524; checks 0 failures, 0 errors.
# Outcome (session 18): holding beat reloading everywhere in A + B — RMSNorm bf16 8192×32768 464.4
# against 508.7 (main reloading: 484.5), 4096×65536 471.0 against 537.7; the fused add 635.3 / 632.6
# (2 × 2048) against 666.2, 649.1 against 685.2, 2048×131072 1 × 8192 held 656.5 against 700.8;
# RMSNorm fp32 4096×65536 856.2 against 877.5. LayerNorm 8192×32768 keeps its capped 8-warp parts
# (531.7 against 542.9 on 4 warps). Checks: GPU tests in check mode 124 passed, 1 skipped; memcheck
# fwd split 24 runs 0 errors; memcheck bwd split 57 runs 0 errors before its 150 s limit.
source tools/device_env.sh
AB=/tmp/ab/fewer
patched_copy $AB docs/experiments/backward-split-rms-without-sum-g.patch \
    docs/experiments/split-exchange-fewer-reductions.patch
(
  export CUDA_VISIBLE_DEVICES=0
  cd $AB && export PYTHONPATH=/tmp/site:$AB
  four="1x4096:4:split:pf:p2 1x4096:4:split:pf:p2:reload 2x2048:4:split:pf:p2 2x2048:4:split:pf:p2:reload"
  tune_sweep bwd rms bf16 8192x32768,4096x65536 100 $four
  tune_sweep bwd fused_add bf16 8192x32768,4096x65536 100 $four
  tune_sweep bwd fused_add bf16 2048x131072 60 1x8192:8:split:pf 1x8192:8:split:pf:reload 1x4096:4:split:pf:p2
  tune_sweep bwd layer_norm bf16 8192x32768 60 2x2048:4:split:pf:p2 2x2048:8:split:pf:p2:r128 \
      2x2048:4:split:pf:p2:reload
  tune_sweep bwd rms fp32 4096x65536 60 1x2048:4:split:pf:p3 1x2048:4:split:pf:p3:reload
  memcheck_split bwd 150
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  cd $AB && export PYTHONPATH=/tmp/site:$AB
  TESTS_LOG=exchange checked_tests 300 tests/test_properties.py tests/test_split_rows.py tests/test_reliability.py \
      -k "gpu_heuristic_config and split or test_split_rows or bitwise"
  memcheck_split fwd 90
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
