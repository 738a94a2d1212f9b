#!/usr/bin/env bash
# Device run ZZV (session 14, nvidia-h200-x2, ~3 min): the GPU tests for the forward after the
# 4-byte tiles of run ZZU's build (the heuristic's forward configurations now include 4096-column
# staged LayerNorm tiles and 2048-column fused-add parts): every forward heuristic configuration
# forced, tests/test_ops.py and tests/test_features.py, launcher in check mode.
# Outcome (run ZZV): every forward configuration forced 28/28 + the public-API property tests 55
# passed; tests/test_ops.py + tests/test_features.py 153 passed; 0 failed.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0 L=$L/g0; mkdir -p "$L"
  checked_tests 200 tests/test_properties.py -k "gpu_heuristic_config and fwd or public_api"
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1 L=$L/g1; mkdir -p "$L"
  checked_tests 200 tests/test_ops.py tests/test_features.py
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
