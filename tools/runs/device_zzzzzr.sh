#!/usr/bin/env bash
# Device run ZZZZZR (prepared in session 31 for the next session, nvidia-h200; no carry needed):
#  Why: run ZZZZZP's source counters put 20-29 % of the staged split parts' warp samples on the first read
#  of a partner's exchange word — an L2 round trip (RMSNorm's words are there 98.6 % of the time: latency,
#  not lateness). Hopper's clusters would carry those words through distributed shared memory, which
#  Triton 3.6 does not expose; tools/cluster_probe.py tries it with inline PTX and the launcher alone (extra
#  dynamic shared memory past Triton's, found with %dynamic_smem_size; num_ctas in the packed launch
#  metadata) and times a two-CTA ping-pong both ways.
#  - `probe` (~1 min): tools/cluster_probe.py, idle and with a copy streaming on the other SMs.
#    Prediction: it runs (the PTX passes ptxas for sm_90 on the CPU: tests/test_gpu_compile.py); a DSMEM
#    round trip 300-600 cycles against 1200-2500 through L2 under load — if DSMEM is not at least twice as
#    fast loaded, the cluster exchange (a larger change: the split parts' XCHG slots in shared memory,
#    partners' stores remote, clusters of a row's parts, ≤ 16 parts a row) is not worth building.
#  Outcome: (to fill)
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
for call in "${@:?probe ...}"; do
case $call in
probe)
  timeout 120 python3 tools/cluster_probe.py --rounds 4000 2>&1 | tee "$L/cluster_probe.log"
  timeout 60 python3 tools/cluster_probe.py --rounds 20000 --background no 2>&1 | tee -a "$L/cluster_probe.log" ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
