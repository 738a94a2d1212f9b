#!/usr/bin/env bash
# Device run ZZZZZT (prepared in session 33 for the next session, nvidia-h200; no carry needed):
#  Why: run ZZZZZS found the cluster exchange's hang — the exchange's (SPLIT, BLOCK_M) tile is smaller
#  than a warp, so 8-lane groups of a warp each hold a replica and decide on their own (tl.sum's
#  shuffles) whether to poll again; groups that disagree split the warp, and the lanes still polling wait
#  in shfl.sync over the whole warp for lanes gone to a barrier. main's polling split parts (the forward's
#  split rows, the backward's unstaged ones) have the same loop through L2 (sm_90 SASS: BRA.DIV /
#  WARPSYNC.COLLECTIVE paths in it). Their replicas read each word in one request and have never been seen
#  to disagree, but the PTX memory model does not promise it. docs/experiments/split-poll-warp-vote.patch
#  votes the count over the warp (stats._warp_any, vote.sync.any), as the fixed cluster patch does.
#  On the CPU: sm_90 SASS of a polling part has 2 VOTE instead of 8 divergent-path instructions, 32
#  registers instead of 40; tests/test_gpu_compile.py passes on the patched tree.
#  - `checks` (~4 min): the patched tree in check mode — tests/test_split_rows.py whole, tests/test_ops.py's
#    backward and split cases, then compute-sanitizer memcheck of the split backward and forward.
#    Prediction: all pass (the vote changes when a warp stops polling, not what it reads).
#  - `ab` (~4 min, 2 rounds, this tree → the patched one, the heuristic's tiles): the forward's polling
#    split parts — LayerNorm and RMSNorm bf16 at 4096×65536 and 2048×131072 — and the backward's staged
#    RMSNorm 4096×16384 (its waits spin in PTX: the control). Prediction: ±0.5 % everywhere (one vote a
#    poll; the divergent paths it removes run only when groups disagree). Land it if `checks` passes and
#    no shape is slower by more than the noise (~0.5 %).
#  Outcome (session 34, `checks ab`, 497 s): `checks` passed — tests/test_split_rows.py 275 passed, 1
#  skipped; tests/test_ops.py's backward / split 60 passed; memcheck 32 ok, 0 failed, 0 invalid accesses
#  before its 150 s limit. `ab` (µs, r1 / r2, main → vote): LayerNorm fwd 4096×65536 314.7 / 315.9 →
#  316.6 / 316.0 (+0.3 %), 2048×131072 318.3 / 318.2 → 317.5 / 319.2 (0); RMSNorm fwd 4096×65536 (a whole
#  row, no poll: a second control) 259.9 / 261.0 → 259.0 / 259.8; RMSNorm bwd 4096×16384 107.9 / 107.6 →
#  107.5 / 107.9 (0). RMSNorm fwd 2048×131072 289.4 / 288.8 → 294.0 / 293.9: +1.7 %, both rounds —
#  prediction failed there, not landed. On the CPU afterwards (tools/ptx_stats.py --sass): the vote
#  takes that part from 127 to 96 registers, so 5 programs an SM fit where the grid asks for 4 (LayerNorm's
#  parts stay at their 128 cap: 4 fit); run ZZZZZU separates the two.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
V=/tmp/ab/vote
for call in "${@:?checks|ab ...}"; do
case $call in
checks|ab) [ -d $V ] || patched_copy $V docs/experiments/split-poll-warp-vote.patch ;;&
checks) split_checks $V 150 ;;
ab)
  arm() {
    heuristic_in "$1" 50 --kind fwd --family layer_norm --dtype bf16 --shapes 4096x65536,2048x131072
    heuristic_in "$1" 50 --kind fwd --family rms --dtype bf16 --shapes 4096x65536,2048x131072
    heuristic_in "$1" 40 --kind bwd --family rms --dtype bf16 --shapes 4096x16384
  }
  ab_rounds 2 arm "$PWD" $V | tee -a "$L/ab.log" ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
