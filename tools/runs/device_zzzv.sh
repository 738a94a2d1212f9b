#!/usr/bin/env bash
# Device run ZZZV (prepared in session 17 for the next session, nvidia-h200-x2, ~6 min; carry [".whl"]):
# two prepared exchange patches, each A/B'd against the build below it.
#  A = docs/experiments/backward-split-rms-without-sum-g.patch: RMSNorm's and the fused add's split
#      backward parts stop computing, sending and awaiting Σg (their dh has no Σg term; results
#      bitwise unchanged). ptx_stats: bf16 2 × 2048 254 → 236 registers, 10 → 7 bar.sync; 1 × 4096
#      reloading 224 → 211, 14 → 11; 1 × 4096 at 131072 255 + 16 B spilled → 224; fp32 162 → 148, 6 → 3.
#  B = docs/experiments/split-exchange-fewer-reductions.patch (on top of A): LayerNorm's split parts
#      reduce Σ(g·h) and Σg in one tl.reduce; a poll counts its late words in one reduction. ptx_stats:
#      LayerNorm bf16 bar.sync 14 → 11, capped 8-warp parts 44 → 28 B spilled, fp32 167 → 159
#      registers, 6 → 3 bar.sync; the forward's split shfl.sync 29 → 17.
#  - GPU 0: A/B main → A, 3 rounds, backward: RMSNorm bf16 4096×16384 … 2048×131072, the fused add bf16
#    4096×16384 / 8192×32768 / 2048×131072, RMSNorm fp32 4096×16384 / 4096×65536; control LayerNorm bf16
#    8192×32768 (unchanged by A).
#  - GPU 1: A/B A → A + B, 3 rounds: LayerNorm bf16 4096×16384 … 2048×131072 and fp32 4096×16384 /
#    4096×65536 (backward), the fused add bf16 4096×65536 / 2048×131072 (its split forward); control
#    RMSNorm bf16 8192×32768 (its backward unchanged by B); then, in A + B, LayerNorm's capped 8-warp
#    parts at 4096×65536 / 2048×131072 against its heuristic.
# A row block of 1 × 4096 bf16 moves 24 KB (x, dy, dx): ~1.5 µs of an SM's share of 4250 GB/s with two
# parts an SM; a block-wide reduction round is ~0.1-0.3 µs that the part's warps wait.
# Prediction: A −1 to −4 % on RMSNorm / the fused add split shapes; B −1 to −4 % on LayerNorm's (most at
# 32768, where the capped parts spill less) and ±1 % on the split forward; controls ±1 %. Each that
# wins then needs ZZZW's GPU tests and memcheck before landing.
# Outcome (session 18, run 1 of the session, 3 rounds, bwd µs medians): A won where the parts hold
# their row block — RMSNorm bf16 2048×131072 543.9 → 501.8, fp32 4096×16384 233.5 → 226.5, 4096×65536
# 914.5 → 890.9 — and lost where the bf16 parts reload: RMSNorm 8192×32768 484.5 → 514.3, 4096×65536
# 508.3 → 533.8, the fused add 164.6 → 168.4, 663.2 → 669.9, 695.2 → 699.0; control LayerNorm +0.6 %.
# B on top of A: LayerNorm bf16 4096×16384 145.8 → 135.7, 4096×65536 598.6 → 542.5, 2048×131072
# 617.5 → 559.9, but 8192×32768 (capped 8-warp parts) 524.4 → 534.7; fp32 238.7 → 232.0, 934.2 →
# 913.9; the fused add's split forward ±1.5 %; control RMSNorm ±0.2 %. LayerNorm's capped 8-warp parts
# still lose at 65536 / 131072 (566.1 / 580.4 against 542.2 / 560.4). Next: ZZZX (the tiles again).
source tools/device_env.sh
A=/tmp/ab/sumg AB=/tmp/ab/fewer
patched_copy $A docs/experiments/backward-split-rms-without-sum-g.patch
patched_copy $AB docs/experiments/backward-split-rms-without-sum-g.patch \
    docs/experiments/split-exchange-fewer-reductions.patch
LOGS=$L
(
  export CUDA_VISIBLE_DEVICES=0 L=$LOGS/a; mkdir -p "$L"  # each A/B its own folder: ab_summary reads them all
  ab_summarised 3 "$PWD" "$A" "_r|rms|bf16|4096x16384,8192x32768,4096x65536,2048x131072" \
      "_a|fused_add|bf16|4096x16384,8192x32768,2048x131072" "_f|rms|fp32|4096x16384,4096x65536" \
      "_l|layer_norm|bf16|8192x32768"
) > "$LOGS/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1 L=$LOGS/b; mkdir -p "$L"
  ab_summarised 3 "$A" "$AB" "_l|layer_norm|bf16|4096x16384,8192x32768,4096x65536,2048x131072" \
      "_f|layer_norm|fp32|4096x16384,4096x65536" "_a|fused_add|bf16|4096x65536,2048x131072" \
      "_r|rms|bf16|8192x32768"
  # LayerNorm's capped 8-warp parts (its rows of 32768) spill 28 B with B instead of 44: at 65536 /
  # 131072 they had lost to the 4-warp parts (run ZZZG: 629.9 / 639.7 against 598.7 / 619.2)
  cd $AB && PYTHONPATH=/tmp/site:$AB tune_sweep bwd layer_norm bf16 4096x65536,2048x131072 100 2x2048:8:split:pf:p2:r128
) > "$LOGS/gpu1.log" 2>&1 &
wait
cat "$LOGS/gpu0.log" "$LOGS/gpu1.log"
pack_logs
