#!/usr/bin/env bash
# Device run ZZZZV (session 23, nvidia-h200; carry [".whl"]): `bash tools/runs/device_zzzzv.sh go` (~4 min):
#  - verify: design change 28's last entry (bf16 x / fp32 y LayerNorm forward at 65536 in 1 × 8192 parts,
#    run ZZZZU's sweep: 446.9 against the three-read tiles' 476.2) against those tiles in one process, and
#    the check-mode GPU test of LayerNorm's forward heuristic for each x / y / residual dtype.
#  - bsweep: the fused LayerNorm's backward (dresidual_out read: 4 tensors a row, as the fused add's) on
#    its wide rows — it takes LayerNorm's 2 × 2048 parts on 4 warps, two an SM; the fused add's own parts
#    (1 × 2048 on 4 capped at 128, four an SM; 1 × 4096 on 8 capped, two an SM) and 1 × 4096 on 4.
#    Count: the fused LayerNorm's backward moves x, dy, dresidual_out in and dx out: 4 × 512 MB at
#    4096×65536 bf16 → 486 µs at the copy's 4216 GB/s. Prediction: ±5 % (the fused add's parts were
#    picked for RMSNorm's lighter math; LayerNorm's 2 × 2048 already hold 255 registers).
# Outcome: verify 472.0 → 451.7 (4096×65536), 930.0 → 896.7 (8192×65536); the heuristic test 28 passed.
#   bsweep: LayerNorm's 2 × 2048 parts win every fused-LayerNorm candidate (bf16 172.5 / 710.3 / 759.4 µs
#   = 74 / 71 / 67 %, the others 200.2-946.9); fp32 1107.6 (92 %) in the fused add's parts — ±5 % held
#   only as "no candidate wins": nothing changed.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?go} in
go)
  TUNE_ARGS="--out-dtype fp32" tune_sweep fwd layer_norm bf16 4096x65536,8192x65536 60 1x16384:32:col:two:r32 \
      | tee "$L/verify.log"
  checked_tests 120 tests/test_split_rows.py -k "layer_norm_forward_heuristic"
  { TUNE_ARGS="--residual" tune_sweep bwd layer_norm bf16 4096x16384,4096x65536,2048x131072 150 \
        1x2048:4:split:pf:p4:r128 1x4096:8:split:pf:p2:r128 1x4096:4:split:pf:p2 2x2048:8:split:pf:p2:r128
    TUNE_ARGS="--residual" tune_sweep bwd layer_norm fp32 4096x65536 60 1x2048:4:split:pf:p3:reload \
        1x2048:4:split:pf:p2; } | tee "$L/bsweep.log" ;;
esac
pack_logs
