#!/usr/bin/env bash
# Device run R (session 5, nvidia-h200-x2): the finisher tile (G rows × 16 columns in one step) and
# the QK-norm backward tile (32 × 128, 2 warps, 4/SM), side by side; the forward's wide-row
# column tiles swept with 16384-element tiles (working set of the second pass vs L2).
# GPU 0: side-by-side benchmark of every family, the finisher alone and inside the backward,
#        forward tune of 4096×65536.
# GPU 1: GPU tests (properties, split rows, reliability, ops, failure paths), then memcheck.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  timeout 270 python3 -m normkit bench --family all --impls normkit,native,compile,liger --markdown \
      --json $OUT/bench.json --plot $OUT/bench.png > $OUT/bench.log 2>&1; echo "bench rc=$?"
  timeout 100 python3 tools/time_finisher.py --shapes 524288x128,16384x1024,16384x4096 > $L/finisher.log 2>&1
  echo "finisher rc=$?"; cut -c1-200 $L/finisher.log
  timeout 150 python3 tools/tune.py --kind fwd --shapes 4096x65536 --json $OUT/tune_fwd.json > $L/tune.log 2>&1
  echo "tune rc=$?"; grep -v "^\s*$" $L/tune.log | tail -12
) &
(
  export CUDA_VISIBLE_DEVICES=1
  OUT=$L SWEEP_LIMIT=40 MEMCHECK_LIMIT=90 bash tools/device_reliability.sh gpu_tests sweep memcheck
) &
wait
pack_logs
