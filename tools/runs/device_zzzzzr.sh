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
#  - `checks` (~4 min; only if `probe` ran and DSMEM won): docs/experiments/split-cluster-exchange.patch
#    (the change itself, prepared in session 31: kernels/cluster.py; stats.publish_row_sums / await_row_sums
#    CLUSTER; every split part with float32 sums — the backward's staged and prefetching parts, saved or
#    recomputed statistics, and the forward's polling and staged parts — launched as one cluster a row's
#    parts where a row has 2-8 or 16 of them, through launch.launch_clustered, XCHG unused;
#    NORMKIT_CLUSTER_EXCHANGE=0 turns it off) in check mode: tests/test_split_rows.py whole (split backward,
#    forward, per head, bitwise), tests/test_ops.py's backward, then compute-sanitizer memcheck of the split
#    backward and forward. On the CPU (session 31): the
#    whole suite passes on the patched tree, every family's part compiles for sm_90 with 0 B spilled under
#    the heuristic's caps and no atom.global (tests/test_gpu_compile.py in the patch), the clustered launch's
#    arguments are checked against a stand-in launcher (tests/test_launch.py in the patch).
#    Risks not testable on the CPU: the cluster barriers' once-a-thread execution (a [1] tensor's asm), the
#    shared-memory window's end as the slots' base, ld.relaxed.cluster polling a remote store's arrival.
#    A hang shows as the 200 s limit.
#  - `ab` (~5 min, 2 rounds, tools/tune.py --heuristic-only, this tree → the patched one): RMSNorm, LayerNorm
#    and the fused add bf16 at 4096×16384 (8 parts a row) and 8192×32768 (RMSNorm / the fused add 16 parts,
#    LayerNorm 8), RMSNorm 4096×65536 (32 parts: not clustered, the control); the forward of RMSNorm and
#    LayerNorm bf16 at 4096×65536 (8 parts of 8192) and 2048×131072 (16), the recomputing LayerNorm backward
#    at 4096×16384. Prediction (if `probe`'s loaded DSMEM round trip is under half L2's): the backward's
#    16384 rows −5 to −12 % (RMSNorm 108 → 95-103 µs, LayerNorm 114 → 100-108), 32768 −3 to −8 %; the
#    forward's split rows −3 to −10 % (LayerNorm 312-314 µs, 81 %; RMSNorm 2048×131072 288, 88 %); the
#    control ±0.5 %.
#  Outcome: (to fill)
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
C=/tmp/ab/cluster
for call in "${@:?probe|checks|ab ...}"; do
case $call in
checks|ab) [ -d $C ] || patched_copy $C docs/experiments/split-cluster-exchange.patch ;;&
checks)
  ( cd $C && export PYTHONPATH=/tmp/site:$C
    TESTS_LOG=split checked_tests 240 tests/test_split_rows.py
    TESTS_LOG=ops checked_tests 120 tests/test_ops.py -k "backward or bwd or wide or split"
    san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 90 "$san" --tool memcheck --target-processes all \
        python3 tools/sanitize_sweep.py --kind both --split only --families rms,layer_norm > "$L/memcheck.log" 2>&1
    echo "memcheck exit $?: $(grep -c ': ok (' "$L/memcheck.log") ok, $(grep -c FAIL "$L/memcheck.log") failed;" \
         "$(grep -c '^========= Invalid' "$L/memcheck.log") invalid accesses" ) ;;
ab)
  arm() {
    heuristic_in "$1" 60 --kind bwd --family rms --dtype bf16 --shapes 4096x16384,8192x32768,4096x65536
    heuristic_in "$1" 60 --kind bwd --family layer_norm --dtype bf16 --shapes 4096x16384,8192x32768
    heuristic_in "$1" 60 --kind bwd --family fused_add --dtype bf16 --shapes 4096x16384,8192x32768
    heuristic_in "$1" 40 --kind bwd --family layer_norm --dtype bf16 --recompute --shapes 4096x16384
    heuristic_in "$1" 60 --kind fwd --family layer_norm --dtype bf16 --shapes 4096x65536,2048x131072
    heuristic_in "$1" 40 --kind fwd --family rms --dtype bf16 --shapes 2048x131072
  }
  ab_rounds 2 arm "$PWD" $C | tee -a "$L/ab.log" ;;
probe)
  timeout 120 python3 tools/cluster_probe.py --rounds 4000 2>&1 | tee "$L/cluster_probe.log"
  timeout 60 python3 tools/cluster_probe.py --rounds 20000 --background no 2>&1 | tee -a "$L/cluster_probe.log" ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
