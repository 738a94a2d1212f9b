#!/usr/bin/env bash
# Device run ZZG (session 12, nvidia-h200-x2, the session's last ~5 device minutes): the final build.
# GPU 0: QK-norm rows side by side (normkit, native, compile, Liger; 524288×128 and 262144×256, every
#   family), with evict_first now only on forward rows of ≥ 2048 (run ZZF: short rows lost 1-3 µs).
#   Prediction: forwards back to run ZZF's base (RMSNorm ×128 ~66.7, LayerNorm ~68.1); backwards as
#   in run ZZF (RMSNorm 101, LayerNorm 102-104, fused add 131-136). Then forward tile sweeps with
#   evict_first in place (the forward is the last issue-4 gap): RMSNorm and LayerNorm bf16 16384×4096.
# GPU 1: the GPU test files run ZZF's limit cut (test_ops, test_failure_paths, test_launch: this
#   session's per-head staged test and launch_fitted fix among them), then a forward sweep of
#   RMSNorm fp32 16384×4096 (compile 127 µs against normkit's 132 in run ZZF).
# Outcome (copy 4171 GB/s): short-row forwards back (RMSNorm ×128 66.9 µs = 96 %, ×256 67.2;
# LayerNorm 68.1 / 68.0; compile 64.8-65.9, Liger 66.9-67.5); backwards RMSNorm 102 / 102 (compile
# 139 / 116), fused add 132 / 136 (compile 227 / 215), LayerNorm 104 / 102 (compile 170 / 134),
# all ≥ 93 % of copy. Forward sweeps: no tile ahead of the heuristic by more than 0.6 µs (RMSNorm
# bf16 ×4096 67.2 vs 66.6, LayerNorm 67.1 = best, RMSNorm fp32 131.9 vs 130.1). GPU tests left
# by run ZZF's cut (test_ops, test_failure_paths, test_launch): 154 passed, 0 failed.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  timeout 120 python3 -m normkit bench --family all --impls normkit,native,compile,liger --shapes 524288x128,262144x256 \
      --dtypes bf16 --markdown --json "$OUT/bench_qk.json" > "$L/bench_qk.log" 2>&1
  echo "bench qk rc=$?"; grep -E "^bf16" "$L/bench_qk.log" | head -30
  for spec in rms:16384x4096 layer_norm:16384x4096; do
    timeout 75 python3 tools/tune.py --kind fwd --family ${spec%%:*} --shapes ${spec#*:} --each --json $L/tune_fwd_${spec%%:*}.json \
        > $L/tune_fwd_${spec%%:*}.log 2>&1
    echo "tune fwd $spec rc=$?"; grep -A5 " heuristic " $L/tune_fwd_${spec%%:*}.log | cut -c1-200
  done
) &
(
  export CUDA_VISIBLE_DEVICES=1
  timeout -s INT -k 20 220 python3 -m pytest tests/test_ops.py tests/test_failure_paths.py tests/test_launch.py -q \
      -p no:cacheprovider -rfE -W ignore::DeprecationWarning > $L/tests_rest.log 2>&1
  echo "tests rc=$? $(tail -1 $L/tests_rest.log)"; grep -E "^(FAILED|ERROR)" $L/tests_rest.log | head
  timeout 70 python3 tools/tune.py --kind fwd --family rms --dtype fp32 --shapes 16384x4096 --each --json $L/tune_fwd_fp32.json \
      > $L/tune_fwd_fp32.log 2>&1
  echo "tune fwd fp32 rc=$?"; grep -A5 " heuristic " $L/tune_fwd_fp32.log | cut -c1-200
) &
wait
pack_logs
