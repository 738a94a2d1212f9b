#!/usr/bin/env bash
# Device run ZZZZZS (session 33, nvidia-h200; no carry needed):
#  Why: run ZZZZZR's `diag` (session 33) found which clustered split launches finish: every case of 1-5
#  row blocks a group (2-6 iterations, the ring reused up to twice) gave the float64 answer; every case of
#  ~40 row blocks a group hung, on 4, 5 and 8 parts, 1 or 2 rows a block, with and without the finisher,
#  one group or many, the backward and the forward (5 parts of 1024, 2 rows a block, 7 iterations: the
#  backward hung, the forward passed). Not the ring reuse as such, not the parts' count, not co-residency
#  (one cluster hangs alone): something that goes wrong with a small chance each iteration.
#  - `watch` (~2 min; prepared in session 33 after `diag`): docs/experiments/split-cluster-watch.patch on top of the cluster patch bounds the
#    backward's polling wait (NORMKIT_CLUSTER_WATCH=524288 polls, ~30 ms) and records each program's first
#    timed-out wait (stats._watch_record: the iteration, the tags of the words it saw for each part, its
#    partners' progress, its cluster rank). Prediction: if a partner's word carries a newer tag than awaited,
#    the ring was overrun; an older tag with the partner past that iteration, a store lost or overwritten
#    by a stale replica; the partner itself stuck, a cycle of waits. Then NORMKIT_CLUSTER_FENCE=1 (a
#    fence.acq_rel.cluster before each send, no watch): if it finishes, an ordering the PTX memory model
#    does not give without it.
#  Outcome (session 33; ~26 of 30 device minutes with run ZZZZZR's `diag probe` before it):
#  - `watch`, first form: every case still ran into its limit, the bounded wait too — a record's
#    tl.debug_barrier sat under a branch on the warp's own count (a hang of the watch's own making), so
#    it said nothing. Second form (marks in pinned host memory, read 10 s into the hang, no barrier):
#    "bwd 8p one group": parts 0-6 done with the loop (at the closing cluster barrier), part 7 at
#    iteration 54 with warps 1-3 at the loop's top (the next CTA barrier) and warp 0 SPLIT between lanes
#    at iteration 53 (published, still in the wait) and lanes at iteration 54. The same picture in every
#    hung group of "bwd 5p bm2 many" and "bwd 8p 40blk": one warp of one part split across two
#    iterations. Cause: the (SPLIT, BLOCK_M) tile of the exchange's words is held by several 8-lane
#    groups of a warp (replicas), each counting its late words with shuffles of its own; a warp's 64-bit
#    shared-memory read is served half a warp at a time, so a partner's store landing between the halves
#    gives the groups different counts; the groups that leave the poll loop go on while the others spin
#    in shfl.sync over the whole warp (membermask -1) — lanes waiting on lanes that have gone to a
#    barrier. Through L2 the replicas read an address in the same request and never disagreed.
#    Fixed in the cluster patch: the count voted over the whole warp (cluster.warp_any, vote.sync.any;
#    ptxas then drops the loop's divergent-path code).
#  - The fence variant (a fence.acq_rel.cluster before each send, no vote) hung as before: not ordering.
#  - `diag` on the fixed patch: all 18 cases finish with the float64 answer (max |error| 4.5e-7 - 1.6e-6),
#    including the 3 new staged ones (waits spinning in PTX) and every case that hung.
#  - `ab` (2 rounds, this tree → the fixed patch): prediction −5 to −12 % on the clustered backward rows;
#    outcome +25 to +37 % — RMSNorm bwd bf16 4096×16384 106.8/107.2 → 141.1/141.0 µs, 8192×32768
#    407.5/405.3 → 544.9/544.9, LayerNorm bwd 4096×16384 112.8/115.0 → 150.1/151.0, 8192×32768
#    423.3/427.6 → 584.5/585.4, LayerNorm fwd 4096×65536 311.9/313.1 → 388.5/390.4; RMSNorm fwd
#    2048×131072 288.0/287.6 → 291.5/292.3 (+1.4 %); the control (4096×65536, 32 parts, not clustered)
#    409.1/410.7 → 407.4/409.1.
#  - `occupancy` (tools/runs/cluster_occupancy.py, cuOccupancyMaxActiveClusters): 66 clusters of 8 launched,
#    62 fit at once (RMSNorm / LayerNorm bwd 4096×16384, LayerNorm fwd 4096×65536); 33 of 16 launched, 28
#    fit (RMSNorm bwd 8192×32768); RMSNorm fwd 2048×131072 33 launched, 35 fit — the one shape that did not
#    slow down. A cluster must fit one GPC: the grid sized for every program resident ran a second wave.
#  - `fit` (1 round; docs/experiments/split-cluster-fit.patch caps the grid to the clusters that fit):
#    RMSNorm bwd 4096×16384 106.9 → 106.4 µs (−0.5 %), 8192×32768 404.2 → 420.5 (+4.0 %: 448 programs
#    instead of 528), LayerNorm bwd 4096×16384 112.7 → 114.0 (+1.2 %), LayerNorm fwd 4096×65536
#    313.0 → 311.4 (−0.5 %). With every cluster resident the DSMEM exchange is worth ±1 %: the L2 round
#    trip's share of warp samples is latency the SM's other programs already cover. Not landed.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
C=/tmp/ab/watch
for call in "${@:?watch|diag|ab|occupancy|fit ...}"; do
case $call in
watch)  # (second call: marks in pinned memory, read after 10 s while a launch hangs)
  [ -d $C ] || patched_copy $C docs/experiments/split-cluster-exchange.patch docs/experiments/split-cluster-watch.patch
  ( cd $C && export PYTHONPATH=/tmp/site:$C
    for case in "bwd 8p one group" "bwd 5p bm2 many" "bwd 8p 40blk"; do
      echo "== watch: $case"
      NORMKIT_CLUSTER_WATCH=524288 timeout 45 python3 tools/runs/cluster_diag.py $case > $L/w.txt 2>&1
      echo "rc $?"; grep -q "cannot be accessed" $L/w.txt && NORMKIT_WATCH_DEVICE=1 NORMKIT_CLUSTER_WATCH=524288 \
          timeout 45 python3 tools/runs/cluster_diag.py $case > $L/w.txt 2>&1
      head -c 6000 $L/w.txt | tail -40
    done ) 2>&1 | tee "$L/watch.log" ;;
