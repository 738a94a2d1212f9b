#!/usr/bin/env bash
# Device run ZZZZM (session 21, nvidia-h200; carry [".whl"]), three calls on one GPU:
#  - `bash tools/runs/device_zzzzm.sh ab` (~5 min): A/B main (base: this tree with
#    docs/experiments/forward-split-rms.patch reversed; as run, that patch held the 2-byte split only) → this tree, 2 rounds: RMSNorm's 2-byte
#    rows of 131072 / 262144 split in 1 × 8192 parts on 8 warps, three an SM (run ZZZZL's sweep: 315.0
#    / 325.3 µs against the column tiles' 348.1 / 381.6), controls 4096×65536 (whole row) and fp32
#    4096×65536 (its own split parts); then sweeps around it (parts on 4 / 8 / 16 warps, two to four an
#    SM), the same split with a 4-byte y (out_dtype fp32: the heuristic takes it for any y; not
#    measured), RMSNorm fp32 x's parts; then ZZZZJ's `bsweep` (the backward half of its sweep).
#    The register cap's fix (design change 23: a 4-byte y runs uncapped) was measured in ZZZZL's
#    fsweep in one process (4096×16384 269.5 → 104.6 µs); the sweep's heuristic lines repeat it.
#  - `bash tools/runs/device_zzzzm.sh checks` (~6 min): compute-sanitizer memcheck of the forward's split
#    configurations (the new 1 × 8192 parts among them) and of the non-split ones at their narrowest
#    widths (design changes 20-21, not run under the sanitizer in session 20), then the check-mode GPU
#    forward tests (every heuristic configuration forced against float64).
#  - `bash tools/runs/device_zzzzm.sh grid` (~7 min): the side-by-side grid → docs/bench_h200_run_zzzzm.json.
# Count (bf16 2048×131072, 537 MB minimum): the column tiles read 949 MB from DRAM (run ZZZZJ `l2`,
#   1.77×); a split part is read once from HBM and again from L2 one iteration later, after the row's
#   sums are exchanged: 132 SMs × 3 parts × 2 row blocks × 16 KB = 13 MB in flight, L2's regime, so
#   DRAM reads should fall to ~1.0× — what 315 µs (81 %) of ZZZZL suggests.
# Prediction (ab): 2048×131072 348 → 312-320 µs, 1024×262144 382 → 320-330, controls ±1 %; a 4-byte y
#   on the split ±5 % against the column tiles (the part's y is written as computed); fp32 x 1 × 4096
#   on 8 warps three an SM ±3 % against the heuristic's parts.
# Outcome: ab — 2048×131072 349.6 → 317.1, 1024×262144 381.3 → 336.0 (in the predicted range), fp16
#   348.4 → 308.8, controls ±0.2 / −2.2; a 4-byte y on the split 543-557 against the column tiles'
#   640-686 (−14 to −19 %: outside ±5 %, the column tiles re-read 4-byte y-wide rows); fp32 1 × 4096 on
#   8 three an SM 606.0 / 640.4 against 683.1 / 733.5 (outside ±3 %: −11 / −13 %). checks / verify —
#   2-byte parts on 4 warps four an SM 296.5 / 292.8; fp32 four an SM 578.3 / 582.0; memcheck 30 + 83
#   then 18 runs, 0 errors; check-mode tests 112 then 108 passed. grid → BENCHMARKS "Current numbers"
#   (2048×131072 300 µs, fp32 4096×65536 577). bwd16 — A/B RMSNorm 124.0 → 116.8, 241.7 → 226.8, the
#   fused add 163.5 → 159.7, 317.0 → 311.4; memcheck 21 runs, 0 reports, and check-mode tests 34 passed
#   (18/41 configurations, the new ones among them) before their limits (90 / 170 s).
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?ab, checks, verify, grid or bwd16} in
ab)
  B=/tmp/ab/base
  mkdir -p $B && cp -r normkit tools tests pyproject.toml $B/ \
      && (cd $B && patch -R -p1 -s < "$OLDPWD/docs/experiments/forward-split-rms.patch") || echo "base copy failed"
  ( export L=$L/ab; mkdir -p "$L"
    ab_summarised 2 "$B" "$PWD" "_r|rms|bf16|2048x131072,1024x262144,4096x65536" "_h|rms|fp16|2048x131072" \
        "_f|rms|fp32|4096x65536" )
  tune_sweep fwd rms bf16 2048x131072,1024x262144 60 1x8192:8:split:p2 1x8192:4:split:p4 1x8192:16:split:p2 \
      1x16384:32:col
  TUNE_ARGS="--out-dtype fp32 --weight-dtype fp32" tune_sweep fwd rms bf16 2048x131072,1024x262144 60 \
      1x16384:32:col 1x4096:8:split:p4
  TUNE_ARGS="--out-dtype fp32 --weight-dtype fp32" tune_sweep fwd rms bf16 8192x32768,4096x65536 60 \
      1x8192:8:split:p3 1x4096:8:split:p4 1x32768:32:reload 1x16384:32:col
  tune_sweep fwd rms fp32 4096x65536,2048x131072 60 1x4096:8:split:p3 1x2048:4:split:p4 1x4096:8:split:p2
  ( OUT=$L/bsweep bash tools/runs/device_zzzzj.sh bsweep ) ;;
