#!/usr/bin/env bash
# Device run I (session 3, nvidia-h200-x2). GPU 0 alone: the side-by-side benchmark of every family,
# then tuning sweeps (fp32, QK-norm rows, LayerNorm, fused add). GPU 1: the correctness jobs that
# timed out in run H under three-way compile contention (reliability tests, test_patch, sweep +
# memcheck), each with a longer limit. Logs are packed into $OUT/logs.tar.gz (8 files come back).
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  timeout 300 python3 -m normkit bench --family all --impls normkit,native,compile,liger --markdown \
      --json $OUT/bench.json --plot $OUT/bench.png > $OUT/bench.log 2>&1; echo "bench rc=$?"
  timeout 60 python3 tools/tune.py --kind bwd --dtype fp32 --shapes 16384x4096 --split no > $L/tune_fp32.log 2>&1
  timeout 70 python3 tools/tune.py --kind bwd --shapes 524288x128,16384x1024 --split no > $L/tune_small.log 2>&1
  timeout 50 python3 tools/tune.py --kind bwd --family layer_norm --shapes 16384x4096 --split no > $L/tune_ln.log 2>&1
  timeout 50 python3 tools/tune.py --kind bwd --family fused_add --shapes 16384x4096 --split no > $L/tune_fa.log 2>&1
  tail -4 $L/tune_*.log
) &
(
  export CUDA_VISIBLE_DEVICES=1
  NORMKIT_HYPOTHESIS_EXAMPLES=0.3 timeout 480 python3 -m pytest tests/test_reliability.py tests/test_properties.py \
      -q -p no:cacheprovider -rfE -W ignore::DeprecationWarning > $L/reliability.log 2>&1
  echo "reliability rc=$? $(tail -1 $L/reliability.log)"; grep -E "^(FAILED|ERROR)|configurations|heuristics, |missed" $L/reliability.log
) &
(
  export CUDA_VISIBLE_DEVICES=1
  timeout 480 python3 -m pytest tests/test_patch.py -q -p no:cacheprovider -rfE > $L/patch.log 2>&1
  echo "test_patch rc=$? $(tail -1 $L/patch.log)"; grep -E "^(FAILED|ERROR)" $L/patch.log
) &
(
  export CUDA_VISIBLE_DEVICES=1
  OUT=$L SWEEP_LIMIT=200 MEMCHECK_LIMIT=290 timeout 500 bash tools/device_reliability.sh sweep memcheck > $L/sanitizers.out 2>&1
  grep -v "^ *$" $L/sanitizers.out | tail -8
) &
wait
tar czf $OUT/logs.tar.gz -C $OUT logs && rm -rf $L
