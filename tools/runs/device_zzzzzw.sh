#!/usr/bin/env bash
# Device run ZZZZZW (session 35, nvidia-h200; no carry needed):
#  Why: run ZZZZZV measured the spin wait (docs/experiments/split-forward-spin.patch) 0.4-2.5 % FASTER on
#  the forward's polling split parts, but on the backward's prefetching parts (split-backward-spin.patch)
#  +6 % / +30 % (recomputing RMSNorm bf16 4096×16384 / 2048×131072), +17 % / −8 % (recomputing
#  LayerNorm), −1.5 % (fp32 rows of 262144). The cause in the code: with SPIN, stats._poll awaits the
#  recomputing backward's quantities one wait after another — RMSNorm's Σ(g·h), then Σh² (two L2 round
#  trips in a row where the poll had every load in flight at once); LayerNorm's (Σ(g·h), Σg), then
#  (M2, mean). docs/experiments/split-backward-spin-joined.patch: every prefetching part spins (SPIN=True)
#  and _poll awaits everything a part reads in ONE wait (stats._await_four_words for the recomputing
#  LayerNorm's four words; RMSNorm's Σ(g·h) with Σh² in _await_two_words; a float64's halves together).
#  CPU (sm_90, tools/ptx_stats.py): recomputing RMSNorm 1 spin wait reading 2 words, LayerNorm 1 reading 4;
#  registers 255 → 255 (RMSNorm 16384), 128 (cap) → 128 (131072, spill 16 → 20 B), LayerNorm 244 → 249.
#  With it and the forward's spin no split part polls: the hazard of session 33 is gone.
#  - `ab` (~2 min, 2 rounds, main's backward → joined spin; the same arm as ZZZZZV's spinbwd).
#    Prediction: −3 to +2 % on every shape (one round trip each, as the poll; the fp32 rows as ZZZZZV).
#  - `checks` (~6 min): split_checks on this tree (forward spin + joined backward spin).
#    Prediction: all pass.
#  - `tiles` (~1.5 min): if `ab` finds a shape slower, other split tiles of it in this tree (tools/tune.py
#    --each): the recomputing RMSNorm bf16 2048×131072 (ZZZZZW `ab`: +11.6 % on the heuristic's 1 × 4096 on
#    8 warps, two an SM, capped at 128 registers). Prediction: a tile within 1 % of the poll's 473 µs.
#  - `stagedrec` (~1.5 min): `tiles` found the staged 1 × 8192 on 8 warps (467.6 µs) faster than the poll
#    (473) — the heuristic never stages a recomputing backward's parts (config/backward.py: written when their
#    spin waits ran one after another). The staged parts (_STAGED 1 × 2048 on 4 warps four an SM capped at 128,
#    _STAGED_4096_PARTS 1 × 4096 on 4 two an SM, and 1 × 8192 on 8) against the heuristic's prefetching
#    parts, recomputing RMSNorm and LayerNorm bf16 4096×16384, 4096×65536, 2048×131072, 1024×262144.
#    Prediction: staged 0-10 % faster where the saved-statistics backward stages the same rows.
#  - `stagedrec2` (~30 s, the same sweep; run as the same commands inline): RMSNorm and LayerNorm 4096×32768, the fused add 4096×16384,
#    4096×65536, 2048×131072.
#  - `heur` (~2.5 min): config/backward.py now stages the recomputing backward's 2-byte parts (the sweeps'
#    winners): the heuristic's time (tools/tune.py --heuristic-only, each output checked) at the swept shapes,
#    and tests/test_split_rows.py -k recompute in check mode (limit 100 s). Prediction: the sweeps' times, ok.
#  Outcome (session 35, 2026-12-02):
#  - `ab` (µs, 2 rounds, poll → joined spin): recomputing RMSNorm bf16 4096×16384 126.4 / 127.8 → 125.1 /
#    125.1 (−1.6 %), 2048×131072 472.4 / 474.7 → 530.5 / 526.1 (+11.6 %: outside the prediction); LayerNorm
#    4096×16384 142.9 / 142.9 → 140.8 / 140.4 (−1.6 %), 2048×131072 772.1 / 765.7 → 667.7 / 670.1 (−13 %);
#    fp32 RMSNorm 1024×262144 910.8 / 920.3 → 890.6 / 888.7 (−2.8 %), the fused add 1162.4 / 1144.6 →
#    1142.3 / 1140.3 (−1.1 %).
#  - `tiles` (one process): the heuristic's 1 × 4096 on 8 capped 515.3 µs; uncapped 624.1; on 4 warps two
#    an SM 482.5; 1 × 8192 on 8 prefetching 489.0; staged 1 × 8192 on 8 467.6 (best); 2 × 2048 on 4 529.3.
#    The heuristic never staged a recomputing part: hence `stagedrec`.
#  - `checks`: test_split_rows 275 passed (1 skipped), test_ops backward / split 60 passed, memcheck 40 ok,
#    0 failed, 0 invalid accesses before its 150 s limit.
#  - `stagedrec` / `stagedrec2` (µs, staged against the prefetching heuristic in one process): staged won
#    everywhere but at 1024×262144 RMSNorm (473.0 / 475.9, a tie) — RMSNorm 4096×16384 113.3 / 126.0,
#    4096×32768 220.3 / 242.7, 4096×65536 440.5 / 506.9, 2048×131072 452.3 / 524.6; LayerNorm 127.5 / 141.6,
#    245.1 / 367.7, 502.0 / 667.5, 519.3 / 671.3, 1024×262144 554.9 / 740.8; the fused add 4096×16384 132.8 /
#    164.1, 4096×65536 513.6 / 678.9, 2048×131072 525.9 / 695.4 (every winner in config/backward.py's
#    comment). Landed as the recomputing backward's 2-byte staged parts (_staged_split, recompute).
#  - `heur`: not run (no device time left: 234 s, too little to start a machine); tools/runs/device_zzzzzx.sh heur.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
B=/tmp/ab/poll-bwd
for call in "${@:?ab|checks|tiles|stagedrec|stagedrec2|heur ...}"; do
case $call in
ab) [ -d $B ] || patched_copy $B -R docs/experiments/split-backward-spin-joined.patch
  ab_rounds 2 prefetch_parts_arm $B "$PWD" | tee -a "$L/ab.log" ;;
