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
# Outcome: (fill in after the run)
source tools/device_env.sh
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -z "$NCU" ]; then echo "ncu: not installed"; pack_logs; exit 0; fi
SECTIONS="--section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats"
profile() {  # name, launch_tile arguments...
  local name=$1; shift
  timeout 150 "$NCU" --clock-control none --kernel-name norm_bwd_kernel --launch-skip 1 --launch-count 1 $SECTIONS \
      python3 tools/launch_tile.py --launches 2 "$@" > "$L/ncu_$name.log" 2>&1
  echo "== ncu $name rc=$?"
  grep -E "ERR|launch_tile:|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Stall|No Eligible|Eligible Warps|Issued Warp" \
      "$L/ncu_$name.log" | head -30
}
profile rms_bf16_8192x32768 --family rms --shape 8192x32768
profile ln_bf16_4096x65536 --family layer_norm --shape 4096x65536
profile rms_bf16_16384x8192 --family rms --shape 16384x8192
pack_logs
