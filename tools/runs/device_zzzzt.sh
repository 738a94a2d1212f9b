#!/usr/bin/env bash
# Device run ZZZZT (session 23, nvidia-h200; carry [".whl"]): `bash tools/runs/device_zzzzt.sh sweep` (~5 min,
# tools/tune.py --config, µs, the heuristic first in the same process) — after run ZZZZS's `lnsweep` won
# LayerNorm's split parts at fp32 262144 (799.8 → 648.8), fp32 x / bf16 y (610.4 → 504.1, 633.4 → 512.3)
# and the fused LayerNorm in the fused add's 8 KB parts (759.2 → 687.9, 803.4 → 696.1):
#  - LayerNorm forward, bf16 8192×32768 / 4096×16384 (torch.compile's 287 / 68.8 beat normkit's 318 / 72
#    in run ZZZZS's grid): 16 KB and 8 KB parts capped, against the centred tiles / the whole row.
#  - fp32 x / bf16 y at 1024×262144; the fused LayerNorm fp32 (8 KB parts: 1 × 2048 on 8), bf16 at
#    8192×32768 / 1024×262144 and with an fp32 residual.
#  - the recomputing LayerNorm backward (50 % of copy at bf16 2048×131072 against the saved
#    statistics' 67 %): other split parts.
# Count (fused LayerNorm, 8 KB parts, 4 an SM): 132 × 4 programs × 2 tensors × 8 KB = 8.7 MB in flight,
# as the fused add's. Prediction: split parts −10 to −20 % wherever the staged tiles run now (fp32
# fused LayerNorm, 262144); ±5 % at bf16 32768 (the centred tiles read x three times but from L2).
# Outcome: the first line failed (":two" needs ":col"; rerun in ZZZZU). fp32 x / bf16 y 1024×262144
#   547.7 split against 649.4 staged; the fused LayerNorm fp32 1 × 2048 parts 1296.2 / 1329.1 against
#   1544.8 / 1609.5 staged at 65536 / 131072, but its whole rows of 32768 win (fp32 1042.1 against
#   1282.7; bf16 554.0 against 674.5); bf16 1024×262144 725.7 against 841.6; bf16 x / fp32 residual
#   991.4 against 1176.4 → design change 28 (predictions held, the 32768 rows aside). The recomputing
#   backward: the heuristic's 2 × 2048 on 4 warps two an SM best at both shapes (762.4 / 148.9).
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?sweep} in
sweep)
  { tune_sweep fwd layer_norm bf16 8192x32768,4096x16384 90 1x8192:4:split:p4:r128 1x4096:4:split:p4:r128 \
        1x4096:8:split:p4 1x16384:32:two:r32
    TUNE_ARGS="--out-dtype bf16" tune_sweep fwd layer_norm fp32 1024x262144 40 1x4096:4:split:p4:r128
    TUNE_ARGS="--residual" tune_sweep fwd layer_norm fp32 8192x32768,4096x65536,2048x131072 120 1x2048:8:split:p4 \
        1x4096:4:split:p4:r128 1x4096:8:split:p4
    TUNE_ARGS="--residual" tune_sweep fwd layer_norm bf16 8192x32768,1024x262144 60 1x4096:8:split:p4
    TUNE_ARGS="--residual --residual-dtype fp32" tune_sweep fwd layer_norm bf16 4096x65536 40 1x4096:8:split:p4 \
        1x2048:8:split:p4
    TUNE_ARGS="--recompute" tune_sweep bwd layer_norm bf16 2048x131072,4096x16384 120 2x2048:4:split:pf:p2 \
        1x2048:4:split:pf:p3 1x4096:4:split:pf:p2 1x4096:8:split:pf:p2 2x1024:4:split:pf:p2 1x2048:4:split:pf:p2
  } | tee "$L/sweep.log" ;;
esac
pack_logs
