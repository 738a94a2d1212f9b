#!/usr/bin/env bash
# Device run ZZZS (prepared in session 17 for the next session, nvidia-h200-x2, ~4 min; carry [".whl"]):
# RMSNorm bf16 131072×8192's backward, 1535-1552 µs on N(0, 1) inputs in 44 processes but 1725-1754 in
# most processes on the benchmark's inputs (make_inputs), also when those tensors are cloned or
# overwritten with N(0, 1) values, and at the same clocks (BENCHMARKS "Session 17"). Left: the
# allocation history — make_inputs builds x and dy through 4 GiB float32 temporaries, so x and dy
# (and their clones) sit in the caching allocator's larger segments, or farther apart.
#  - GPU 0: tools/offset_probe.py, each line printing where x and dy sit (segment size + offset, and
#    the distance from the first segment, GiB): views of one buffer 2-6 GiB apart (the earlier calls
#    tried gaps of ≤ 32 MiB: x and dy 2 GiB apart); the benchmark's inputs as made, cloned (from the
#    allocator's free blocks) and cloned after torch.cuda.empty_cache() (new segments); N(0, 1)
#    inputs for the layout they get.
#  - GPU 1: Nsight Compute on the kernel of one slow and one fast process (DRAM bytes and throughput,
#    L2 hit rate: the same bytes at a lower rate points at DRAM row or channel conflicts; more bytes
#    at L2 misses).
# (Session 17's --separate calls had allocated and freed the tool's view buffer first — fixed since — so
# their tensors came from that freed segment: this run's layouts are the first clean ones.)
# Prediction: slow where x and dy lie in 4 GiB segments (or 4 GiB apart), fast after empty_cache;
# Nsight: the same DRAM bytes in both, lower DRAM throughput in the slow one.
# Outcome (session 18): layouts do not explain it. Views 0-4 GiB apart 1531.8-1540.9 µs; N(0, 1)
# separate tensors 1530.6-1536.1; the benchmark's inputs 1715.1-1732.6 as made (x and dy in one 4 GiB
# segment), 1726.7-1740.6 cloned into 2 GiB segments, 1670.0-1738.6 cloned after empty_cache — the
# same layouts as the N(0, 1) tensors. Nsight Compute (kernel replay): the backward kernel 1.52 ms at
# 88.1 % of DRAM peak (N(0, 1)) and 1.53 ms at 87.5 % (bench inputs): the same. Next: ZZZS2.
source tools/device_env.sh
probe() { timeout 40 python3 tools/offset_probe.py "$@"; }
(
  export CUDA_VISIBLE_DEVICES=0
  probe --gaps 0,1073741824,2147483648,4294967296 --repeats 1
  for i in 1 2 3; do
    probe --separate --api --repeats 1 | sed "s/^/randn $i /"
    for swap in none fresh-copies empty-cache-copies; do
      probe --separate --api --bench-inputs --swap $swap --repeats 1 | sed "s/^/bench $swap $i /"
    done
  done
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  ncu_bin=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  for kind in randn bench; do
    flag=; [ $kind = bench ] && flag=--bench-inputs
    timeout 150 "$ncu_bin" --clock-control none -k regex:norm_bwd_kernel -s 1 -c 1 \
        --section SpeedOfLight --section MemoryWorkloadAnalysis \
        python3 tools/offset_probe.py --separate --api --repeats 1 $flag > "$L/ncu_$kind.log" 2>&1
    echo "ncu $kind rc=$?"; grep -E "us$|Duration|DRAM Throughput|Memory Throughput|L2 Hit Rate|Mem Busy|Max Bandwidth|DRAM" "$L/ncu_$kind.log" | head -20
  done
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