checks)
  # (what `ab` left to measure, teed into the logs this time: ab's first sweep scrolled out of the
  # reply) the 2-byte split on 4 warps four an SM at 131072 too; a 4-byte y on three an SM; fp32 x's
  # parts four an SM; then the A/B of the fp32 parts (base: forward-split-rms.patch reversed; as run,
  # the tree's tables were fp32 1 × 4096 on 8 three an SM and 2-byte 1 × 8192 on 8 three an SM at 131072)
  { tune_sweep fwd rms bf16 2048x131072,1024x262144 60 1x8192:4:split:p4 1x8192:8:split:p3
    TUNE_ARGS="--out-dtype fp32 --weight-dtype fp32" tune_sweep fwd rms bf16 4096x65536,2048x131072 60 \
        1x4096:8:split:p3 1x4096:4:split:p4
    tune_sweep fwd rms fp32 4096x65536,2048x131072 60 1x4096:8:split:p4 1x2048:4:split:p4; } | tee "$L/sweep.log"
  B=/tmp/ab/base
  mkdir -p $B && cp -r normkit tools tests pyproject.toml $B/ \
      && (cd $B && patch -R -p1 -s < "$OLDPWD/docs/experiments/forward-split-rms.patch") || echo "base copy failed"
  ( export L=$L/ab; mkdir -p "$L"; ab_summarised 2 "$B" "$PWD" "_f|rms|fp32|4096x65536,2048x131072" )
  memcheck_split fwd 120
  ( OUT=$L MEMCHECK_LIMIT=120 FAMILIES=rms,fused_add,layer_norm WIDTHS=lo bash tools/device_reliability.sh memcheck_fwd )
  checked_tests 150 tests/test_properties.py tests/test_split_rows.py tests/test_reliability.py \
      -k "(gpu_heuristic_config and fwd) or (test_split_rows and fwd) or for_each_y or (bitwise and fwd) or nonfinite" ;;
verify)
  # the landed parts (4 warps four an SM for 2-byte x; fp32 on 8 four an SM): a 4-byte y on 4 against
  # 8 warps at 32768 / 262144 (measured on 8 only), memcheck of the split forward, check-mode tests
  TUNE_ARGS="--out-dtype fp32 --weight-dtype fp32" tune_sweep fwd rms bf16 8192x32768,1024x262144 60 \
      1x4096:8:split:p4 | tee "$L/sweep.log"
  memcheck_split fwd 90
  checked_tests 150 tests/test_properties.py tests/test_split_rows.py tests/test_reliability.py \
      -k "(gpu_heuristic_config and fwd) or (test_split_rows and fwd) or for_each_y or (bitwise and fwd) or nonfinite" ;;
bwd16)
  # design change 24 (run after the grid): the backward's 2-byte rows of 16384 — RMSNorm's in 1 × 4096
  # parts, the fused add's in 1 × 2048 capped four an SM (ab's bsweep: −3 to −6 %) — A/B against
  # main (docs/experiments/backward-split-16384.patch reversed), memcheck of the backward's split
  # parts at their narrowest widths, check-mode backward tests of every heuristic configuration
  B=/tmp/ab/base
  mkdir -p $B && cp -r normkit tools tests pyproject.toml $B/ \
      && (cd $B && patch -R -p1 -s < "$OLDPWD/docs/experiments/backward-split-16384.patch") || echo "base copy failed"
  ( export L=$L/ab; mkdir -p "$L"; ab_summarised 2 "$B" "$PWD" "_b|rms,fused_add|bf16|4096x16384,8192x16384" )
  san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 90 "$san" --tool memcheck --target-processes all python3 \
      tools/sanitize_sweep.py --kind bwd --split only --widths lo --families rms,fused_add > "$L/memcheck_bwd16.log" 2>&1
  echo "memcheck bwd split lo (exit $?): $(grep -c ': ok (' "$L/memcheck_bwd16.log") runs ok," \
       "$(grep -c FAIL "$L/memcheck_bwd16.log") failed; $(grep 'ERROR SUMMARY' "$L/memcheck_bwd16.log" | sort | uniq -c | tr '\n' ' ')"
  checked_tests 170 tests/test_properties.py tests/test_split_rows.py -k "(gpu_heuristic_config and bwd) or (split_backward and None)" ;;
grid)
  side_by_side 440; tail -5 "$OUT/bench.log" ;;
esac
pack_logs
