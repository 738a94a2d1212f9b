#!/usr/bin/env bash
# Device run ZZZW (prepared in session 17 for the next session, nvidia-h200-x2, ~6 min; carry [".whl"]):
# GPU checks of the two exchange patches of run ZZZV, applied together (A: RMSNorm's split parts
# without Σg; B: fewer reduction rounds in the exchange), before either lands. Drop B from the copy
# (the second patch line) if only A won its A/B.
#  - GPU 0: launcher in check mode: every split backward and forward configuration the heuristics pick
#    forced onto small problems against float64, tests/test_split_rows.py, the 20-run bitwise tests.
#  - GPU 1: compute-sanitizer memcheck over every split backward, then forward, configuration.
# Prediction: 0 failures, 0 errors (a lost word would show as a hang, i.e. a timeout, not a number).
# Outcome: not run as such (session 18) — its checks ran in ZZZX (GPU 1) and, on the landed
# configuration, ZZZZ (GPU 0).
source tools/device_env.sh
P=/tmp/ab/checked
patched_copy $P docs/experiments/backward-split-rms-without-sum-g.patch \
    docs/experiments/split-exchange-fewer-reductions.patch
(
  export CUDA_VISIBLE_DEVICES=0
  cd $P && export PYTHONPATH=/tmp/site:$PWD
  TESTS_LOG=exchange checked_tests 330 tests/test_properties.py tests/test_split_rows.py tests/test_reliability.py \
      -k "gpu_heuristic_config and split or test_split_rows or bitwise"
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  cd $P && export PYTHONPATH=/tmp/site:$PWD
  memcheck_split bwd 200
  memcheck_split fwd 120
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
