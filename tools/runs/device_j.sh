#!/usr/bin/env bash
# Device run J (session 3, nvidia-h200-x2). GPU 0 alone: prefetch sweeps (design change 5: the
# next row block's loads issued before this block's math), fp32 / LayerNorm tiles, split parts.
# GPU 1: the GPU test files touched by the float64-scalar fix and the kernel edits.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  T="python3 tools/tune.py --kind bwd --split no --ppsm 1,2 --prefetch only"
  timeout 250 $T --shapes 16384x4096,16384x1024,4096x2048,16384x2048,16384x8192,4096x16384,524288x128 > $L/tune_pf.log 2>&1
  timeout 60 $T --dtype fp32 --shapes 16384x4096 > $L/tune_pf_fp32.log 2>&1
  timeout 50 $T --family layer_norm --shapes 16384x4096 > $L/tune_pf_ln.log 2>&1
  timeout 70 python3 tools/tune.py --kind bwd --split only --prefetch also --shapes 8192x32768,2048x131072 > $L/tune_pf_split.log 2>&1
  grep -hE "heuristic|^    " $L/tune_pf*.log | grep -v MISMATCH
) &
(
  export CUDA_VISIBLE_DEVICES=1
  NORMKIT_HYPOTHESIS_EXAMPLES=0.3 timeout 400 python3 -m pytest tests/test_reliability.py tests/test_properties.py \
      tests/test_split_rows.py tests/test_ops.py tests/test_features.py -q -p no:cacheprovider -rfE -x \
      -W ignore::DeprecationWarning > $L/tests.log 2>&1
  echo "tests rc=$? $(tail -1 $L/tests.log)"; grep -E "^(FAILED|ERROR)|configurations|heuristics, " $L/tests.log
) &
wait
tar czf $OUT/logs.tar.gz -C $OUT logs && rm -rf $L
