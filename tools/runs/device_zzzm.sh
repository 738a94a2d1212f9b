#!/usr/bin/env bash
# Device run ZZZM (session 17, nvidia-h200-x2, ~8 min): design change 16 from run ZZZL's sweep — the
# backward's split parts read the previous row block again after the exchange (RELOAD, kernels/
# backward.py; TileConfig.reload) where the sweep had them win: 4-byte rows on 1 × 2048 parts, 4 warps,
# three an SM (every family; the fused add's rows up to 16384 leave their 8-warp parts), RMSNorm's and
# the fused add's bf16 1 × 4096 parts, the fused add's bf16 1 × 8192 parts past 65536. The exchange lag
# of 2 (the patch's second half) lost everywhere in ZZZL (+5-15 %) and is not in main. Setup here:
# `.ab_base` = HEAD's normkit (git archive); carry [".whl", ".ab_base"].
#  - GPU 0: A/B, 3 rounds, bf16: RMSNorm and the fused add at 8192×32768 … 1024×262144; LayerNorm
#    8192×32768 (control: its tiles unchanged).
#  - GPU 1: A/B, 3 rounds, fp32: RMSNorm 4096×16384 … 1024×262144, the fused add 4096×16384 …
#    2048×131072, LayerNorm 4096×16384 / 4096×65536.
# Count: RMSNorm bf16 8192×32768 moves 3 × 512 MiB = 1.61 GB → 382 µs at 4214 GB/s.
# Prediction (ZZZL's sweep): RMSNorm bf16 510 → 493, 525 → 516; the fused add bf16 2048×131072 724 →
# 705; fp32 RMSNorm 4096×65536 940 → 919, the fused add 4096×16384 309 → 301; LayerNorm fp32 ±1 %;
# the unswept shapes (131072 / 262144, the fused add bf16 ≤ 65536 with reload) within ±3 %; control ±1 %.
# Outcome: as run, both GPUs wrote the same log names (tags _r/_a/_l on each: since fixed, _rb/_rf
# …), so each file holds whichever GPU wrote it last: fp32 came back with 2-3 rounds a shape, the
# fused add bf16 with one, RMSNorm bf16 and the control with none (repeated in run ZZZN). Medians
# (bwd, µs): fp32 RMSNorm 4096×16384 235.1 → 235.1 (±1), 4096×65536 935.9 → 903.9, 2048×131072
# 1068.7 → 966.0, 1024×262144 1052.7 → 965.3; the fused add 306.7 → 299.3, 1228.7 → 1212.8,
# 1345.8 → 1257.4; LayerNorm 240.7 → 240.2, 948.6 → 943.6. The fused add bf16 (one round) 671.6 →
# 657.8, 691.9 → 677.2, 709.6 → 691.7, 1024×262144 788.1 → 789.6. Forward unchanged (±1.5 %; its
# noise on wide fp32 rows).
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  ab_summarised 3 "$PWD/.ab_base" "$PWD" "_rb|rms|bf16|8192x32768,4096x65536,2048x131072,1024x262144" \
      "_ab|fused_add|bf16|8192x32768,4096x65536,2048x131072,1024x262144" "_lb|layer_norm|bf16|8192x32768"
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  ab_summarised 3 "$PWD/.ab_base" "$PWD" "_rf|rms|fp32|4096x16384,4096x65536,2048x131072,1024x262144" \
      "_af|fused_add|fp32|4096x16384,4096x65536,2048x131072" "_lf|layer_norm|fp32|4096x16384,4096x65536"
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
