#!/usr/bin/env bash
# Device run ZZZU (prepared in session 17 for the next session, nvidia-h200, ~3 min): what the split
# backward's parts wait on. The wide rows' backward reaches 62-83 % of copy (run ZZZO); an exchange lag
# of 2 blocks (more work between a publish and its wait) lost 5-15 % (run ZZZL) and freeing a row
# block of registers gained 2-10 % (design change 16), so neither the exchange round trip nor the
# registers alone explains the rest. Nsight Compute on one launch of the heuristic's tile (through
# tools/launch_tile.py, which checks each launch against the first): warp-state stall reasons
# (long scoreboard = the loads; branch resolving / no instruction around the exchange's poll loop),
# DRAM throughput, issue slots, occupancy.
#   RMSNorm bf16 8192×32768 (1 × 4096 parts on 4 warps, two an SM, reload: 78 %), LayerNorm bf16
#   4096×65536 (2 × 2048 on 4 warps: 63 %), and, as the whole-row reference, RMSNorm bf16 16384×8192
#   (97 %).
# Prediction: the split parts show long-scoreboard stalls as the whole row does, plus ≥ 15 % of
# cycles in the poll loop (branch / barrier stalls) — what a lag of 2 did not remove would then be
# the partners' skew, not the round trip.
# Outcome (session 18, the tiles of design change 17, second call with the stall metrics):
# RMSNorm 8192×32768 split parts 452.5 µs, DRAM 73 %, issue 0.45 warps a cycle a scheduler, 2 warps a
# scheduler (12.5 % occupancy, register-bound), stalls per issue: long scoreboard 1.24, selected 1.00,
# barrier 0.72, wait 0.48, short scoreboard 0.40, branch / no instruction ≤ 0.05. LayerNorm 4096×65536:
# 541.4 µs, DRAM 61 %, issue 0.51, stalls: selected 1.00, long scoreboard 0.88, wait 0.56, short
# scoreboard 0.53, barrier 0.30. Whole row 16384×8192: 189.4 µs, DRAM 87 %, issue 0.40, long
# scoreboard 1.27, barrier 0.85. Prediction refuted: the poll loop is not visible (branch resolving
# / no instruction ≤ 0.06); LayerNorm's parts are close to issue-bound (selected = 1 of 3.8 cycles
# an issue) — fewer instructions a byte is what moves them (as B did).
source tools/device_env.sh
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -z "$NCU" ]; then echo "ncu: not installed"; pack_logs; exit 0; fi
SECTIONS="--section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats"
# the stall reasons themselves (the WarpStateStats section prints only their sum on the command line)
SECTIONS+=" --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
profile() {  # name, launch_tile arguments...
  local name=$1; shift
  timeout 150 "$NCU" --clock-control none --kernel-name norm_bwd_kernel --launch-skip 1 --launch-count 1 $SECTIONS \
      python3 tools/launch_tile.py --launches 2 "$@" > "$L/ncu_$name.log" 2>&1
  echo "== ncu $name rc=$?"
  grep -E "ERR|launch_tile:|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Stall|No Eligible|Eligible Warps|Issued Warp" \
      "$L/ncu_$name.log" | grep -v stalled | head -30
  # the stall reasons over 0.05 warps an issue, largest first
  grep -E "issue_stalled" "$L/ncu_$name.log" | awk '$NF+0 >= 0.05 {print $1, $NF}' | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' \
    | sort -k2 -gr | head -12
}
profile rms_bf16_8192x32768 --family rms --shape 8192x32768
profile ln_bf16_4096x65536 --family layer_norm --shape 4096x65536
profile rms_bf16_16384x8192 --family rms --shape 16384x8192
pack_logs
