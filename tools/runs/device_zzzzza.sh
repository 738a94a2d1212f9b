#!/usr/bin/env bash
# Device run ZZZZZA (session 23, nvidia-h200; carry [".whl"]): `bash tools/runs/device_zzzzza.sh ab` (~3 min) —
# the forward's narrow rows (whole rows of ≤ 1024, ops._NARROW_FWD_N) unmasked and without a zero weight
# offset's add for RMSNorm and the fused add (docs/experiments/forward-narrow-rows.patch; LayerNorm
# already ran both ways). A/B, 2 rounds, tools/tune.py's heuristic time in each build (µs): the tree
# against a copy with the patch.
# Count (ptxas, sm_90, SASS a program): RMSNorm 4 × 1024 on 8 warps 328 → 304, 1 × 1024 on 1 384 → 328,
# QK-norm's 32 × 128 on 4 528 → 464, 16 × 256 536 → 472; the fused add 4 × 1024 408 → 368, 32 × 128
# 672 → 608 (registers 39-64, as many programs an SM but 2 × 1024 on 4: 32 → 40).
# Prediction: −2 to −5 % on RMSNorm / the fused add at 16384×1024 and the QK-norm rows (launch- and
# instruction-bound, 83-95 % of copy); the control (RMSNorm 16384×4096) ±1 %.
# Outcome (µs, 2 rounds, before → after): RMSNorm 16384×1024 18.8 / 18.9 → 18.6 / 18.7, 524288×128 66.2 /
#   66.3 → 66.3 / 67.0, 262144×256 66.9 / 67.4 → 67.3 / 67.2; the fused add 16384×1024 35.3 / 35.2 → 35.0
#   / 35.0, 524288×128 133.2 / 133.3 → 133.1 / 133.1; control 65.2 / 65.4 → 65.2 / 65.2. Within the
#   spread: 7-15 % fewer instructions a program buy nothing here (predicted −2 to −5 %: missed). Not
#   taken (the patch, ops.py only, stays in docs/experiments; the mask test and tools/ptx_stats.py's
#   flags that went with it were reverted too). The tile sweep in the patched build (then the tree):
#   1 × 1024 on 2 warps 18.4, on 1 18.9, 2 × 1024 on 4 18.5, the heuristic's 4 × 1024 on 8 18.6-18.7.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?ab} in
ab)
  # (run in session 23 with the patch in the tree and the base reversed from it; the same A/B now:)
  A=/tmp/ab/narrow
  patched_copy $A docs/experiments/forward-narrow-rows.patch
  arm() {
    for family in rms fused_add; do
      fwd_heuristic_in "$1" --family $family --dtype bf16 --shapes 16384x1024 --config 2x1024:4
      fwd_heuristic_in "$1" --family $family --dtype bf16 --shapes 524288x128 --config 32x128:4
    done
    fwd_heuristic_in "$1" --family rms --dtype bf16 --shapes 262144x256 --config 16x256:4
    fwd_heuristic_in "$1" --family rms --dtype bf16 --shapes 16384x4096 --config 1x4096:8  # control
  }
  ab_rounds 2 arm "$PWD" $A | tee "$L/ab.log"
  tune_sweep fwd rms bf16 16384x1024 60 1x1024:1 1x1024:2 2x1024:4 4x1024:8 8x1024:8 | tee "$L/sweep.log" ;;
esac
pack_logs
