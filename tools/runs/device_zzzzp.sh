#!/usr/bin/env bash
# Device run ZZZZP (session 22, nvidia-h200; carry [".whl"]): `bash tools/runs/device_zzzzp.sh verify` (~8 min)
# — design changes 25 (LayerNorm's forward split: config/forward.py _FWD_SPLIT_LAYER_NORM) and 26 (the
# forward's lanes: kernels/forward.py _lanes) as landed, against the tree before them
# (docs/experiments/forward-ln-split-lanes.patch reversed):
#  - A/B, 2 rounds, tools/tune.py's heuristic time in each build: LayerNorm bf16 2048×131072 /
#    1024×262144 and fp32 4096×65536 (the split); bf16 x with a 4-byte y (RMSNorm, LayerNorm), the fused
#    add's fp32 residual (the lanes); same-dtype controls (RMSNorm 4096×65536, LayerNorm 4096×65536).
#    Prediction (runs ZZZZN / ZZZZO's sweeps and A/Bs): LayerNorm 2048×131072 −8 to −10 %, 1024×262144
#    −14 to −16 %, fp32 −15 to −17 %; the mixed dtypes as run ZZZZO's A/B; controls ±1 %.
#  - Sweeps not yet measured: LayerNorm fp32 2048×131072 (1 × 4096 parts on 4 warps capped, against the
#    staged tiles), LayerNorm bf16 x with a 4-byte y at 131072 / 262144 (1 × 4096 parts on 4 warps, 16 KB
#    of y, capped).
#  - check-mode GPU forward tests (every forward heuristic configuration, each y) and memcheck of
#    LayerNorm's split forward at its narrowest widths.
# Outcome: A/B (2 rounds, µs, before → landed): LayerNorm bf16 2048×131072 385.0 → 349.4 (−9.3 %),
#   1024×262144 406.1 → 338.3 (−16.7 %), fp32 4096×65536 764.7 → 632.4 (−17.3 %), bf16 4096×65536
#   (control) 352.8 → 353.6; LayerNorm → fp32 y 4096×16384 110.8 → 99.5, 2048×131072 646.7 → 549.1;
#   RMSNorm → fp32 y 2048×131072 488.4 → 450.8; the fused add's fp32 residual 4096×65536 1064.0 → 970.7;
#   RMSNorm bf16 4096×65536 (control) 257.4 → 257.1. As predicted. Sweeps: LayerNorm fp32 2048×131072
#   1 × 4096 on 4 capped **606.2** against the staged 785.9 (on 8: 703.2); bf16 x with a 4-byte y,
#   2048×131072: 1 × 8192 on 4 capped **461.8**, 1 × 4096 494.5, staged 551.0; 1024×262144: **445.2**,
#   592.7, 562.3 → both added to _FWD_SPLIT_LAYER_NORM (run ZZZZQ checks the heuristic). Check-mode
#   forward tests 86 passed, 0 failed (34/34 forward configurations); memcheck of LayerNorm's split
#   forward at its narrowest widths 5 runs, 0 errors.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?verify} in
verify)
  B=/tmp/ab/base
  mkdir -p $B && cp -r normkit tools tests pyproject.toml $B/ && (cd $B && patch -R -p1 -s < "$OLDPWD/docs/experiments/forward-ln-split-lanes.patch") \
      || echo "base: reverse patch failed"
  for round in 1 2; do
    for dir in $B "$PWD"; do
      fwd_heuristic_in "$dir" --family layer_norm --dtype bf16 --shapes 2048x131072,1024x262144,4096x65536 --config 1x16384:32:col
      fwd_heuristic_in "$dir" --family layer_norm --dtype fp32 --shapes 4096x65536 --config 1x16384:32:col
      fwd_heuristic_in "$dir" --family layer_norm --dtype bf16 --out-dtype fp32 --shapes 4096x16384,2048x131072 --config 1x16384:32:col
      fwd_heuristic_in "$dir" --family rms --dtype bf16 --out-dtype fp32 --shapes 2048x131072 --config 1x16384:32:col
      fwd_heuristic_in "$dir" --family fused_add --dtype bf16 --residual-dtype fp32 --shapes 4096x65536 --config 1x16384:32:col
      fwd_heuristic_in "$dir" --family rms --dtype bf16 --shapes 4096x65536 --config 1x16384:32:col  # control
    done
  done | tee "$L/ab.log"
  { tune_sweep fwd layer_norm fp32 2048x131072 50 1x4096:4:split:p4:r128 1x4096:8:split:p4
    TUNE_ARGS="--out-dtype fp32" tune_sweep fwd layer_norm bf16 2048x131072,1024x262144 60 1x4096:4:split:p4:r128 \
        1x8192:4:split:p4:r128; } | tee "$L/sweep.log"
  checked_tests 200 tests/test_properties.py tests/test_split_rows.py -k "(gpu_heuristic_config and fwd) or for_each_y"
  san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 "$san" --tool memcheck --target-processes all python3 \
      tools/sanitize_sweep.py --kind fwd --split only --widths lo --families layer_norm > "$L/memcheck_fwd.log" 2>&1
  echo "memcheck fwd split lo layer_norm (exit $?): $(grep -c ': ok (' "$L/memcheck_fwd.log") runs ok," \
       "$(grep -c FAIL "$L/memcheck_fwd.log") failed; $(grep 'ERROR SUMMARY' "$L/memcheck_fwd.log" | sort | uniq -c | tr '\n' ' ')" ;;
esac
pack_logs
