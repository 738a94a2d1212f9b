#!/usr/bin/env bash
# Device run ZZZO (session 17, nvidia-h200-x2, ~6 min; carry [".whl"]): the side-by-side grid after
# design change 16 as landed (RMSNorm's bf16 rows wider than 65536 without reload: run ZZZN), and a
# sweep on GPU 0 of other reloading parts for those rows (1 × 4096 on 4 warps lost there: 32-64
# parts a row).
# Prediction: RMSNorm bf16 2048×131072 back at ~541 µs (ZZZN's base), every other backward as in ZZZN
# ±2 %.
# Outcome: side by side (copy 4252 GB/s, docs/bench_h200_run_zzzo.json): RMSNorm bf16 2048×131072
# 545.1 µs (ZZZI 545.6), 8192×32768 483.3 (506.9), 4096×65536 504.2 (521.8); the fused add bf16 657.4 /
# 679.4 / 692.4 (667.5 / 693.9 / 719.1), fp32 300.6 / 1225.9 (308.9 / 1235.0); RMSNorm fp32 234.8 /
# 912.9 (238.1 / 939.1); LayerNorm ±1.5 %; 131072×8192 1717 (ZZZI 1552: its known spread, 1540-1747;
# 1719 in ZZZG, 1726 in ZZZN; torch.compile 1684-1691 in all four). Sweep (RMSNorm bf16, µs, against
# the heuristic's 1 × 4096 on 4 warps, two an SM, no reload: 543.6 / 560.0): 1 × 8192 on 8 reloading
# 547.6 / 656.4, 2 × 2048 on 8 two an SM 633.7 / 664.7, 1 × 4096 on 8 943.6 / 986.9, 1 × 4096 on 4
# three an SM 601.2 / 598.2 — none wins.
source tools/device_env.sh
(
  export CUDA_VISIBLE_DEVICES=0
  sweep() { tune_sweep bwd "$1" "$2" "$3" 240 "${@:4}"; }  # family dtype shapes configs...
  sweep rms bf16 2048x131072,1024x262144 1x8192:8:split:pf:reload 2x2048:8:split:pf:p2:reload \
      1x4096:8:split:pf:reload 1x4096:4:split:pf:p3:reload
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  side_by_side 300
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
