#!/usr/bin/env bash
# Device run V (session 6, nvidia-h200-x2): the fused-add backward at N = 2048 gets 1 row × 4 warps,
# 4 programs per SM (config._BWD_PREFETCH_RESIDUAL, from run U's sweep: 69.6 against 72.4 µs).
# GPU 0: the fused-add family side by side (16384×2048 predicted ~70 µs = 90 %, was 73.2 in run T;
#        4096×2048 uses the same tile), then the sweep again at both N = 2048 shapes.
# GPU 1: the new configuration compiled and checked (every GPU heuristic configuration, the
#        launcher properties), then memcheck over the fused-add backward configurations.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  timeout 90 python3 -m normkit bench --family fused_add --impls normkit,native,compile,liger --markdown \
      --json $OUT/bench_fused.json > $OUT/bench_fused.log 2>&1; echo "bench fused rc=$?"
  timeout 100 python3 tools/tune.py --kind bwd --family fused_add --dtype bf16 --split no --prefetch only \
      --ppsm 1,2,4 --shapes 16384x2048,4096x2048 > $L/tune_fused.log 2>&1; echo "tune rc=$?"
  grep -A3 heuristic $L/tune_fused.log
) &
(
  export CUDA_VISIBLE_DEVICES=1
  NORMKIT_HYPOTHESIS_EXAMPLES=0.3 timeout 150 python3 -m pytest tests/test_properties.py -q -p no:cacheprovider \
      -rfE -k "every_gpu_heuristic or enumeration or launchers" > $L/tests.log 2>&1
  echo "tests rc=$? $(tail -1 $L/tests.log)"; grep -E "^(FAILED|ERROR)|heuristics, |missed" $L/tests.log | head
  OUT=$L FAMILIES=fused_add WIDTHS=all bash tools/device_reliability.sh memcheck_bwd
) &
wait
pack_logs