diag|ab|occupancy) [ -d /tmp/ab/cluster ] || patched_copy /tmp/ab/cluster docs/experiments/split-cluster-exchange.patch ;;&
diag)  # the cluster patch with the warp vote (session 33): tools/runs/cluster_diag.py, every case under 25 s
  ( cd /tmp/ab/cluster && PYTHONPATH=/tmp/site:/tmp/ab/cluster timeout 500 python3 tools/runs/cluster_diag.py 2>&1 | tee "$L/diag.log" ) ;;
ab)  # this tree → the patched one, 2 rounds, the heuristic's tiles (run ZZZZZR's arm, fewer shapes)
  arm() {
    heuristic_in "$1" 45 --kind bwd --family rms --dtype bf16 --shapes 4096x16384,8192x32768,4096x65536
    heuristic_in "$1" 40 --kind bwd --family layer_norm --dtype bf16 --shapes 4096x16384,8192x32768
    heuristic_in "$1" 40 --kind fwd --family layer_norm --dtype bf16 --shapes 4096x65536
    heuristic_in "$1" 40 --kind fwd --family rms --dtype bf16 --shapes 2048x131072
  }
  ab_rounds 2 arm "$PWD" /tmp/ab/cluster | tee -a "$L/ab.log" ;;
occupancy)  # clusters that fit at once against those launched (tools/runs/cluster_occupancy.py)
  ( cd /tmp/ab/cluster && PYTHONPATH=/tmp/site:/tmp/ab/cluster timeout 200 python3 tools/runs/cluster_occupancy.py 2>&1 | tail -20 | tee "$L/occupancy.log" ) ;;
fit)  # the cluster patch with its grid capped to the clusters that fit at once, against this tree, 1 round
  [ -d /tmp/ab/fit ] || patched_copy /tmp/ab/fit docs/experiments/split-cluster-exchange.patch docs/experiments/split-cluster-fit.patch
  arm() {
    heuristic_in "$1" 45 --kind bwd --family rms --dtype bf16 --shapes 4096x16384,8192x32768
    heuristic_in "$1" 40 --kind bwd --family layer_norm --dtype bf16 --shapes 4096x16384
    heuristic_in "$1" 40 --kind fwd --family layer_norm --dtype bf16 --shapes 4096x65536
  }
  ab_rounds 1 arm "$PWD" /tmp/ab/fit | tee -a "$L/fit.log" ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
