#!/usr/bin/env bash
# Device run ZZP (session 13, nvidia-h200-x2): the build with the forward's reload tiles, register
# cap and RMSNorm's column-tile L2 hints (run ZZO's A/Bs), checked and side by side.
#  - GPU 0: the GPU tests touching the forward (tests/test_ops.py, every GPU heuristic
#    configuration forced, the public API property tests, tests/test_features.py) with the launcher
#    in check mode (maxnreg is a launch option: the key must carry it).
#  - GPU 1: every family side by side (normkit, native, compile, Liger): BENCHMARKS' current numbers.
# Outcome (run ZZP): GPU tests, check mode: 151 passed (test_ops, test_features), 111 passed
# (test_properties' GPU heuristic configurations and public API: fwd 24/24, bwd 33/33 configurations
# run), 0 failed. Side by side (copy 4243 GB/s): BENCHMARKS' current numbers
# (docs/bench_h200_run_zzp.json).
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  checked_tests 130 tests/test_ops.py tests/test_features.py && mv "$L/tests.log" "$L/tests_ops_features.log"
  checked_tests 270 tests/test_properties.py -k "gpu_heuristic_config or public_api"
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  side_by_side 420
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log"; tail -5 "$L/gpu1.log"
pack_logs
