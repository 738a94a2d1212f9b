#!/usr/bin/env bash
# Device run ZZZZZI (session 27, nvidia-h200; carry [".whl"]), the session's last ~6 min of device time:
#  - `sweep` (~2 min; tools/tune.py --config, µs, the heuristic first in the same process):
#    LayerNorm's bf16 forward past 16384 without a residual (72-80 % of copy: centered-pass column tiles at
#    32768 / 65536, capped 1 × 8192 parts at 131072) on the fused LayerNorm's staged parts (1 × 2048 on 4,
#    eight an SM asked, three deep, holding the previous row block: 90-93 % with twice the bytes since
#    design change 32's paired wait; before it, plain LayerNorm's staged parts lost at 2048×131072, 397.8-
#    480.2 against 354.4) and 1 × 4096 on 4 / 8; LayerNorm's bf16 backward at 4096×16384 / 8192×32768 (81 /
#    86 %) on parts of two rows (one exchange for two rows) and 1 × 4096 at 16384; RMSNorm's at 4096×16384
#    (88 %) on two-row parts. Count: forward parts read x once and write y once (the minimum); the
#    backward's two-row parts hold two rows of x and dy a block (2 × 2048 on 4 warps: 64 values a thread of
#    each — ptxas may spill; r128 variants on 8 warps).
#    Prediction: LayerNorm's forward staged 1 × 2048 ≥ 88 % at 65536 / 131072 (−15 to −20 %), at 32768
#    −5 to −10 %; the two-row backward parts ±5 % (fewer exchanges, more registers).
#  Outcome (same session, 39 s): every candidate LOST. LayerNorm's forward staged parts: 8192×32768 1 × 2048
#    376.8 / 1 × 4096 on 4 340.1 / on 8 384.3 against the centered-pass tiles' 318.1; 4096×65536 390.2 /
#    357.3 / 408.7 against 350.8; 2048×131072 442.1 / 357.6 / 415.7 against the capped parts' 323.5 — the
#    paired wait did not turn them round (the fused LayerNorm's win is its own). Backward: LayerNorm
#    4096×16384 two-row parts 121.6 (on 8 capped 133.2), 1 × 4096 118.1 against 117.0; 8192×32768 469.5 /
#    536.5 against 439.7; RMSNorm 4096×16384 112.9 / 114.1 against 108.6. Nothing landed.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?sweep} in
sweep)
  { tune_sweep fwd layer_norm bf16 8192x32768,4096x65536,2048x131072 100 1x2048:4:split:a3:p8 \
        1x4096:4:split:a3:p4 1x4096:8:split:a3:p4
    tune_sweep bwd layer_norm bf16 4096x16384,8192x32768 70 2x2048:4:split:a3:p2 2x2048:8:split:a3:p2:r128 \
        1x4096:4:split:a3:p2
    tune_sweep bwd rms bf16 4096x16384 30 2x2048:4:split:a3:p2 2x2048:8:split:a3:p2:r128
  } 2>&1 | tee "$L/sweep.log" ;;
esac
pack_logs
