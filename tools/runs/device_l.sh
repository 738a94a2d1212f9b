#!/usr/bin/env bash
# Device run L (session 3, nvidia-h200-x2): compute-sanitizer over the final kernels (after design
# change 5 and the float64 scalar fix) on GPU 0; NCCL distributed tests again on both GPUs.
source tools/device_env.sh
( CUDA_VISIBLE_DEVICES=0 OUT=$L SWEEP_LIMIT=120 MEMCHECK_LIMIT=120 bash tools/device_reliability.sh sweep memcheck memcheck_split racecheck initcheck ) &
( timeout 150 python3 -m pytest tests/test_distributed.py -q -p no:cacheprovider -rfE > $L/distributed.log 2>&1
  echo "distributed rc=$? $(tail -1 $L/distributed.log)" ) &
wait
tar czf $OUT/logs.tar.gz -C $OUT logs && rm -rf $L
