#!/usr/bin/env bash
# Device run W (session 6, nvidia-h200-x2): sweeps only, for the open gaps' notes.
# GPU 0: the RMSNorm forward where torch.compile leads by 3-5 % (16384×8192, 32768×8192 bf16;
#        16384×4096 fp32).  GPU 1: LayerNorm's backward, bf16, 16384×4096 and 16384×8192 (86-91 %
#        of copy in runs T/U: below issue 4's 90 % on ≥ 64 MB shapes), with and without prefetch.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  for spec in "bf16 16384x8192,32768x8192" "fp32 16384x4096"; do
    set -- $spec
    timeout 100 python3 tools/tune.py --kind fwd --family rms --dtype $1 --shapes $2 > $L/tune_fwd_$1.log 2>&1
    echo "tune fwd $spec rc=$?"; grep -A4 heuristic $L/tune_fwd_$1.log
  done
) &
(
  export CUDA_VISIBLE_DEVICES=1
  timeout 200 python3 tools/tune.py --kind bwd --family layer_norm --dtype bf16 --split no --prefetch also \
      --ppsm 1,2 --shapes 16384x4096,16384x8192 > $L/tune_ln_bwd.log 2>&1
  echo "tune ln bwd rc=$?"; grep -A4 heuristic $L/tune_ln_bwd.log
) &
wait
pack_logs
