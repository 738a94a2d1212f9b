#!/usr/bin/env bash
# Device run ZO (session 9, nvidia-h200): where Nsight Compute is installed, one launch each of
# LayerNorm's forward at 16384×4096 bf16 (91 % of copy in run ZM, where a graph-timed copy of the
# same 128 MiB runs at 99 %: run ZN), RMSNorm's forward there (93 %) for comparison, and
# LayerNorm's backward at 16384×2048 (87 %): throughput, occupancy, warp stall reasons.
source tools/device_env.sh
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -z "$NCU" ]; then echo "ncu: not installed"; pack_logs; exit 0; fi
SECTIONS="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats"
profile() {  # name, kernel, skip, launch_tile arguments...
  local name=$1 kernel=$2 skip=$3; shift 3
  timeout 100 $NCU --kernel-name $kernel --launch-skip $skip --launch-count 1 $SECTIONS \
      python3 tools/launch_tile.py --launches 1 "$@" > $L/ncu_$name.log 2>&1
  echo "== ncu $name rc=$?"
  grep -E "ERR|launch_tile:|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Warp Cycles Per Issued|Stall|No Eligible|Active Warps Per Scheduler|Eligible Warps" \
      $L/ncu_$name.log | head -30
}
profile ln_fwd_16384x4096 norm_fwd_kernel 0 --family layer_norm --shape 16384x4096
profile rms_fwd_16384x4096 norm_fwd_kernel 0 --family rms --shape 16384x4096
profile ln_bwd_16384x2048 norm_bwd_kernel 0 --family layer_norm --shape 16384x2048
pack_logs
