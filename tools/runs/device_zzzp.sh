#!/usr/bin/env bash
# Device run ZZZP (session 17, nvidia-h200-x2, ~4 min; carry [".whl"]): sweeps of reloading split
# parts where run ZZZL did not try them without the lag of 2 (design change 16 landed them for fp32,
# RMSNorm's and the fused add's bf16 rows of 32768 / 65536 and the fused add's wider ones).
#  - GPU 0: LayerNorm bf16 (63-71 % of copy, the widest gap) on 1 × 2048 parts on 4 warps three an SM
#    and 1 × 4096 on 4 warps two an SM, reloading (ZZZL's 1 × 2048 p3 reload ran with the lag: 632.6 /
#    635.9 at 8192×32768 / 4096×65536).
#  - GPU 1: RMSNorm bf16 4096×16384 (125 µs against issue #3's 105) on reloading parts of 1 × 2048 /
#    1 × 4096 on 4 warps; the fused add fp32 4096×16384 (301 against Liger's 286) on 8 warps two an
#    SM reloading (ptxas: 127 → 101 registers).
# Count: LayerNorm bf16 4096×65536 moves 3 × 512 MiB = 1.61 GB → 379 µs at 4250 GB/s (597 = 63 %).
# Prediction: LayerNorm within ±3 % of its heuristic (its 2 × 2048 parts lost with reload in ZZZL:
# the extra L2 reads); RMSNorm 4096×16384 ±3 %; the fused add fp32 ±2 %.
# Outcome (µs): all refuted or within ±1 %. LayerNorm bf16 4096×16384 / 8192×32768 / 4096×65536 /
# 2048×131072, heuristic 147.1 / 523.8 / 598.7 / 617.6 against 1 × 2048 p3 reloading 149.9 / 612.3 /
# 665.6 / 767.0, 1 × 4096 p2 reloading 150.5 / 567.2 / 598.5 / 703.0, 1 × 2048 p3 150.7 / 603.2 / 648.9 /
# 710.8. RMSNorm bf16 4096×16384 heuristic 127.4 against 1 × 4096 p2 reloading 126.7 (without: 136.3),
# 1 × 2048 p3 158.6 / 142.6, 2 × 2048 capped at 128: 451.4. The fused add fp32 4096×16384 heuristic
# 301.1 against 8 warps two an SM reloading 299.5, capped at 168: 301.9 (Liger 284-286).
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  sweep() { tune_sweep bwd "$1" "$2" "$3" 200 "${@:4}"; }  # family dtype shapes configs...
  sweep layer_norm bf16 4096x16384,8192x32768,4096x65536,2048x131072 1x2048:4:split:pf:p3:reload \
      1x4096:4:split:pf:p2:reload 1x2048:4:split:pf:p3
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  sweep() { tune_sweep bwd "$1" "$2" "$3" 100 "${@:4}"; }
  sweep rms bf16 4096x16384 1x2048:4:split:pf:p3:reload 1x4096:4:split:pf:p2:reload 1x2048:4:split:pf:p3 \
      2x2048:4:split:pf:p2:r128 1x4096:4:split:pf:p2
  sweep fused_add fp32 4096x16384 1x2048:8:split:pf:p2:reload 1x2048:4:split:pf:p3:r168:reload
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
