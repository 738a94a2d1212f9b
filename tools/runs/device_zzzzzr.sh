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
#  Outcome (session 32; ~11 of 30 device minutes, then no machine was lent for the rest of the session):
#  - `probe` ran: the inline-PTX cluster works in Triton 3.6 (extra dynamic shared memory at the window's
#    end, num_ctas in the packed metadata). A DSMEM round trip 466 cycles idle, 458 with the copy streaming
#    on the other SMs; through L2 857-859 idle. The loaded L2 case hung (the 120 s limit): the probe's
#    ping-pong ran on every thread of the CTA, so a warp that raced ahead overwrote the word a slower warp of
#    the partner still waited for (fixed after the run: thread 0 plays, the others wait at the closing
#    cluster barrier; the PTX passes ptxas on the CPU, not yet re-run on a GPU). Against the prediction:
#    DSMEM inside its 300-600 band; L2 idle 859 (the band was 1200-2500 loaded, not measured): DSMEM
#    0.54x L2 idle, loaded unknown (likely under half: loaded L2 only grows). Taken as a go for `checks`.
#  - `checks` HUNG: tests/test_split_rows.py passed its first 12 cases (7x1000 on 8 parts of 128,
#    bf16/fp32 clustered, fp64 through XCHG; RMSNorm and LayerNorm, saved and recomputed), then the 13th
#    (300x4097, 5 parts of 1024, 2 rows a block, ~6 row blocks a group) ran into the 240 s limit; the
#    memcheck sweep (split rows of 3 parts) into its 90 s with no case done; tests/test_ops.py's backward
#    59 passed (no clustered launch among them). Both hanging shapes have fewer parts than SPLIT's lanes of
#    ranks and reuse the ring; the passing ones neither. Not found on the CPU (the sm_90 PTX of the
#    5-part kernel reads as intended: one send a thread, per-warp polling, tags t + 1). One undefined
#    step fixed in the patch: `mapa` ran for the disabled lanes too, with ranks 5-7 naming no CTA of a
#    5-CTA cluster (now predicated like the store). `ab` not run.
#  - `diag` added (tools/runs/cluster_diag.py, each case in its own process under 25 s): parts 3/4/5/8,
#    1 or 2 rows a block, 1 / 3 / 5 / 40 row blocks a group, with and without the finisher, the forward.
#  Outcome (session 33, `diag probe`, ~4 device minutes):
#  - `diag`: 1, 3 and 5 row blocks a group (2-6 iterations, the ring reused up to twice) gave the float64
#    answer on 3, 5 and 8 parts; every case of ~40 row blocks a group HUNG (4, 5 and 8 parts, 1 or 2 rows a
#    block, with and without the finisher, one group or 16, the backward and the forward); 5 parts, 2 rows
#    a block, 7 iterations: the backward hung, the forward passed; NORMKIT_CLUSTER_EXCHANGE=0 passed. A
#    small chance of going wrong each iteration, not the parts or the ring (run ZZZZZS found it).
#  - `probe` (fixed): DSMEM 633 cycles a round trip idle, 733 under the copy; L2 974 idle, 1239 loaded —
#    DSMEM 0.59x L2 loaded, not under half (the prediction's bar for building the exchange; it was built).
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
C=/tmp/ab/cluster
for call in "${@:?probe|checks|ab|diag ...}"; do
case $call in
checks|ab|diag) [ -d $C ] || patched_copy $C docs/experiments/split-cluster-exchange.patch ;;&
checks) split_checks $C 90 ;;
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
diag)  # (added in session 32, after `checks` hung: tools/runs/cluster_diag.py, each case under 25 s)
  ( cd $C && PYTHONPATH=/tmp/site:$C timeout 560 python3 tools/runs/cluster_diag.py 2>&1 | tee "$L/diag.log" ) ;;
probe)
  timeout 120 python3 tools/cluster_probe.py --rounds 4000 2>&1 | tee "$L/cluster_probe.log"
  timeout 60 python3 tools/cluster_probe.py --rounds 20000 --background no 2>&1 | tee -a "$L/cluster_probe.log" ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
