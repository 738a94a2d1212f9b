#!/usr/bin/env bash
# Device run ZZZZZB (session 23, nvidia-h200; carry [".whl"]): `bash tools/runs/device_zzzzzb.sh ab` (~2.5 min) —
# the recomputing backward's split parts reduce their statistics' sum (Σh for LayerNorm, Σh² for RMSNorm)
# in the tree of Σ(g·h) / Σg instead of a block reduction of its own (docs/experiments/split-joint-sums.patch:
# kernels/backward.py, kernels/stats.py publish_row_sums' sum_h; the same sums, one round of cross-warp
# exchanges fewer). A/B, 1 round (device time), tools/tune.py --kind bwd --recompute, the heuristic in each
# build (µs), then the check-mode split tests with recomputed statistics.
# Count (ptxas, sm_90): LayerNorm's 2 × 2048 parts 17 → 14 bar.sync, 1311 → 1299 instructions a row block;
# RMSNorm's 1 × 4096 on 4 warps 14 → 11 bar.sync, 20 → 0 B spilled; on 8 warps capped 10 → 7, 20 → 12 B.
# The saved statistics' parts unchanged (1016 / 729 instructions, the same bar.sync).
# Prediction: −2 to −5 % on the recomputing backward (design change 27 took 3 bar.sync: −3 to −5 %).
# Outcome (µs, before → all joined; RMSNorm's second round a separate call, 2 builds): LayerNorm 4096×16384
#   149.9 → 144.5 (−3.6 %), 2048×131072 771.1 → 751.9 (−2.5 %); RMSNorm 4096×65536 509.6 → 486.7 (−4.5 %),
#   2048×131072 541.7 / 534.7 → 492.9 / 494.7 (−8 %), but 4096×16384 122.8 / 122.8 → 131.8 / 131.6 (+7 %:
#   its 1 × 4096 parts on 4 warps, 32 elements a thread; predicted −2 to −5 %, missed there). Check-mode
#   split tests with recomputed statistics (all joined): 30 passed. Landed as design change 29 with the
#   rule config.joins_stats (LayerNorm's parts; RMSNorm's of ≤ 16 elements a thread) — that build's
#   RMSNorm 16384 path is the code before the patch; not re-run on the GPU (device time spent). The patch
#   is the all-joined build against main ef33ff4 (the commit before design change 29); it no
#   longer reverses on later trees.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?ab} in
ab)
  B=/tmp/ab/base
  patched_copy $B -R docs/experiments/split-joint-sums.patch
  arm() {
    for family in layer_norm rms; do
      TUNE_LIMIT=45 tune_in "$1" --kind bwd --recompute --family $family --dtype bf16 \
          --shapes 4096x16384,2048x131072 --config 1x2048:4:split:pf:p2 | grep -v " each " | sed -E "s/ best .*//"
    done
  }
  ab_rounds 1 arm $B "$PWD" | tee "$L/ab.log"
  checked_tests 70 tests/test_split_rows.py -k "recompute" ;;
esac
pack_logs
