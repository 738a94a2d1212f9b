#!/usr/bin/env bash
# Device run ZZZZI (session 19, nvidia-h200, ~1.5 min, the session's last device seconds; carry
# [".whl"]): docs/experiments/backward-sixteen-warps-an-sm.patch's copy, the GPU heuristic-config
# tests of the split backward configurations in check mode (its three new parts forced against
# float64, saved and recomputed statistics), as far as 95 s go.
# Prediction: 0 failed, no hang (each part's residency: ptxas 128 registers, 4 × 4 warps or 2 × 8 an SM).
# Outcome (session 19): 11 passed, 0 failed, no hang (the new parts' four among them); stopped at
# its 95 s. The rest of the check-mode list ran in session 20 (run ZZZZJ `checks`: 273 passed).
source tools/device_env.sh
P=/tmp/ab/sixteen
patched_copy $P docs/experiments/backward-sixteen-warps-an-sm.patch
export CUDA_VISIBLE_DEVICES=0
cd $P && export PYTHONPATH=/tmp/site:$PWD
checked_tests 95 tests/test_properties.py -k "test_every_gpu_heuristic_config and bwd and split"
cat "$L/tests.log" | tail -15
cd - >/dev/null; pack_logs
