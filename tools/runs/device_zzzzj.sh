#!/usr/bin/env bash
# Device run ZZZZJ (prepared in session 19 for the next session, nvidia-h200; carry [".whl"]), five
# calls on one GPU:
#  - `bash tools/runs/device_zzzzj.sh checks` (~9 min): design change 19's open checks — compute-sanitizer
#    memcheck of the capped split backward parts (`--only splitpfc128`: the two new 16-warps-an-SM parts
#    and LayerNorm's rows of 32768), then the check-mode GPU tests ZZZZC ran for design change 18
#    (every heuristic configuration forced against float64, test_split_rows, bitwise, non-finite,
#    eps = 0) on main as it is.
#  - `bash tools/runs/device_zzzzj.sh grid` (~5 min): the side-by-side grid with design changes 18 + 19
#    (→ docs/bench_h200_run_zzzzj.json, `python tools/bench_tables.py docs/bench_h200_run_zzzzj.json
#    --write`, then the prose of "Current numbers", the targets paragraphs, README's brief).
#  - `bash tools/runs/device_zzzzj.sh sweep` (~3-4 min): tools/runs/device_zzzzb.sh's 16384-wide sweep (1 × 4096 on
#    4 warps against the heuristic's 2 × 2048, and the 16-warps-an-SM parts of design change 19 / LayerNorm's
#    rows of 32768, every family, 4096×16384 / 8192×16384: 76 / 77 / 70 % of copy) and the fused
#    add's rows of 262144 on 16 warps an SM (not measured in session 19); the fp32 parts on 16 warps an SM
#    (the fused add's fp32 4096×16384 is the one shape where a peer leads: Liger 283 µs against 285).
#  - `bash tools/runs/device_zzzzj.sh l2` (~3 min): Nsight Compute on the forward's wide rows — DRAM bytes
#    read against the minimum (M·N·2) and the L2 hit rate, heuristic tiles against tiles one an SM.
#  - `bash tools/runs/device_zzzzj.sh snake` (~5 min): A/B main → docs/experiments/forward-column-snake.patch
#    (the column tiles' passes alternate direction), 2 rounds, RMSNorm / LayerNorm forward at the wide
#    rows, controls 8192×32768 (whole rows / centred tiles) and fp32 4096×65536.
# Prediction: checks 0 errors / 0 failed; grid: RMSNorm bf16 4096×65536 / 2048×131072 430-440 µs
# (run ZZZZH's A/B), the fused add 600-615; the rest within ±2 % of run ZZZZD; sweep: 1 × 4096 ±2 %
# at 16384 (the fused add's 3 % of design change 17 came back with design change 18: 164 µs); fp32
# on 16 warps −2 to −5 % for RMSNorm (no spill), ±3 % for the fused add / LayerNorm (spills);
# LayerNorm's 1 × 2048 three an SM ±5 % (more warps, but twice the parts a row to poll and one row a
# block: LayerNorm's parts are near issue-bound); the forward's whole row of 65536: RMSNorm −5 to
# −12 % if the column tiles wait on too few bytes in flight (32768's whole row runs at 99 %), ±3 % if
# the re-read from L2 is what they wait on; l2: RMSNorm 2048×131072's heuristic tiles read ≥ 1.3× the
# minimum from DRAM (the re-read missing L2 with 66 MB of rows in flight), 4096×65536 1.0-1.2×,
# 8192×32768 1.0×; the tiles one an SM ~1.0× (LayerNorm 131072: ≥ 1.5× → ~1.0×); snake: −5 to −15 %
# at 131072 / 262144 if l2 finds the misses, ±1 % at 65536 and on the controls.
# Outcome (session 20; `checks`, `l2`, `snake` ran — `sweep` and `grid` did not: the grid ran as
# ZZZZK's, the backward half of the sweep waits): checks — memcheck 36 runs ok, 0 errors; tests 273
# passed, 1 skipped, 0 failed (fwd 32/32, bwd 41/41 configurations). l2 (DRAM read, µs): RMSNorm
# 2048×131072 949 MB (1.77×) 369, 1 × 32768 col 945 MB 363; 4096×65536 657 MB (1.22×) 303, whole row
# re-read 538 MB (1.00×) 256; 8192×32768 537 MB 255; LayerNorm 2048×131072 1.08 GB (2.0×) 391, 1 ×
# 32768 col 897 MB 389 — right at 131072 / 65536, wrong for the 1 × 32768 tiles one an SM (still
# 1.76×). snake (fwd µs, base → patch): RMSNorm 4096×65536 308 → 293, 2048×131072 374 → 339,
# 1024×262144 397 → 374; LayerNorm 2048×131072 397 → 386, 1024×262144 −3, fp32 4096×65536 781 → 761;
# LayerNorm 8192×32768 317 → 363 (+15 %), 4096×65536 353 → 361; backwards ±1 %. Landed (reworked) as
# design change 20 (BENCHMARKS "Session 20").
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?checks, grid, sweep, bsweep, l2 or snake} in
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
sweep|bsweep)  # bsweep: the backward half only (left for session 21 by session 20: tools/runs/device_zzzzl.sh)
  for fam in fused_add rms layer_norm; do
    tune_sweep bwd $fam bf16 4096x16384,8192x16384 60 2x2048:4:split:pf:p2 1x4096:4:split:pf:p2 \
        1x2048:4:split:pf:p4:r128 2x2048:8:split:pf:p2:r128
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
  [ "$1" = bsweep ] && { pack_logs; exit; }
  # the forward's bf16 rows of 65536 as one whole row on 32 warps re-read for y (one program an SM,
  # 128 KB of loads in flight against the column tiles' 32 KB a tile; ptxas, sm_90: RMSNorm 57
  # registers, 0 B spilled; LayerNorm 64 + 180 B) against the column tiles (RMSNorm 308 µs = 83 %) and
  # LayerNorm's three-read tiles (351 = 73 %); forced on the interpreter: the heuristic's bits; and
  # 1 × 32768 column tiles (one an SM: half the rows in flight of the 1 × 16384 tiles, see `l2`)
  tune_sweep fwd rms bf16 4096x65536,2048x65536 60 1x65536:32:reload 1x65536:32:reload:r64 1x32768:32:col
  # (ptxas, sm_90, one an SM: RMSNorm 1 × 65536 column tiles 64 registers, 0 B; LayerNorm's three-read
  # 1 × 32768 tiles 54, 0 B — its 1 × 16384 ones capped at 32 run two an SM: 33 / 66 MB in flight)
  tune_sweep fwd rms bf16 2048x131072,1024x262144 60 1x32768:32:col 1x65536:32:col
  tune_sweep fwd layer_norm bf16 4096x65536 60 1x65536:32:reload 1x32768:32:col 1x32768:32:col:two
  tune_sweep fwd layer_norm bf16 2048x131072 60 1x32768:32:col 1x16384:32:col 1x32768:32:col:two ;;
