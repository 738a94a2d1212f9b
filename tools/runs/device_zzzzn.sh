#!/usr/bin/env bash
# Device run ZZZZN (prepared in session 21 for the next session, nvidia-h200; carry [".whl"]), four calls:
#  - `bash tools/runs/device_zzzzn.sh checks` (~8 min): what run ZZZZM's `bwd16` left before its limits —
#    check-mode GPU tests of every backward heuristic configuration (18 of 41 ran; the rest did not
#    change in session 21) and memcheck of the backward's split parts at their narrowest widths.
#  - `bash tools/runs/device_zzzzn.sh sweep` (~3 min, tools/tune.py --kind fwd --config, logs teed):
#    design change 22's 16 KB parts on 4 warps four an SM, tried where they were not —
#    * the fused add's forward past 32768 (83-86 % of copy on 1 × 4096 parts on 8 warps, 8 KB of x
#      and 8 KB of residual a part): 1 × 8192 on 4 (16 KB + 16 KB), 1 × 4096 on 4, four an SM;
#      its fp32 rows of 65536 (85 %): 1 × 4096 on 8 four an SM against 1 × 2048;
#    * LayerNorm's forward at 131072 / 262144 (66 / 63 %; its split on 8 warps three an SM lost:
#      532.1 / 419.3 against 384.0 / 402.6 in run ZZZZL): 1 × 8192 on 4 four an SM, 1 × 4096 on 4.
#  - `bash tools/runs/device_zzzzn.sh ncu` (~4 min): why LayerNorm's split forward loses where RMSNorm's
#    wins — Nsight Compute (device_env.sh's ncu_stalls: time, DRAM bytes, occupancy, stall reasons) on
#    RMSNorm's split parts, LayerNorm's (8 warps three an SM; 4 warps) and LayerNorm's staged column
#    tiles at bf16 2048×131072.
#  - `bash tools/runs/device_zzzzn.sh ymix` (~7 min): A/B main → docs/experiments/forward-lanes-widest.patch
#    (the forward's column index provably contiguous only in runs of one 16-byte vector of the widest
#    row element — x, y, residual, residual_out — where their widths differ), 2 rounds, tools/tune.py's
#    heuristic time in each build, bf16 x with a 4-byte y (out_dtype fp32), fp32 x with a bf16 y, the
#    fused add with an fp32 residual (tools/tune.py --residual-dtype, new in session 21).
#    Count (ptxas, sm_90, `tools/ptx_stats.py --kind fwd --out-dtype fp32`): with a 4-byte y from a
#    2-byte x every forward tile converts y's layout through shared memory before the store (x loads 8
#    a thread, y stores 4): RMSNorm's whole row of 16384 16 KB and 10 bar.sync against 2, its split
#    parts 4 KB and 11 against 3, LayerNorm's staged tiles at 131072 53 registers against 40; the
#    patch: 2-5 bar.sync, ≤ 128 B shared, LayerNorm 48 registers — x then loads 8 bytes a thread, not
#    16. A residual kept in fp32 beside bf16 x and y (`--residual-dtype fp32`) converts too: the fused
#    add's whole rows of 4096-16384 16 KB and 4-10 bar.sync, its split parts 8 KB and 7; the patch 2-3
#    bar.sync, ≤ 64 B shared (16384: 83 registers against 80). Same-dtype launches: PTX identical to main's for all 54 heuristic forward configurations
#    (rms / fused add / LayerNorm × bf16 / fp32 × 1024 … 262144; debug labels aside), so only mixed
#    dtypes can move.
#    Prediction: −3 to −10 % on the 4-byte-y forwards (fewer barriers and shared-memory round trips a
#    tile; the 8-byte loads still coalesce a warp into 256 B), ±1 % on the same-dtype control.
# Count: a 16 KB part on 4 warps holds 32 values a thread of each row it reads; four an SM = 16 warps,
#   132 × 4 × 2 blocks × 32 KB (the fused add: x and residual) = 34 MB in flight — past L2's ~17 MB
#   regime (run ZZZZJ `l2`), so the fused add may gain less than RMSNorm did. ptxas, sm_90, bf16, N =
#   131072 (`tools/ptx_stats.py --kind fwd --tile 1x8192w4S`): RMSNorm 1 × 8192 on 4 warps 105
#   registers, 3 bar.sync (4 an SM fit); the fused add 128 (4 fit), 1 × 4096 on 4 72 + 4 B spilled;
#   LayerNorm 135 registers (only 3 an SM fit: the launcher fits the grid to what is resident), 1 ×
#   4096 on 4 80 (6 fit), 1 × 8192 on 8 80 — and 9 bar.sync / 36-39 shfl.sync a part against
#   RMSNorm's 3 / 16-17 (stats.publish_row_sums: LayerNorm's part reduces its local mean, then M2
#   around it — dependent block reductions — where RMSNorm's reduces Σh² once).
# Prediction: ncu — LayerNorm's parts stall on barriers (9 bar.sync a part against RMSNorm's 3) at
#   equal DRAM bytes (~1.0× the minimum both); checks 0 failed / 0 errors; the fused add ±3 % (the bytes in flight above); LayerNorm's
#   16 KB parts −0 to −10 % against its 8-warp split, still ≥ its staged tiles (its loss is not the
#   part size alone: unexplained, see BENCHMARKS "Session 21's standing").
# Outcome (session 22): `checks` — check-mode tests 80 passed, 0 failed, 41/41 backward configurations
#   (80 launches); memcheck of the backward's split parts at their narrowest widths 40 runs, 0 errors.
#   `sweep` (µs; the heuristic first): the fused add 4096×65536 594.0 (1 × 4096 on 8) against 719.7 (1 ×
#   8192 on 4), 604.2 (1 × 4096 on 4); 2048×131072 601.8 against 705.2 / 613.9 — kept; fp32 4096×65536
#   1161.8 (1 × 2048) against 1270.8 (1 × 4096) — kept. LayerNorm 2048×131072: staged 382.8, 1 × 8192 on
#   4 411.5, 1 × 4096 on 4 426.8, on 8 three an SM 533.1; 1024×262144: staged 401.4, **1 × 8192 on 4
#   338.9**, 508.9, 401.5 — the prediction (−0 to −10 % against the 8-warp split) held at 262144, the
#   staged tiles lost there. `ncu` (2048×131072): RMSNorm's split 295 µs, DRAM read 558 MB, 75 %
#   throughput, 24 % achieved occupancy; LayerNorm's split on 8 warps 524 µs, 541 MB, 42 %, 23 %; on 4
#   warps 407 µs, 542 MB, 54 %, **17.7 %** (135 registers: three an SM), long scoreboard 2.6 of 6.0 cycles
#   an issue, barrier 0.42; the staged tiles 376 µs, **1.01 GB read** (2.0× the minimum), 84 %, 69 %
#   occupancy. The prediction (barrier-bound at equal bytes) wrong: equal bytes, but latency-bound at
#   three an SM, barriers 0.4-0.8 → the 128-register cap (run ZZZZO). `ymix` (2 rounds, µs, main → the
#   patch): RMSNorm bf16 → fp32 y 4096×16384 100.8 → 101.1, 8192×32768 474.8 → 462.7, 4096×65536 475.4 →
#   467.0, 2048×131072 488.8 → 451.8; the fused add → fp32 y 4096×16384 163.8 → 163.5, 4096×65536 764.0 →
#   730.8; LayerNorm → fp32 y 4096×16384 111.3 → 99.1, 2048×131072 649.5 → 549.5; the fused add fp32 x →
#   bf16 y 232.3 → 228.1; an fp32 residual beside bf16 x, y: 16384×4096 194.3 → 192.5, **4096×16384 199.5
#   → 216.3 (+8 %)**, 4096×65536 1071.8 → 978.9; the control ±0.4. Prediction −3 to −10 %: −2 to −15 %
#   on 10 of 12, +8 % on the fp32 residual's whole row → forward-lanes-xy.patch (run ZZZZO).
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?checks, sweep, ncu or ymix} in
ymix)
  N=/tmp/ab/new
  patched_copy $N docs/experiments/forward-lanes-widest.patch
  for round in 1 2; do
    for dir in "$PWD" "$N"; do
      [ $round = 1 ] && (cd "$dir" && PYTHONPATH=/tmp/site:$dir python3 -c "import normkit; print('imports', normkit.__file__)")
      fwd_heuristic_in "$dir" --family rms --dtype bf16 --out-dtype fp32 --shapes 4096x16384,8192x32768,4096x65536,2048x131072 \
          --config 1x16384:32:col
      fwd_heuristic_in "$dir" --family fused_add --dtype bf16 --out-dtype fp32 --shapes 4096x16384,4096x65536 --config 1x16384:32:col
      fwd_heuristic_in "$dir" --family layer_norm --dtype bf16 --out-dtype fp32 --shapes 4096x16384,2048x131072 --config 1x16384:32:col
      fwd_heuristic_in "$dir" --family fused_add --dtype fp32 --out-dtype bf16 --shapes 4096x16384 --config 1x16384:32:col
      # a residual kept in fp32 beside bf16 x and y (prenorm training's residual_in_fp32)
      fwd_heuristic_in "$dir" --family fused_add --dtype bf16 --residual-dtype fp32 --shapes 16384x4096 --config 1x4096:16:reload
      fwd_heuristic_in "$dir" --family fused_add --dtype bf16 --residual-dtype fp32 --shapes 4096x16384,4096x65536 \
          --config 1x16384:32:col
      fwd_heuristic_in "$dir" --family rms --dtype bf16 --shapes 4096x65536 --config 1x16384:32:col  # same dtype: control
    done
  done | tee "$L/ymix.log" ;;
