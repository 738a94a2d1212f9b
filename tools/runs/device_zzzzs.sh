#!/usr/bin/env bash
# Device run ZZZZS (prepared in session 22 for the next session, nvidia-h200; carry [".whl"]), two calls:
#  - `bash tools/runs/device_zzzzs.sh grid` (~8 min): every family side by side on the build with design
#    changes 24-27 (the grid of run ZZZZM predates them) → BENCHMARKS "Current numbers"
#    (`python tools/bench_tables.py bench.json`). Prediction: LayerNorm forward 2048×131072 ≈ 343 µs
#    (73-74 %), fp32 4096×65536 ≈ 631 (81 %); RMSNorm backward 4096×16384 ≈ 117 (82 %); the fused add's
#    4096×16384 backward ≈ 160; everything else within run-to-run spread (±1-3 %) of run ZZZZM.
#  - `bash tools/runs/device_zzzzs.sh lnsweep` (~4 min, tools/tune.py --kind fwd --config, µs, the heuristic
#    first): LayerNorm's split parts where not measured — fp32 1024×262144 (staged 801 µs = 64 % in run
#    ZZZZQ; 64 parts of 1 × 4096 fit 132 SMs), fp32 x with a bf16 y at 65536 / 131072, the fused
#    LayerNorm (tools/tune.py --residual, new in session 22) at 65536 / 131072 in the fused add's 8 KB
#    parts on 8 warps and LayerNorm's 16 KB on 4 capped, against its staged tiles; then Nsight
#    Compute on the capped LayerNorm parts at bf16 2048×131072 (what still keeps them at 73 % where
#    RMSNorm's reach 85 %).
#    Count: fp32 262144 in 1 × 4096 parts: 64 parts a row, 132 × 4 / 64 = 8 rows in flight, 8 MB — the
#    L2 regime.
#    Prediction: fp32 262144 −15 to −25 % (as fp32 131072: 785.9 → 606.2); fp32 x / bf16 y −10 to −20 %;
#    the fused LayerNorm ±10 % (a part reads x and the residual: twice the bytes in flight, as the fused
#    add's 16 KB parts lost to its 8 KB ones).
#  - `bash tools/runs/device_zzzzs.sh rc` (~2 min): design change 27's other half — the recomputing backward
#    (tools/tune.py --kind bwd --recompute, new) before it (docs/experiments/split-part-columns.patch
#    reversed) and with it, 2 rounds: LayerNorm bf16 4096×16384 / 2048×131072, fp32 4096×65536. Count:
#    the 2 × 2048 parts 20 → 17 bar.sync, 91 → 79 shfl.sync. Prediction: −0 to −3 % (the parts are close
#    to issue-bound: ~1000 instructions a thread a row block, 3 of 20 barriers gone).
# Outcome (session 23): `grid` (copy 4263 GB/s, docs/bench_h200_run_zzzzs.json → "Current numbers"):
#   RMSNorm bf16 4096×16384 backward 115 µs (82 %), LayerNorm forward bf16 2048×131072 339 (74 %), fp32
#   4096×65536 631 (80 %), the fused add 4096×16384 backward 161 — as predicted; the rest within ±2.5 %
#   of run ZZZZM. `lnsweep`: fp32 1024×262144 648.8 split against 799.8 staged (−19 %, predicted −15 to
#   −25), fp32 x / bf16 y 504.1 / 512.3 against 610.4 / 633.4 (−17 to −19 %, predicted −10 to −20), the
#   fused LayerNorm in the fused add's 8 KB parts 687.9 / 696.1 against 759.2 / 803.4 (−9 / −13 %;
#   16 KB parts capped 742.7 / 728.9) → design change 28. Nsight Compute: LayerNorm's capped parts
#   342.0 µs, DRAM 65 %, 7.1 cycles an issue, occupancy 23.7 %; RMSNorm's 293.7, 76 %, 9.0, 23.8 %.
#   `rc`: the recomputing backward −3 to −5 % with design change 27 (predicted −0 to −3).
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?grid, lnsweep or rc} in
rc)
  B=/tmp/ab/base
  mkdir -p $B && cp -r normkit tools tests pyproject.toml $B/ \
      && (cd $B && patch -R -p1 -s < "$OLDPWD/docs/experiments/split-part-columns.patch") || echo "base: reverse patch failed"
  for round in 1 2; do
    for dir in $B "$PWD"; do
      for dtype_shapes in "bf16 4096x16384,2048x131072" "fp32 4096x65536"; do
        set -- $dtype_shapes
        (cd "$dir" && PYTHONPATH=/tmp/site:$dir timeout 60 python3 tools/tune.py --kind bwd --recompute --family layer_norm \
            --dtype $1 --shapes $2 --each --config 2x2048:4:split:pf:p2 2>&1 | grep -E "heuristic|Error" \
            | sed -E "s|^|$(basename "$dir") |; s/ best .*//")
      done
    done
  done | tee "$L/rc.log" ;;
grid)
  side_by_side 480; tail -5 "$OUT/bench.log" ;;
lnsweep)
  { tune_sweep fwd layer_norm fp32 1024x262144 60 1x4096:4:split:p4:r128 1x4096:8:split:p4
    TUNE_ARGS="--out-dtype bf16" tune_sweep fwd layer_norm fp32 4096x65536,2048x131072 60 1x4096:4:split:p4:r128
    TUNE_ARGS="--residual" tune_sweep fwd layer_norm bf16 4096x65536,2048x131072 60 1x4096:8:split:p4 \
        1x8192:4:split:p4:r128; } \
    | tee "$L/lnsweep.log"
  ncu_stalls fwd ln_split_capped_131072 --family layer_norm --shape 2048x131072
  ncu_stalls fwd rms_split_131072 --family rms --shape 2048x131072 ;;
esac
pack_logs
