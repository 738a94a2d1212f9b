#!/usr/bin/env bash
# Device run S (session 5, nvidia-h200-x2): the final build of the session side by side (change 6,
# the finisher and QK-norm tiles, the forward's 16384-column tiles), plus two sweeps for the next
# steps: LayerNorm's forward (16384×8192 is 13 % behind torch.compile) and the short-row backward
# with the new finisher.
# GPU 0: side-by-side benchmark of every family, then the sweeps.
# GPU 1: GPU tests (properties, split rows, reliability, ops, failure paths), then memcheck.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  timeout 270 python3 -m normkit bench --family all --impls normkit,native,compile,liger --markdown \
      --json $OUT/bench.json --plot $OUT/bench.png > $OUT/bench.log 2>&1; echo "bench rc=$?"
  timeout 100 python3 tools/tune.py --kind fwd --family layer_norm --shapes 16384x8192,16384x1024 \
      --json $OUT/tune_ln_fwd.json > $L/tune_ln.log 2>&1; echo "tune ln fwd rc=$?"; grep -A3 "heuristic" $L/tune_ln.log
  timeout 90 python3 tools/tune.py --kind bwd --split no --prefetch also --ppsm 2,4 --shapes 16384x1024 \
      --json $OUT/tune_short.json > $L/tune_short.log 2>&1; echo "tune short rc=$?"; grep -A3 "heuristic" $L/tune_short.log
) &
(
  export CUDA_VISIBLE_DEVICES=1
  OUT=$L SWEEP_LIMIT=30 MEMCHECK_LIMIT=90 bash tools/device_reliability.sh gpu_tests sweep memcheck
) &
wait
pack_logs
