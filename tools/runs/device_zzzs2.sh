#!/usr/bin/env bash
# Device run ZZZS2 (session 18, nvidia-h200-x2, ~1.5 min): after run ZZZS. There, under Nsight Compute
# (kernel replay: caches flushed, device memory saved and restored around the launch), the backward
# kernel of a slow process (the benchmark's inputs, 1788 µs by its own timing) ran 1.53 ms at 87.5 %
# of DRAM — the same as an N(0, 1) process (1.52 ms, 88.1 %). So either the kernel is slow only in
# situ (warm L2 / TLB after the previous replay, which kernel replay does not reproduce), or the
# time goes outside it (the dweight partials' reduction, gaps). Here: no cache flush, one pass
# (duration, DRAM bytes and throughput, L2 hit rate), launches 2-4 (-s 20 found none: the graph replays are not profiled as kernels here), two
# processes of each input kind.
# Prediction: the norm_bwd_kernel itself at ~1.7 ms in the bench processes and ~1.53 in the N(0, 1) ones.
# Outcome (session 18): every eager launch, both kinds, two processes each: 1.52-1.54 ms, 4.30 GB
# read + 2.14-2.16 GB written (the 6.44 GB minimum), 87.1-88.0 % of DRAM peak, L2 hit 33.7-34.1 %.
# The kernel is not slower with the benchmark's inputs. Next: ZZZS3 (the graph replays).
source tools/device_env.sh
ncu_bin=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct
run_one() {  # gpu kind i
  local flag=; [ "$2" = bench ] && flag=--bench-inputs
  CUDA_VISIBLE_DEVICES=$1 timeout 120 "$ncu_bin" --cache-control none --clock-control none --metrics $metrics \
      -k regex:norm_bwd -s 1 -c 3 python3 tools/offset_probe.py --separate --api --repeats 1 $flag \
      > "$L/ncu_$2_$3.log" 2>&1
  echo "== ncu $2 process $3 rc=$?"
  grep -E " us$|gpu__time|dram__|lts__" "$L/ncu_$2_$3.log" | awk '{print $1, $(NF-1), $NF}' | head -24
}
(run_one 0 randn 1; run_one 0 bench 1) > "$L/gpu0.log" 2>&1 &
(run_one 1 bench 2; run_one 1 randn 2) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
