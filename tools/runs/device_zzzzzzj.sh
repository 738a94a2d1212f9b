#!/usr/bin/env bash
# Device run ZZZZZZJ (session 39, nvidia-h200; no carry needed):
#  Why: LayerNorm's bf16 split forward (1 × 8192 on 4, four an SM under a 128-register cap, reload) runs
#  2048×131072 in ~320 µs (80 % of copy) where RMSNorm's same part holding its weight runs ~273 (94 %), and
#  neither holding LayerNorm's weight and bias (168 registers, three an SM: −1 %) nor its weight alone (12 B
#  spilled, four an SM: +2 %, run ZZZZZZH) closed it: the L2-bytes model does not explain the 40 µs.
#  `stalls` (~2 min): Nsight Compute's warp-stall reasons, occupancy and issue rate of the three parts side by side
#  (tools/launch_tile.py --config, its third launch): LayerNorm's heuristic, LayerNorm's held three an SM, RMSNorm's
#  heuristic (held, four an SM). Prediction: LayerNorm's parts stall on the exchange's spin or barriers (its two
#  block reductions a row block against RMSNorm's one: 6 bar.sync against 3, ptxas), not on L2 loads (long
#  scoreboard); a diagnostic, nothing lands from it.
#  Outcome (session 39, ~1 device minute): LayerNorm's heuristic 317.3 µs (DRAM 571 MB read, 512 written; 23.9 %
#  achieved occupancy; 7.56 cycles a warp between issues, 0.50 warps issued a scheduler-cycle, none eligible 49.7 %;
#  stalls a issue: long scoreboard 3.35, wait 0.82, barrier 0.82, short scoreboard 0.53), held three an SM 314.1
#  (17.8 %; 5.96; 0.48; long scoreboard 2.39, barrier 0.46), RMSNorm's 272.1 (24.1 %; 9.97; 0.39; long scoreboard
#  5.98, barrier 0.94). Against the prediction, the spin ("wait" 0.8 in all three) and the barriers are not
#  LayerNorm's difference: it issues 1.49× RMSNorm's instructions (0.50 × 317 against 0.39 × 272 warp-issues a
#  scheduler; ptxas, sm_90, tools/ptx_stats.py --sass: its row loop 1174 instructions a thread against 767 — the
#  local M2's centring and select 130, a second block reduction 76 more, the bias's upcast and add ~160, y's
#  centring 65), so at 4 warps a scheduler it waits on L2 less and issues more — holding w and b only took loads
#  out. Nothing landed (a diagnostic).
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
for call in "${@:?stalls ...}"; do
case $call in
stalls) S=2048x131072
  ncu_stalls fwd ln_heur --family layer_norm --dtype bf16 --shape $S --config 1x8192:4:split:reload:p4:r128
  ncu_stalls fwd ln_held3 --family layer_norm --dtype bf16 --shape $S --config 1x8192:4:split:reload:p4:r168:hold
  ncu_stalls fwd rms_heur --family rms --dtype bf16 --shape $S --config 1x8192:4:split:reload:p4:hold ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
