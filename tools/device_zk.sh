#!/usr/bin/env bash
# Device run ZK (planned for session 9, nvidia-h200-x2; not run yet).
# GPU 0 — (1) A/B of the session's candidate in the working tree against HEAD's build (base_build/:
#   mkdir base_build && git archive HEAD normkit pyproject.toml | tar x -C base_build), e.g. the
#   2 × 1024 on 4 warps, 4/SM tile for RMSNorm and LayerNorm (run ZG's sweep: RMSNorm 16384×1024 29.7
#   against 30.4) or a LayerNorm-only 1 × 4096 joined tile (105.5 against 106.2), 3 rounds;
#   (2) session 8's build against session 7's (base7_build/: the same from 82f03db) on shapes run ZJ
#   did not time: the ≤ 16384 split on more rows (8192×16384, 16384×12288), and 8192×32768 (run ZH
#   side by side: 554 µs against 538 in run ZC, +3 %; ptxas: the split part's registers and spills
#   unchanged, 255 / 16 B, shuffles 34 → 31 — spread expected).
# GPU 1 — memcheck over the split configurations, the new 2 × 4096 parts included (run ZJ had no
#   time left for it), every family (racecheck serialises blocks, which split rows cannot run);
#   then, where Nsight Compute is installed, LayerNorm bf16 16384×4096 on its 2 × 4096 tile with and
#   without joined sums (run ZF: 107.1 against 125.8 µs; BENCHMARKS "Open gaps": the SASS does not
#   tell them apart): warp stall reasons and memory throughput of one launch each.
source tools/device_env.sh
ROOT=$PWD
(
  export CUDA_VISIBLE_DEVICES=0
  ab_bench 3 16384x1024,16384x4096 $ROOT/base_build $ROOT
  python3 tools/ab_summary.py $L | tee $L/ab_summary.txt
  mkdir -p $L/s7 && L=$L/s7 ab_bench 2 8192x16384,16384x12288,8192x32768 $ROOT/base7_build $ROOT
  python3 tools/ab_summary.py $L/s7 | tee $L/s7/ab_summary.txt
) &
(
  export CUDA_VISIBLE_DEVICES=1
  OUT=$L SWEEP_LIMIT=120 bash tools/device_reliability.sh sweep
  OUT=$L FAMILIES=rms,fused_add,layer_norm MEMCHECK_SPLIT_LIMIT=150 bash tools/device_reliability.sh memcheck_split
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  if [ -n "$NCU" ]; then
    for joined in "" --joined; do
      timeout 120 $NCU --kernel-name norm_bwd_kernel --launch-skip 2 --launch-count 1 --section SpeedOfLight \
          --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy \
          python3 tools/launch_tile.py --family layer_norm --shape 16384x4096 --tile 2,4096,16,1 $joined \
          > $L/ncu_ln_2x4096${joined:+_joined}.log 2>&1
      echo "ncu ln 2x4096 ${joined:-plain} rc=$?"; grep -E "launch_tile:|Duration|Memory Throughput|Stall" \
          $L/ncu_ln_2x4096${joined:+_joined}.log | head -12
    done
  else
    echo "ncu: not installed"
  fi
) &
wait
pack_logs