ncu)
  ncu_stalls fwd rms_split_131072 --family rms --shape 2048x131072
  ncu_stalls fwd ln_split8_131072 --family layer_norm --shape 2048x131072 --config 1x8192:8:split:p3
  ncu_stalls fwd ln_split4_131072 --family layer_norm --shape 2048x131072 --config 1x8192:4:split:p4
  ncu_stalls fwd ln_staged_131072 --family layer_norm --shape 2048x131072 ;;
checks)
  checked_tests 330 tests/test_properties.py -k "gpu_heuristic_config and bwd"
  san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 150 "$san" --tool memcheck --target-processes all python3 \
      tools/sanitize_sweep.py --kind bwd --split only --widths lo --families rms,fused_add > "$L/memcheck_bwd.log" 2>&1
  echo "memcheck bwd split lo (exit $?): $(grep -c ': ok (' "$L/memcheck_bwd.log") runs ok," \
       "$(grep -c FAIL "$L/memcheck_bwd.log") failed; $(grep 'ERROR SUMMARY' "$L/memcheck_bwd.log" | sort | uniq -c | tr '\n' ' ')" ;;
sweep)
  { tune_sweep fwd fused_add bf16 4096x65536,2048x131072 60 1x8192:4:split:p4 1x4096:4:split:p4 1x4096:8:split:p4
    tune_sweep fwd fused_add fp32 4096x65536 40 1x4096:8:split:p4 1x2048:8:split:p4
    tune_sweep fwd layer_norm bf16 2048x131072,1024x262144 60 1x8192:4:split:p4 1x4096:4:split:p4 \
        1x8192:8:split:p3; } | tee "$L/sweep.log" ;;
esac
pack_logs
