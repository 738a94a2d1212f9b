#!/usr/bin/env bash
# Device run ZZZZR (session 22, nvidia-h200; carry [".whl"]): `bash tools/runs/device_zzzzr.sh nk` (~3 min) — A/B
# this tree → docs/experiments/split-part-columns.patch: a split part's column count n_k from N and its
# index (min(N − part·BLOCK_N, BLOCK_N)) instead of a block reduction of its mask before its local mean
# (stats.publish_row_sums, LayerNorm's split forward and its recomputing split backward). Same bits (an
# integer count either way). Count (ptxas, sm_90, tools/ptx_stats.py): LayerNorm's split forward parts
# 9 → 6 bar.sync, 36 → 29 shfl.sync a part (bf16 1 × 8192, fp32 1 × 4096, 128 registers both); the
# recomputing backward's 2 × 2048 parts 20 → 17 bar.sync, 91 → 79 shfl.sync.
# Prediction: LayerNorm's split forward −1 to −4 % (the parts wait mostly on loads: run ZZZZN's
# long-scoreboard stalls), the rest unchanged (RMSNorm's parts do not take the path).
# Outcome (2 rounds, µs, this tree → the patch): LayerNorm bf16 2048×131072 349.4 → 342.6 (−1.9 %),
#   1024×262144 340.5 → 331.3 (−2.7 %), fp32 4096×65536 633.6 → 630.7 (−0.5 %: 626.6 / 634.7, a tie),
#   2048×131072 612.6 → 606.8 (−1.0 %) — inside the prediction. Then, on the tree with the patch applied
#   (one call): check-mode tests/test_split_rows.py (the split backward, saved and recomputed statistics,
#   per head, bitwise, the split forward) 94 passed, 0 failed. Landed: design change 27.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?nk} in
nk)
  N=/tmp/ab/new
  patched_copy $N docs/experiments/split-part-columns.patch
  arm() {
    fwd_heuristic_in "$1" --family layer_norm --dtype bf16 --shapes 2048x131072,1024x262144 --config 1x16384:32:col
    fwd_heuristic_in "$1" --family layer_norm --dtype fp32 --shapes 4096x65536,2048x131072 --config 1x16384:32:col
  }
  ab_rounds 2 arm "$PWD" "$N" | sed -E 's/ best .*//' | tee "$L/ab.log" ;;
esac
pack_logs
