#!/usr/bin/env bash
# Device run ZZZZX (session 23, nvidia-h200; carry [".whl"]): `bash tools/runs/device_zzzzx.sh go` (~3 min,
# tools/tune.py --kind fwd --config, µs, the heuristic first in the same process) — the four forwards
# where run ZZZZS's grid has torch.compile more than 2.5 % ahead, besides LayerNorm's 8192×32768 (read in
# sessions 13-14): RMSNorm and LayerNorm bf16 16384×1024 (18.9 µs against 17.6 / 18.0), LayerNorm bf16
# 4096×16384 (72.0 against 68.8) and fp32 16384×4096 (129.6 against 126.5).
# Count: 16384×1024 bf16 moves 67 MB → 15.7 µs at 4263 GB/s (83 % now; torch.compile 90 %): 16384 rows
# in 4096 programs of 4 rows (RMSNorm) / 8192 of 2 (LayerNorm) — a launch-and-tail regime, where one
# row a program or more rows a program on fewer warps change how many waves run.
# Prediction: one of the smaller tiles closes half the gap at 1024 (−3 %); ±2 % elsewhere.
# Outcome: no tile closes any of the four (µs, heuristic → best candidate): RMSNorm 16384×1024 19.0 →
#   18.6 (2 × 1024 on 4; every candidate 18.6-21.6), LayerNorm 19.0 → 18.8 (1 × 1024 on 2; 18.8-21.2),
#   LayerNorm 4096×16384 72.5 kept (74.6-134.1), fp32 16384×4096 130.4 → 129.8 (1 × 4096 on 8 re-read;
#   129.8-134.2) — all within run-to-run spread (±1-3 %): nothing changed. torch.compile's 17.6-18.0 at
#   1024 is not a tile of this kernel's (predicted −3 %: missed).
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?go} in
go)
  { for family in rms layer_norm; do
      tune_sweep fwd $family bf16 16384x1024 90 1x1024:1 1x1024:2 1x1024:4 2x1024:2 2x1024:4 4x1024:4 4x1024:8 \
          8x1024:4 8x1024:8 16x1024:8 16x1024:16
    done
    tune_sweep fwd layer_norm bf16 4096x16384 60 1x16384:32:reload 1x16384:8:reload 1x16384:16 \
        1x8192:8:col:two 1x4096:8:col:two 2x8192:16:col:two
    tune_sweep fwd layer_norm fp32 16384x4096 60 1x4096:8 1x4096:16 1x4096:8:reload 2x4096:16:reload 4x4096:16 \
        1x4096:4; } | tee "$L/sweep.log" ;;
esac
pack_logs
