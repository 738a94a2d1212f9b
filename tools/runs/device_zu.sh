#!/usr/bin/env bash
# Device run ZU (session 10, nvidia-h200-x2): the build to land, side by side and checked.
#  - LayerNorm's forward unmasked where whole rows fill whole tiles (EVEN_ROWS; run ZQ's A/B:
#    16384×4096 69.8 → 68.9 µs) and without the weight offset's add (run ZS's A/B: 69.2 → 68.5);
#  - launch check mode's constexpr comparison (run ZR's false alarm).
# GPU 0: every family side by side (normkit, native, compile, Liger): BENCHMARKS' current numbers.
# GPU 1: (1) LayerNorm's forward tiles at 16384×4096, bf16 and fp32, swept with the statistics
#   stored (tools/tune.py now stores them: run ZS's sweep did not, and ranked 2 × 4096 on 16 warps
#   first, 67.3 µs, which ran 73-75 in run ZT's benchmark); (2) memcheck over LayerNorm's forward
#   configurations (the unmasked loads); (3) the property and failure-path test files (runs ZS-ZT
#   ran the launcher, ops, split rows, reliability and heuristic-configuration tests on this code).
# Outcome: BENCHMARKS' current numbers (copy 4235 GB/s): LayerNorm bf16 forward 16384×4096
# 68.0 µs (93 %), the fastest measured. Sweep with statistics: bf16 heuristic 1 × 4096 on 8 warps
# best (67.9); fp32 2 × 4096 on 16 warps 130.2 against 133.5. memcheck LayerNorm forward 36 runs,
# 0 errors. Tests 107 passed, 0 failed (cut at 170 s).
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  side_by_side 330
) &
(
  export CUDA_VISIBLE_DEVICES=1
  for dt in bf16 fp32; do
    timeout 60 python3 tools/tune.py --kind fwd --family layer_norm --dtype $dt --shapes 16384x4096 \
        --json $L/tune_fwd_ln_$dt.json > $L/tune_fwd_ln_$dt.log 2>&1
    echo "tune $dt rc=$?"; grep -A3 "heuristic" $L/tune_fwd_ln_$dt.log | cut -c1-170
  done
  FAMILIES=layer_norm OUT=$L MEMCHECK_LIMIT=60 bash tools/device_reliability.sh memcheck_fwd
  checked_tests 170 tests/test_properties.py tests/test_failure_paths.py
) &
wait
pack_logs