l2)
  # Is the forward's re-read of a wide row served by L2? The non-split forward's grid is a program a row
  # block, as many resident as fit (ptxas, sm_90): RMSNorm's 1 × 16384 column tiles 32 registers → two an
  # SM = 264 rows in flight = 33 MB at 65536, 66 MB at 131072 (L2: 50 MB); LayerNorm's staged 1 × 8192
  # tiles at 131072 three an SM = 99 MB. Candidates one an SM: 1 × 32768 column tiles (RMSNorm 46
  # registers, LayerNorm 54), the whole row of 65536 re-read for y (RMSNorm 57).
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active
  l2() {  # name, launch_tile arguments...
    local name=$1; shift
    timeout 90 "$NCU" --clock-control none --metrics $metrics --kernel-name norm_fwd_kernel --launch-skip 2 \
        --launch-count 1 python3 tools/launch_tile.py --kind fwd --launches 3 "$@" > "$L/l2_$name.log" 2>&1
    echo "== $name rc=$? $(grep -h 'launch_tile:' "$L/l2_$name.log" | sed 's/.*launches, //')"
    grep -E "gpu__time|dram__bytes|lts__t_sector_hit|warps_active" "$L/l2_$name.log" | awk '{print "   ", $1, $(NF-1), $NF}'
  }
  l2 rms_131072 --family rms --shape 2048x131072
  l2 rms_131072_32768col --family rms --shape 2048x131072 --config 1x32768:32:col
  l2 rms_65536 --family rms --shape 4096x65536
  l2 rms_65536_whole --family rms --shape 4096x65536 --config 1x65536:32:reload
  l2 rms_32768 --family rms --shape 8192x32768
  l2 ln_131072 --family layer_norm --shape 2048x131072
  l2 ln_131072_32768col --family layer_norm --shape 2048x131072 --config 1x32768:32:col ;;
snake)
  # docs/experiments/forward-column-snake.patch: each pass over the column tiles the other way round
  P=/tmp/ab/snake
  patched_copy $P docs/experiments/forward-column-snake.patch
  ( export L=$L/ab; mkdir -p "$L"
    ab_summarised 2 "$PWD" "$P" "_r|rms,layer_norm|bf16|4096x65536,2048x131072,1024x262144" \
        "_c|rms,layer_norm|bf16|8192x32768" "_f|rms,layer_norm|fp32|4096x65536" ) ;;
esac
pack_logs
