#!/usr/bin/env bash
# Device run ZZZC (session 15, nvidia-h200-x2, ~5 min): compute-sanitizer over the forward's
# configurations sessions 14-15 added, which had never run under it — the split forward (the fused
# add's rows of more than 64 KB: programs exchanging partial sums through global memory) and
# LayerNorm's centered-pass column tiles (tools/sanitize_sweep.py forces each configuration onto
# small problems with NaN-filled sentinel bands and checks them against float64).
#  - GPU 0: the forward sweep without a sanitizer (every forward configuration × family: results and
#    Triton's cache), then memcheck and initcheck over the split forward (rms, fused_add).
#  - GPU 1: memcheck, initcheck and racecheck over the centered-pass tiles (LayerNorm).
# Prediction: 0 errors, every run ok.
# Outcome: as predicted — sweep 166 runs, 0 failures; memcheck split 8 runs / centered 4, initcheck
# split 2 / centered 4, racecheck centered 2: 0 errors, 0 hazards.
source tools/device_env.sh
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
sanitized() {  # tool, limit, log name, sweep arguments...
  local tool=$1 limit=$2 name=$3
  shift 3
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout "$limit" "$SAN" --tool "$tool" --target-processes all \
      python3 tools/sanitize_sweep.py "$@" > "$L/$name.log" 2>&1
  echo "$name (exit $?): $(grep -c ': ok (' "$L/$name.log") runs ok, $(grep -c 'FAIL' "$L/$name.log") failed;" \
       "$(grep -E 'ERROR SUMMARY' "$L/$name.log" | sort | uniq -c | tr '\n' ' ')$(grep -E 'sanitize_sweep:' "$L/$name.log")"
}
echo "sanitizer: $SAN"
(
  export CUDA_VISIBLE_DEVICES=0
  timeout 150 python3 tools/sanitize_sweep.py --kind fwd > "$L/sweep_fwd.log" 2>&1
  echo "sweep fwd (exit $?): $(grep -c 'FAIL' "$L/sweep_fwd.log") failed; $(grep 'sanitize_sweep:' "$L/sweep_fwd.log")"
  sanitized memcheck 140 memcheck_fwd_split --kind fwd --split only --families rms,fused_add
  sanitized initcheck 120 initcheck_fwd_split --kind fwd --split only --families fused_add --widths lo
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  timeout 60 python3 tools/sanitize_sweep.py --kind fwd --families layer_norm --only two > "$L/warm1.log" 2>&1
  sanitized memcheck 120 memcheck_fwd_centered --kind fwd --families layer_norm --only two
  sanitized initcheck 100 initcheck_fwd_centered --kind fwd --families layer_norm --only two
  sanitized racecheck 100 racecheck_fwd_centered --kind fwd --families layer_norm --only two --widths lo
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
