#!/usr/bin/env bash
# Device run ZZZJ (session 16, nvidia-h200-x2, ~4 min): RMSNorm's fp32 forward rows of 65536 / 131072
# (no residual) on the split forward (config._FWD_SPLIT_RMS_4_BYTE, from run ZZZI's sweep). Setup here:
# `.ab_base` = the working tree before the change (design change 14 in it); carry [".whl", ".ab_base"].
#  - GPU 0: A/B, 3 rounds: RMSNorm fp32 4096×65536, 2048×131072, 4096×50000 (25 ragged parts); control
#    RMSNorm bf16 4096×65536 (unchanged).
#  - GPU 1: GPU tests, launcher in check mode (every forward heuristic configuration with split rows
#    forced onto small problems against float64, the split-row tests), memcheck over the split forward.
# Count: RMSNorm fp32 4096×65536 forward moves 2 × 1 GiB = 2.15 GB → 510 µs at 4214 GB/s.
# Prediction (run ZZZI's sweep): 4096×65536 735 → ~670, 2048×131072 797 → ~716; 4096×50000 −5 to −10 %;
# backward and control ±1 %.
# Outcome (3 rounds, medians, µs): 4096×65536 730.9 → 665.9, 2048×131072 817.2 → 738.9, 4096×50000
# 537.4 → 520.3; backwards and control within ±4 µs. Met at 65536, 131072 3 % short of the sweep.
# GPU 1: forward split configurations forced against float64 all ran, test_split_rows cut at 34
# passed (0 failed; repeated in a call of its own: 72 passed, 1 skipped); memcheck 24 runs, 0 errors.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  ab_summarised 3 "$PWD/.ab_base" "$PWD" "_rf|rms|fp32|4096x65536,2048x131072,4096x50000" \
      "_rb|rms|bf16|4096x65536"
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  checked_tests 150 tests/test_properties.py tests/test_split_rows.py -k "gpu_heuristic_config and fwd and split or test_split_rows"
  memcheck_split fwd 90
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
