#!/usr/bin/env bash
# Device run Q (session 5, nvidia-h200-x2): validating design change 6 (tagged, pipelined split-row
# exchange) with the column-path compiler fix, before landing.
# GPU 0: side-by-side benchmark of every family, the dweight finisher alone and inside the backward
#        (tools/time_finisher.py), then >2**31 elements.
# GPU 1: GPU tests (properties incl. the launcher test that crashed in run P, split rows, reliability,
#        ops, failure paths), then compute-sanitizer over the split-row configurations and the sweep.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  timeout 270 python3 -m normkit bench --family all --impls normkit,native,compile,liger --markdown \
      --json $OUT/bench.json --plot $OUT/bench.png > $OUT/bench.log 2>&1; echo "bench rc=$?"
  timeout 150 python3 tools/time_finisher.py --json $OUT/finisher.json > $L/finisher.log 2>&1
  echo "finisher rc=$?"; cat $L/finisher.log | cut -c1-250
  timeout 100 python3 tools/check_huge.py > $L/huge.log 2>&1; echo "huge rc=$?"; tail -5 $L/huge.log
) &
(
  export CUDA_VISIBLE_DEVICES=1
  OUT=$L SWEEP_LIMIT=50 MEMCHECK_LIMIT=80 bash tools/device_reliability.sh gpu_tests sweep memcheck_split memcheck
) &
wait
pack_logs
