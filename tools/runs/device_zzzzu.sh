#!/usr/bin/env bash
# Device run ZZZZU (session 23, nvidia-h200; carry [".whl"]): `bash tools/runs/device_zzzzu.sh go` (~6 min) —
# design change 28 (config/forward.py: LayerNorm's split forward for fp32 x with either y at 65536-262144,
# the fused LayerNorm's rows wider than 32768 in the fused add's 8 KB parts; runs ZZZZS-ZZZZT's sweeps):
#  - verify: the new heuristic against the staged column tiles it replaced, in one process (tools/tune.py
#    --config col:s3). Prediction: the sweeps' times (−9 to −19 %).
#  - checks: check-mode GPU tests of the split rows (the fused LayerNorm's split parts, LayerNorm's
#    heuristic for each x / y / residual dtype: new tests) and of every forward heuristic configuration;
#    memcheck of LayerNorm's split forward at its narrowest widths.
#  - sweep: LayerNorm forward bf16 8192×32768 / 4096×16384 (run ZZZZT's first line failed: "two" needs
#    ":col"), bf16 x / fp32 y at 4096×65536 (the three-read tiles now).
#    Prediction: ±5 % at 32768 (the centred tiles read x three times but from L2); −10 % for the
#    mixed y at 65536 (as at 131072: 551.0 → 461.8).
# Outcome: verify — the heuristic now times as the sweeps (fp32 262144 646.2 against 799.1, fp32 x /
#   bf16 y 501.7 / 527.2 against 609.9 / 632.8, the fused LayerNorm 680.8 / 688.8 / 717.1 against
#   760.4 / 808.2 / 842.3, fp32 1281.6 against 1539.4, fp32 residual 968.8 against 1174.5). Checks: 150
#   passed, 0 failed, 34/34 forward configurations; memcheck 10 runs, 0 errors. Sweep: bf16 32768 /
#   16384 keep the three-read tiles / the whole row (318.8 / 72.0; split 356.5-459.9 / 89.4-119.5),
#   as predicted; bf16 x / fp32 y at 65536 446.9 in 1 × 8192 parts against 476.2 (−6 %) → added.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?go} in
go)
  { tune_sweep fwd layer_norm fp32 1024x262144 40 1x4096:16:col:s3
    TUNE_ARGS="--out-dtype bf16" tune_sweep fwd layer_norm fp32 4096x65536,2048x131072 60 1x4096:16:col:s3
    TUNE_ARGS="--residual" tune_sweep fwd layer_norm bf16 4096x65536,2048x131072,1024x262144 80 1x8192:16:col:s3
    TUNE_ARGS="--residual" tune_sweep fwd layer_norm fp32 4096x65536 40 1x4096:16:col:s3
    TUNE_ARGS="--residual --residual-dtype fp32" tune_sweep fwd layer_norm bf16 4096x65536 40 1x8192:16:col:s3
  } | tee "$L/verify.log"
  checked_tests 240 tests/test_properties.py tests/test_split_rows.py -k "(gpu_heuristic_config and fwd) or for_each_y or split_forward"
  san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 "$san" --tool memcheck --target-processes all python3 \
      tools/sanitize_sweep.py --kind fwd --split only --widths lo --families layer_norm,fused_add > "$L/memcheck_fwd.log" 2>&1
  echo "memcheck fwd split lo (exit $?): $(grep -c ': ok (' "$L/memcheck_fwd.log") runs ok," \
       "$(grep -c FAIL "$L/memcheck_fwd.log") failed; $(grep 'ERROR SUMMARY' "$L/memcheck_fwd.log" | sort | uniq -c | tr '\n' ' ')"
  { tune_sweep fwd layer_norm bf16 8192x32768,4096x16384 90 1x8192:4:split:p4:r128 1x4096:4:split:p4:r128 \
        1x4096:8:split:p4 1x16384:32:col:two:r32
    TUNE_ARGS="--out-dtype fp32" tune_sweep fwd layer_norm bf16 4096x65536 40 1x8192:4:split:p4:r128 \
        1x4096:4:split:p4:r128; } | tee "$L/sweep.log" ;;
esac
pack_logs
