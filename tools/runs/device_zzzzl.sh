#!/usr/bin/env bash
# Device run ZZZZL (prepared in session 20 for the next session, nvidia-h200; carry [".whl"]), two
# calls on one GPU (and ZZZZJ's `bsweep`), then land what wins (A/B + check-mode tests first) and re-run the grid
# (`tools/runs/device_zzzzk.sh grid` is the template):
#  - `bash tools/runs/device_zzzzl.sh checks` (~3 min): compute-sanitizer memcheck of the forward's
#    configurations at each one's narrowest width (design changes 20-21: the snaked column tiles and
#    RMSNorm's whole row of 65536 among them; not run under the sanitizer in session 20).
#  - `bash tools/runs/device_zzzzl.sh fsweep` (~4 min): the forward's wide rows (tools/tune.py --kind fwd).
#    Count (ptxas, sm_90, `tools/ptx_stats.py --kind fwd --tile ...`; run ZZZZJ `l2`: a row's second
#    read comes from L2 when ≤ ~17 MB of rows are in flight, not at 33 MB):
#    * split rows in big parts, one or two an SM — 1 × 32768 on 32 warps (RMSNorm 59 registers, the
#      fused add / LayerNorm 64, 0 B spilled: one an SM), 1 × 16384 on 32 warps (57 / 63 / 63: one an
#      SM), 1 × 16384 on 16 (RMSNorm 64: two an SM; the others 93-97: one), 1 × 8192 on 8 (75-80:
#      three an SM). A part holds blocks t and t − 1 (the pipelined exchange): 132 × 2 × 64 KB =
#      17 MB in flight for 1 × 32768 one an SM — L2's regime — against the column tiles' 33-66 MB;
#      session 14's split forward (1 × 4096 on 8 warps, four an SM, 32 parts a row: RMSNorm 375-415
#      against the column tiles' 309-374) paid the exchange on small parts, not L2 misses;
#    * LayerNorm's three-read 1 × 8192 tiles on 16 warps capped at 32 registers (0 B spilled: four
#      programs an SM, against three at 40 registers — session 20 found two an SM, 50 registers, 12 %
#      slower: more programs an SM may be the other way up) at 8192×32768, where torch.compile runs
#      279 µs against normkit's 317 (its kernel: 1 × 16384 on 32 warps, three reads — ours of that tile
#      46 registers, one an SM; capped at 32: two an SM, 0 B spilled); and LayerNorm's rows of 32768 / 65536 in two split parts on 32
#      warps (1 × 16384 / 1 × 32768, one an SM: 9 / 17 MB in flight against the three-read tiles'
#      25-33 MB).
#  - `bash tools/runs/device_zzzzj.sh bsweep` (~4 min): the backward half of that script's sweep (not run
#    in session 20): 16384-wide tiles incl. 16-warps-an-SM parts, every family; the
#    fused add's rows of 262144 on 16 warps an SM; fp32 1 × 2048 reloading parts capped at 128, four an
#    SM (incl. the fused add fp32 4096×16384, a tie with Liger); LayerNorm's one-row split parts at
#    65536 / 131072. Its counts and predictions: tools/runs/device_zzzzj.sh's header.
# Prediction (fsweep, fp32 y): the capped rows' spills cost ≤ 3 % (local memory in L1) — ±3 % against
#   the uncapped rows; the whole row of 65536 (332 B spilled) ±5 % against the column tiles (the
#   heuristic's since session 20's out_element_size).
# Prediction (fsweep): RMSNorm 2048×131072 1 × 32768 split parts 300-330 µs (80-88 %) if the column
#   tiles' 1.77× DRAM re-reads are what they wait on, ≥ 349 if the exchange's wait costs more than the
#   misses save; 1024×262144 likewise against 382; the fused add 4096×65536 / 2048×131072 ±5 % against
#   its 1 × 4096 parts (602 / 611: 16-33 rows in flight, not L2-bound); LayerNorm 2048×131072 −5 to
#   −15 % against 384 (2.0× re-reads); the capped three-read tiles at 8192×32768 −3 to −8 % (317); the
#   two-part split at 4096×65536 −5 to −15 % (353) if the exchange's wait hides behind 32 warps, at
#   8192×32768 ±5 % (its tiles' rows in flight mostly fit L2 already).
# Outcome (session 21, run ZZZZL = `fsweep` only; `checks` ran as tools/runs/device_zzzzm.sh's): RMSNorm's
#   1 × 32768 split parts 349.8 / 358.9 µs (2048×131072 / 1024×262144: no better than the column tiles'
#   348.1 / 381.6), the 1 × 8192 parts on 8 warps three an SM 315.0 / 325.3 → design change 22 (refined
#   in ZZZZM); LayerNorm's splits and capped three-read tiles slower everywhere (wrong); the fused add's
#   ±1 % / +3-26 % (right); a 4-byte y under the cap 269.5 against 104.6 uncapped (4096×16384) and
#   977.4 against 520.3 (8192×32768): the prediction (≤ 3 %) wrong by 2.6× → design change 23.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?checks or fsweep} in
checks)
  ( OUT=$L MEMCHECK_LIMIT=170 FAMILIES=rms,fused_add,layer_norm WIDTHS=lo bash tools/device_reliability.sh memcheck_fwd ) ;;
fsweep)
  tune_sweep fwd rms bf16 2048x131072,1024x262144 90 1x32768:32:split 1x16384:32:split 1x16384:16:split:p2 \
      1x8192:8:split:p3
  tune_sweep fwd layer_norm bf16 2048x131072,1024x262144 90 1x32768:32:split 1x16384:32:split 1x8192:8:split:p3
  tune_sweep fwd fused_add bf16 4096x65536,2048x131072 90 1x32768:32:split 1x16384:32:split 1x8192:8:split:p3
  tune_sweep fwd layer_norm bf16 8192x32768 60 1x8192:16:col:two:r32 1x8192:16:col:two 1x16384:32:col:two:r32 \
      1x16384:32:split
  # LayerNorm's rows of 65536 (72 %: 264 rows = 33 MB in flight on the three-read tiles) in two parts
  tune_sweep fwd layer_norm bf16 4096x65536 60 1x32768:32:split 1x16384:32:split
  # bf16 x, fp32 y and weight (out_dtype): RMSNorm's whole rows capped at 32 registers spill with a
  # 4-byte y (ptxas, sm_90: 16384 206 B, 32768 190 B; the whole row of 65536 uncapped 332 B, which
  # the heuristic now leaves to the column tiles for a 4-byte y): against the uncapped rows, the whole
  # row of 65536 and the column tiles
  TUNE_ARGS="--out-dtype fp32 --weight-dtype fp32" tune_sweep fwd rms bf16 4096x16384,8192x32768,4096x65536 90 \
      1x16384:16:reload 1x32768:32:reload 1x65536:32:reload 1x16384:32:col ;;
esac
pack_logs
