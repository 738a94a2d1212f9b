#!/usr/bin/env bash
# Device run ZZH (session 12, nvidia-h200-x2, ~2 device minutes): memcheck over this session's new
# staged short-row backward tiles (rows of 128 on GPU 0, 256 on GPU 1; RMSNorm, LayerNorm, the fused
# add; every width the tile serves), which run ZZF's racecheck covered but no memcheck had.
# Prediction: 0 errors (the staged loop reads the same masked addresses as the plain one).
# Outcome: rows of 128 — 36 runs (6 problems × 3 families), 0 failures, ERROR SUMMARY 0 errors;
# rows of 256 — 36 runs, 0 failures, 0 errors.
source tools/device_env.sh
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
memcheck_only() {  # GPU ONLY
  CUDA_VISIBLE_DEVICES=$1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout 100 "$SAN" --tool memcheck --target-processes all \
    python3 tools/sanitize_sweep.py --kind bwd --families rms,layer_norm,fused_add --split exclude --widths all \
    --only $2 > $L/memcheck_$2.log 2>&1
  echo "memcheck $2 (exit $?): $(grep -c ': ok (' $L/memcheck_$2.log) runs ok, $(grep -c FAIL $L/memcheck_$2.log) failed"
  grep -E "ERROR SUMMARY|sanitize_sweep:" $L/memcheck_$2.log | sort | uniq -c
}
memcheck_only 0 n128ones3 &
memcheck_only 1 n256ones3 &
wait
pack_logs
