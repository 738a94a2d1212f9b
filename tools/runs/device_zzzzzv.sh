#!/usr/bin/env bash
# Device run ZZZZZV (prepared in session 34 for the next session, nvidia-h200; no carry needed):
#  Why: main's forward split parts without staged loads (RMSNorm's and LayerNorm's split rows, bf16 x with
#  an fp32 y, the fused forwards' 8-byte rows) wait for their partners' row sums in a poll loop
#  (stats.await_row_sums without SPIN): each of a warp's lane groups holds a replica of the exchange tile,
#  counts its own late words with tl.sum's shuffles and decides alone whether to read again. Groups that
#  disagree split the warp inside shfl.sync — the cluster exchange's hang (run ZZZZZS). Never seen through
#  L2 (a warp's replicas read the same words in one load instruction), but not promised. The warp vote
#  fixes it and costs 0.5-3 % on these parts (runs ZZZZZT, ZZZZZU: the schedule ptxas builds around the
#  vote, with or without its uniformity hidden). docs/experiments/split-forward-spin.patch instead gives
#  them the wait the staged parts (every staged split backward, the fused forwards' 2- and 4-byte rows) use:
#  SPIN, each lane spinning in PTX on its own words until they carry this round's tag — no count, no
#  shuffle inside the wait, so no lane leaves it while another still reduces. (The backward's prefetching
#  parts — the recomputing backward, fp32 rows of 262144, 8-byte rows — also poll; spinning cost them
#  5-19 % in run ZZZZZC, so they are not in this patch.) The patch's test
#  (tests/test_gpu_compile.py test_forward_split_parts_wait_by_spinning) fails on main.
#  On the CPU (sm_90, tools/ptx_stats.py --sass): the same registers (RMSNorm bf16 127, LayerNorm 128;
#  bf16 with an fp32 y 80 → 72), row loop 815 → 791 instructions (LayerNorm 1216 → 1174), SHFL 22 → 13.
#  - `spinab` (~3 min, 2 rounds, main → spin, tools/device_env.sh poll_parts_arm: the polling
#    families but the fused forwards' 8-byte rows).
#    Prediction: −1 to +5 % — fewer instructions, but the same change cost the prefetching backward parts
#    5-19 % (run ZZZZZC, never explained); the forward was not measured then. Land it if no shape is slower
#    by more than ~0.5 % and `spinchecks` passes; otherwise the hazard's three measured fixes all cost speed,
#    and the choice (a hang that has never happened against 0.5-3 %) goes in RELIABILITY.
#  - `spinchecks` (~5 min): split_checks on the spin build (test_split_rows whole, test_ops backward /
#    split, memcheck of the split rows). Prediction: all pass.
#  - `spinbwd` (~3 min, 2 rounds, main → docs/experiments/split-backward-spin.patch; only with device time
#    left after the two above): the same wait for the backward's prefetching split parts — the
#    recomputing backward (RMSNorm and LayerNorm bf16 4096×16384, 2048×131072) and fp32 rows of 262144
#    (RMSNorm, the fused add). Run ZZZZZC measured spinning there 5-19 % slower on session 24's kernel
#    (before design changes 32-38). Prediction: +3 to +15 % (ZZZZZC repeated); if within ~0.5 %, the
#    hazard's last places could go the same way (then with the poll loop's code gone).
#  Outcome (session 35, 2026-12-02; µs, 2 rounds, main → spin):
#  - `spinab`: FASTER, not slower — RMSNorm bf16 2048×131072 288.7 / 286.6 → 281.0 / 281.6 (−2.1 %, 87-88 →
#    90-91 % of copy), 1024×262144 285.8 / 282.6 → 280.1 / 280.9 (−1.3 %), fp32 4096×65536 572.7 / 570.8 →
#    560.6 / 564.0 (−1.7 %), bf16 x with an fp32 y 4096×65536 424.6 / 424.7 → 421.1 / 424.4 (−0.4 %);
#    LayerNorm bf16 2048×131072 319.3 / 319.3 → 319.9 / 321.6 (+0.45 %), fp32 4096×65536 602.1 / 604.5 →
#    588.5 / 588.5 (−2.5 %). Inside the prediction's −1 to +5 % but for the gains beyond −1 %.
#  - `spinchecks`: test_split_rows 275 passed (1 skipped), test_ops backward / split 60 passed, memcheck
#    44 ok, 0 failed, 0 invalid accesses before its 150 s limit. Landed (session 35).
#  - `spinbwd` (ZZZZZC repeated): recomputing RMSNorm bf16 4096×16384 126.8 / 126.1 → 134.4 / 136.7 (+7 %),
#    2048×131072 474.7 / 471.5 → 613.6 / 618.6 (+30 %); LayerNorm 4096×16384 143.5 / 144.4 → 170.6 / 168.4
#    (+18 %), 2048×131072 770.7 / 768.8 → 705.4 / 704.5 (−8 %); fp32 RMSNorm 1024×262144 909.6 / 912.2 →
#    897.9 / 894.1 (−1.6 %), the fused add 1156.4 / 1155.4 → 1130.4 / 1147.9 (−1.4 %). The losses are the
#    recomputing parts' only: with SPIN their quantities were awaited one wait after another (two L2 round
#    trips a row block where the poll had one) — fixed in run ZZZZZW. Since session 35 both patches are in
#    main, so this script's calls no longer apply: kept as the record.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
S=/tmp/ab/spin
B=/tmp/ab/spin-bwd
for call in "${@:?spinab|spinchecks|spinbwd ...}"; do
case $call in
spinab|spinchecks) [ -d $S ] || patched_copy $S docs/experiments/split-forward-spin.patch ;;&
spinab) ab_rounds 2 poll_parts_arm "$PWD" $S | tee -a "$L/spinab.log" ;;
spinchecks) split_checks $S 150 ;;
spinbwd) [ -d $B ] || patched_copy $B docs/experiments/split-backward-spin.patch
  ab_rounds 2 prefetch_parts_arm "$PWD" $B | tee -a "$L/spinbwd.log" ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
