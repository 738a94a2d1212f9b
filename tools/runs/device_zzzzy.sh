#!/usr/bin/env bash
# Device run ZZZZY (session 23, nvidia-h200): `bash tools/runs/device_zzzzy.sh ncu` (~2 min) — Nsight Compute on
# LayerNorm's bf16 backward split parts (the heuristic's 2 × 2048 on 4 warps, two an SM) at 4096×16384
# (8 parts a row, 70 % of copy in run ZZZZS) against 2048×131072 (64 parts a row, 67 %) and RMSNorm's at
# 2048×131072 (1 × 4096 on 8 warps capped, two an SM; 86 %): where their cycles go, after run ZZZZW
# showed ~10 % fewer instructions moving the time −4 to +12 % by width and tile.
# Count: both LayerNorm shapes move 3 × 537 MB (x, dy in; dx out) — the minimum either way.
# Prediction: at 64 parts a row more cycles on the exchange's polls (branch resolving, no instruction,
# long scoreboard on the volatile loads) and fewer issued instructions a cycle than at 8.
# Outcome: the two LayerNorm widths profile alike — 4096×16384 133.0 µs, DRAM 61 % busy, 4.11 cycles an
#   issue, 12.4 % achieved occupancy (2 warps a scheduler: 255 registers, two programs an SM), 0.49
#   instructions issued a cycle a scheduler, no warp eligible 51 % of cycles, stalls long scoreboard 1.19,
#   wait 0.44, barrier 0.40, branch resolving 0.06, no instruction 0.07; 2048×131072 550.4 µs, 60 %,
#   4.13, 12.1 %, 0.48, 52 %, 1.11 / 0.53 / 0.39 / 0.09 / 0.05. RMSNorm's 1 × 4096 parts at 131072:
#   430.4 µs, DRAM 77 %, 7.64 cycles an issue, 24 % occupancy (4 warps a scheduler), 0.50 issued, 50 %
#   none eligible. Prediction wrong: the exchange's polls do not show at 64 parts a row (branch
#   resolving / no instruction ≤ 0.09 warps an issue, as at 8). Both families issue ~0.5 instructions a
#   cycle a scheduler; LayerNorm's parts need more instructions a byte (31.8 an element) with half the
#   warps: issue-rate-bound at the occupancy their 255 registers allow.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?ncu} in
ncu)
  ncu_stalls bwd ln_bwd_16384 --family layer_norm --shape 4096x16384
  ncu_stalls bwd ln_bwd_131072 --family layer_norm --shape 2048x131072
  ncu_stalls bwd rms_bwd_131072 --family rms --shape 2048x131072 ;;
esac
pack_logs
