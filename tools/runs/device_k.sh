#!/usr/bin/env bash
# Device run K (session 3, nvidia-h200-x2): after design change 5 (prefetching backward heuristics).
# GPU 0 alone: the side-by-side benchmark of every family. GPU 1: GPU tests of every heuristic
# configuration (forced), split rows, reliability.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  timeout 250 python3 -m normkit bench --family all --impls normkit,native,compile,liger --markdown \
      --json $OUT/bench.json --plot $OUT/bench.png > $OUT/bench.log 2>&1; echo "bench rc=$?"
) &
(
  export CUDA_VISIBLE_DEVICES=1
  NORMKIT_HYPOTHESIS_EXAMPLES=0.3 timeout 330 python3 -m pytest tests/test_properties.py tests/test_split_rows.py \
      tests/test_reliability.py tests/test_ops.py -q -p no:cacheprovider -rfE -W ignore::DeprecationWarning > $OUT/tests.log 2>&1
  echo "tests rc=$? $(tail -1 $OUT/tests.log)"; grep -E "^(FAILED|ERROR)|configurations|heuristics, " $OUT/tests.log
) &
wait
