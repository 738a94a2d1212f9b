#!/usr/bin/env bash
# Device run ZZZY (session 18, nvidia-h200-x2, ~6 min; carry [".whl", ".ab_base"]): design change 17
# in the working tree (the two exchange patches of ZZZV + the bf16 split parts holding their row block
# again, ZZZX) against HEAD (.ab_base = `git archive HEAD`).
#  - GPU 1: A/B HEAD → working tree, 2 rounds: RMSNorm / the fused add / LayerNorm bf16 at 4096×16384,
#    8192×32768, 4096×65536, 2048×131072; fp32 at 4096×65536.
#  - GPU 0: the 4-byte parts (still reloading, three an SM) held or reloading, per family, then
#    memcheck over every split backward configuration (ZZZX's ran out of time after 57 runs).
# Prediction: bf16 RMSNorm −4 to −8 % at 32768-131072, the fused add −4 to −6 %, LayerNorm −7 to −9 % at
# 16384 / 65536 / 131072 and +0-2 % at 32768; fp32 −2 to −3 % (the exchange); holding fp32 parts within
# ±3 % of reloading; memcheck 0 errors.
# Outcome (session 18): A/B HEAD → working tree (2 rounds, bwd µs): RMSNorm bf16 124.9 → 123.7,
# 485.3 → 461.3, 509.1 → 471.1, 543.2 → 499.8; the fused add 163.7 → 168.6 (+3 %, the 2 × 2048 parts
# without Σg), 660.3 → 633.7, 684.5 → 649.1, 691.5 → 658.5; LayerNorm 145.6 → 135.7, 528.9 → 523.9,
# 596.6 → 541.6, 617.3 → 556.8 / 616.0; fp32 4096×65536 RMSNorm 915.9 → 885.8, the fused add 1216.0 →
# 1188.6, LayerNorm 951.6 → 923.3; forwards ±1.5 %. fp32 sweep (held against reloading, three an
# SM): held wins RMSNorm 4096×16384 / 4096×65536 (221.0 / 854.3 against 226.2 / 877.3) and LayerNorm
# 4096×16384 (224.3 against 231.4); reloading wins at 131072 (920.7 / 1239.7 / 961.3 against 965.3 /
# 1280.5 / 1034.9), LayerNorm 65536 (918.0 against 943.0) and the fused add 16384 (292.0 against
# 303.2) → _PAIRED_SPLIT_4_BYTE_HELD_MAX. memcheck bwd split 84 runs, 0 errors.
source tools/device_env.sh
LOGS=$L
(
  export CUDA_VISIBLE_DEVICES=1 L=$LOGS/ab; mkdir -p "$L"
  ab_summarised 2 "$PWD/.ab_base" "$PWD" "_r|rms|bf16|4096x16384,8192x32768,4096x65536,2048x131072" \
      "_a|fused_add|bf16|4096x16384,8192x32768,4096x65536,2048x131072" \
      "_l|layer_norm|bf16|4096x16384,8192x32768,4096x65536,2048x131072" \
      "_f|rms,fused_add,layer_norm|fp32|4096x65536"
) > "$LOGS/gpu1.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=0 PYTHONPATH=/tmp/site:$PWD
  for fam in rms fused_add layer_norm; do
    tune_sweep bwd $fam fp32 4096x16384,4096x65536,2048x131072 80 1x2048:4:split:pf:p3 \
        1x2048:4:split:pf:p3:reload 1x2048:4:split:pf:p2
  done
  memcheck_split bwd 170
) > "$LOGS/gpu0.log" 2>&1 &
wait
cat "$LOGS/gpu0.log" "$LOGS/gpu1.log"
pack_logs
