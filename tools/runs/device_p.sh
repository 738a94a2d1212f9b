#!/usr/bin/env bash
# Device run P (session 4, nvidia-h200-x2), on a build with design change 6 (tagged, pipelined split-row
# exchange; not on main: docs/change6_tagged_exchange.diff), the QK-norm tile (not on main) and the fused-add tile.
# GPU 0: the side-by-side benchmark of every family, then >2**31 elements (split rows changed).
# GPU 1: GPU tests (every heuristic configuration forced, split rows, reliability, ops), then
# compute-sanitizer memcheck over the split-row configurations and the whole sweep, racecheck.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  timeout 260 python3 -m normkit bench --family all --impls normkit,native,compile,liger --markdown \
      --json $OUT/bench.json --plot $OUT/bench.png > $OUT/bench.log 2>&1; echo "bench rc=$?"
  timeout 100 python3 tools/check_huge.py > $L/huge.log 2>&1; echo "huge rc=$?"; tail -5 $L/huge.log
) &
(
  export CUDA_VISIBLE_DEVICES=1
  NORMKIT_HYPOTHESIS_EXAMPLES=0.3 timeout 290 python3 -m pytest tests/test_properties.py tests/test_split_rows.py \
      tests/test_reliability.py tests/test_ops.py -q -p no:cacheprovider -rfE \
      -W ignore::DeprecationWarning > $L/tests.log 2>&1
  echo "tests rc=$? $(tail -1 $L/tests.log)"; grep -E "^(FAILED|ERROR)|configurations|heuristics, " $L/tests.log | head
  OUT=$L SWEEP_LIMIT=60 MEMCHECK_LIMIT=90 bash tools/device_reliability.sh sweep memcheck_split memcheck racecheck
) &
wait
pack_logs