checks) split_checks "$PWD" 150 ;;
tiles) TUNE_LIMIT=150 tune_in "$PWD" --kind bwd --recompute --family rms --dtype bf16 --shapes 2048x131072 \
    $(printf -- "--config 1x%s " 4096:8:split:pf:p2:r128 4096:8:split:pf:p2 4096:4:split:pf:p2 2048:4:split:pf:p2 \
      4096:4:split:pf:p3:r170 8192:8:split:pf 4096:4:split:a3 2048:4:split:a3:r128 8192:8:split:a3) \
    --config 2x2048:4:split:pf:p2 | tee -a "$L/tiles.log" ;;
stagedrec|stagedrec2) staged=$(printf -- "--config 1x%s " 2048:4:split:a3:p4:r128 4096:4:split:a3:p2 8192:8:split:a3) ;;&
stagedrec) for family in rms layer_norm; do
    TUNE_LIMIT=100 tune_in "$PWD" --kind bwd --recompute --family $family --dtype bf16 \
      --shapes 4096x16384,4096x65536,2048x131072,1024x262144 $staged
  done | tee -a "$L/stagedrec.log" ;;
stagedrec2) for family in rms layer_norm; do
    TUNE_LIMIT=60 tune_in "$PWD" --kind bwd --recompute --family $family --dtype bf16 --shapes 4096x32768 $staged
  done | tee -a "$L/stagedrec2.log"
  TUNE_LIMIT=80 tune_in "$PWD" --kind bwd --recompute --family fused_add --dtype bf16 \
    --shapes 4096x16384,4096x65536,2048x131072 $staged | tee -a "$L/stagedrec2.log" ;;
heur) for family in rms layer_norm fused_add; do
    heuristic_in "$PWD" 60 --kind bwd --recompute --family $family --dtype bf16 \
      --shapes 4096x16384,4096x32768,4096x65536,2048x131072,1024x262144
  done | tee -a "$L/heur.log"
  TESTS_LOG=recompute checked_tests 100 tests/test_split_rows.py -k recompute ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
