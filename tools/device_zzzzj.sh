#!/usr/bin/env bash
# Device run ZZZZJ (prepared in session 19 for the next session, nvidia-h200; carry [".whl"]), three
# calls on one GPU:
#  - `bash tools/device_zzzzj.sh checks` (~9 min): design change 19's open checks — compute-sanitizer
#    memcheck of the capped split backward parts (`--only splitpfc128`: the two new 16-warps-an-SM parts
#    and LayerNorm's rows of 32768), then the check-mode GPU tests ZZZZC ran for design change 18
#    (every heuristic configuration forced against float64, test_split_rows, bitwise, non-finite,
#    eps = 0) on main as it is.
#  - `bash tools/device_zzzzj.sh grid` (~5 min): the side-by-side grid with design changes 18 + 19
#    (→ docs/bench_h200_run_zzzzj.json, `python tools/bench_tables.py docs/bench_h200_run_zzzzj.json
#    --write`, then the prose of "Current numbers", the targets paragraphs, README's brief).
#  - `bash tools/device_zzzzj.sh sweep` (~3-4 min): tools/device_zzzzb.sh's 16384-wide sweep (1 × 4096 on
#    4 warps against the heuristic's 2 × 2048, every family, 4096×16384 / 8192×16384) and the fused
#    add's rows of 262144 on 16 warps an SM (not measured in session 19); the fp32 parts on 16 warps an SM
#    (the fused add's fp32 4096×16384 is the one shape where a peer leads: Liger 283 µs against 285).
# Prediction: checks 0 errors / 0 failed; grid: RMSNorm bf16 4096×65536 / 2048×131072 430-440 µs
# (run ZZZZH's A/B), the fused add 600-615; the rest within ±2 % of run ZZZZD; sweep: 1 × 4096 ±2 %
# at 16384 (the fused add's 3 % of design change 17 came back with design change 18: 164 µs); fp32
# on 16 warps −2 to −5 % for RMSNorm (no spill), ±3 % for the fused add / LayerNorm (spills);
# LayerNorm's 1 × 2048 three an SM ±5 % (more warps, but twice the parts a row to poll and one row a
# block: LayerNorm's parts are near issue-bound); the forward's whole row of 65536: RMSNorm −5 to
# −12 % if the column tiles wait on too few bytes in flight (32768's whole row runs at 99 %), ±3 % if
# the re-read from L2 is what they wait on (the same 16.5 MB of rows in flight either way).
# Outcome: (fill in after the run)
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?checks, grid or sweep} in
checks)
  san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 "$san" --tool memcheck --target-processes all \
      python3 tools/sanitize_sweep.py --kind bwd --split only --only splitpfc128 > "$L/memcheck_c128.log" 2>&1
  echo "memcheck c128 (exit $?): $(grep -c ': ok (' "$L/memcheck_c128.log") runs ok," \
       "$(grep -c FAIL "$L/memcheck_c128.log") failed, $(grep -c '^========= [A-Z][a-z]' "$L/memcheck_c128.log") reports;" \
       "$(grep 'ERROR SUMMARY' "$L/memcheck_c128.log" | sort | uniq -c | tr '\n' ' ')"
  checked_tests 400 tests/test_properties.py tests/test_split_rows.py tests/test_reliability.py \
      -k "gpu_heuristic_config or test_split_rows or bitwise or nonfinite or eps_zero" ;;
grid)
  side_by_side 480; tail -5 "$OUT/bench.log" ;;
sweep)
  for fam in fused_add rms layer_norm; do
    tune_sweep bwd $fam bf16 4096x16384,8192x16384 60 2x2048:4:split:pf:p2 1x4096:4:split:pf:p2
  done
  tune_sweep bwd fused_add bf16 1024x262144 60 1x2048:4:split:pf:p4:r128 1x4096:8:split:pf:p2:r128
  # the fp32 parts on 16 warps an SM: 1 × 2048 reloading, capped at 128 registers, four an SM (ptxas,
  # sm_90: RMSNorm 0 B spilled, the fused add 20, LayerNorm 56) against the heuristic's three / two
  for fam in fused_add rms layer_norm; do
    tune_sweep bwd $fam fp32 4096x16384,4096x65536 60 1x2048:4:split:pf:reload:p4:r128
  done
  # LayerNorm's bf16 split at 131072 gained nothing from design change 18 (66 % of copy): 1 × 2048
  # parts on 4 warps, three an SM (ptxas, sm_90: 168 registers, 0 B spilled; 64 parts a row at
  # 131072), and 1 × 4096 on 4 warps two an SM (255 + 64 B), against 2 × 2048 on 4 (255, 0 B)
  tune_sweep bwd layer_norm bf16 4096x65536,2048x131072 60 1x2048:4:split:pf:p3 1x4096:4:split:pf:p2
  # the forward's bf16 rows of 65536 as one whole row on 32 warps re-read for y (one program an SM,
  # 128 KB of loads in flight against the column tiles' 32 KB a tile; ptxas, sm_90: RMSNorm 57
  # registers, 0 B spilled; LayerNorm 64 + 180 B) against the column tiles (RMSNorm 308 µs = 83 %) and
  # LayerNorm's three-read tiles (351 = 73 %); forced on the interpreter: the heuristic's bits
  tune_sweep fwd rms bf16 4096x65536,2048x65536 60 1x65536:32:reload 1x65536:32:reload:r64
  tune_sweep fwd layer_norm bf16 4096x65536 60 1x65536:32:reload ;;
esac
pack_logs
