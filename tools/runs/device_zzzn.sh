#!/usr/bin/env bash
# Device run ZZZN (session 17, nvidia-h200-x2, ~8 min; carry [".whl", ".ab_base"], `.ab_base` = HEAD
# before design change 16): checks and numbers after design change 16 (the backward's split parts
# re-reading the previous row block after the exchange; run ZZZM's A/B).
#  - GPU 0: GPU tests, launcher in check mode (every split backward configuration forced onto small
#    problems against float64 — two reload configurations added —, split rows, 20-run bitwise), then
#    compute-sanitizer memcheck over every split backward configuration the heuristic picks.
#  - GPU 1: RMSNorm bf16's A/B (ZZZM's lost to the log-name clash), 3 rounds, with LayerNorm bf16
#    8192×32768 as the control; then the side-by-side grid (BENCHMARKS "Current numbers").
# Prediction (ZZZL's sweep): RMSNorm bf16 8192×32768 510 → 493, 4096×65536 525 → 516, 131072 /
# 262144 within ±3 %; control ±1 %. Tests and memcheck: 0 failures, 0 errors.
# Outcome: tests 112 passed, 1 skipped, 0 failed (8 split backward configurations, 16 launches); memcheck
# 96 runs, 0 errors. A/B (bwd, medians, µs): RMSNorm bf16 8192×32768 502.8 → 488.5, 4096×65536 520.5 →
# 501.9, but 2048×131072 541.0 → 589.7 and 1024×262144 557.9 → 599.7: RMSNorm's rows wider than
# 65536 keep their parts without reload (_PAIRED_SPLIT_RELOAD_MAX); control 526.9 → 523.7. The
# side-by-side grid ran with those two losing shapes: repeated in run ZZZO.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  checked_tests 300 tests/test_properties.py tests/test_split_rows.py tests/test_reliability.py \
      -k "gpu_heuristic_config and bwd and split or test_split_rows or bitwise"
  memcheck_split bwd 200
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  ab_summarised 3 "$PWD/.ab_base" "$PWD" "_rb|rms|bf16|8192x32768,4096x65536,2048x131072,1024x262144" \
      "_lb|layer_norm|bf16|8192x32768"
  side_by_side 300
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
