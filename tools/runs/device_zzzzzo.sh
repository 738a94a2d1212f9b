#!/usr/bin/env bash
# Device run ZZZZZO (session 30, nvidia-h200; carry [".whl"]):
#  Why: design change 36's `ab` (run ZZZZZN) found the backward's split parts 7 % fewer instructions a row
#  block with the bf16 register pairs and no faster — LayerNorm ±0 to +0.7 %, RMSNorm 2048×131072 +1.3 % —
#  where design change 35's 4-7 % fewer had moved them 2-3 %. "Issue-bound" (session 28's Nsight Compute)
#  said instructions are the cost; these did not count. Before another instruction diet, see what the pairs
#  change in the parts' stalls and issue rate.
#  - `ncu` (~2 min): Nsight Compute (tools/device_env.sh ncu_stalls) on one launch of the backward at the
#    heuristic's split parts, this tree (no pairs in the split parts) against
#    docs/experiments/backward-split-bf16-pairs.patch (pairs there): RMSNorm bf16 2048×131072 (1 × 4096 on
#    4 warps, two an SM) and LayerNorm bf16 4096×16384 (1 × 2048 on 4, four an SM).
#    Prediction: the same DRAM bytes, registers and occupancy (ptxas: ±6 registers, no step); with the pairs
#    fewer issued instructions but more stall cycles an issue — long_scoreboard or wait (the asm blocks
#    ordering the loads' consumers), so the issue rate falls as the count does. If the issue rate stays and
#    the duration does not move, the kernel is not issue-bound at these parts after all.
#  Outcome (51 s; logs ncu_*.log; main → pairs): the prediction held. The same DRAM bytes (RMSNorm 1.07 GB
#  read / 523 MB written; LayerNorm 268.6 / 121.5 MB) and occupancy (12.1 %, 24.3-24.4 %); durations RMSNorm
#  2048×131072 417.4 → 421.6 µs, LayerNorm 4096×16384 109.5 → 109.3. Warp cycles an issued instruction
#  4.80 → 5.00 and 5.78 → 6.11: fewer instructions, each waiting longer — barrier 0.88 → 0.93 / 0.86 → 1.05,
#  short_scoreboard 0.52 → 0.61 / 0.65 → 0.75, LayerNorm's long_scoreboard 1.12 → 1.19 (stalls a warp an
#  issue). So the parts' time is a dependent chain (loads out of shared memory → upcast → the row sums'
#  cross-warp barrier), not the issue count alone: instructions off that chain do not shorten it.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
S=/tmp/ab/splitpairs
case ${1:?ncu} in
ncu)
  patched_copy $S docs/experiments/backward-split-bf16-pairs.patch
  for arm in "$PWD" $S; do
    tag=$([ "$arm" = "$PWD" ] && echo main || echo pairs)
    ( cd "$arm" && export PYTHONPATH=/tmp/site:$arm
      ncu_stalls bwd "rms_131072_$tag" --family rms --dtype bf16 --shape 2048x131072
      ncu_stalls bwd "ln_16384_$tag" --family layer_norm --dtype bf16 --shape 4096x16384 )
  done ;;
esac
pack_logs
