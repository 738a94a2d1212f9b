#!/usr/bin/env bash
# Device run ZZZZE (session 19, nvidia-h200, ~6 min; carry [".whl"]): compute-sanitizer memcheck of
# the unmasked dweight / dbias terms (design change 18) on main's working tree — ZZZZC's memcheck
# ran out of its 120 s after 35 runs: every backward configuration's narrowest width (--widths lo),
# split rows bf16 and fp32, then the whole rows bf16.
# Prediction: 0 errors (the loads are still masked; only the sums of lanes never stored changed).
# Outcome (371 s): split bf16 47 runs, split fp32 33, whole rows bf16 80 — all ok, 0 sanitizer
# reports (each list out of its time before the end: --widths lo still has more configurations than
# fit; with ZZZZC's 35, 195 runs over the backward's tiles of design change 18).
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0 PYTORCH_NO_CUDA_MEMORY_CACHING=1
san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
mc() {  # mc NAME LIMIT ARGS...: memcheck of tools/sanitize_sweep.py ARGS into $L/NAME.log
  local name=$1 limit=$2 log="$L/$1.log"
  shift 2
  timeout "$limit" "$san" --tool memcheck --target-processes all python3 tools/sanitize_sweep.py --kind bwd "$@" > "$log" 2>&1
  echo "$name (exit $?): $(grep -c ': ok (' "$log") runs ok, $(grep -c 'FAIL' "$log") failed," \
       "$(grep -c '^========= [A-Z][a-z]' "$log") sanitizer reports; $(grep 'ERROR SUMMARY' "$log" | sort | uniq -c | tr '\n' ' ')"
}
mc split_bf16 130 --split only --widths lo
mc split_fp32 110 --split only --widths lo --dtype fp32
mc whole_bf16 130 --split exclude --widths lo
pack_logs
