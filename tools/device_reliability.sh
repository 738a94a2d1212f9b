#!/usr/bin/env bash
# Reliability checks on the GPU (RELIABILITY.md): the GPU parts of tests/test_reliability.py and
# tests/test_properties.py (two threads and two CUDA streams, 20-run determinism on large shapes,
# every heuristic configuration compiled for real, split rows included), compute-sanitizer
# memcheck / racecheck / initcheck over tools/sanitize_sweep.py, and tensors above 2**31 elements
# (tools/check_huge.py). Run from the repo root with $OUT set; every step has its own timeout and
# the timeouts sum to 580 s (under the 10-minute limit, with the machine's start-up outside it);
# a step that timed out can be rerun alone, e.g.: tools/device_reliability.sh racecheck
#   steps: tests sweep memcheck memcheck_split racecheck initcheck huge   (default: all, in that order)
#   and, not in the default: gpu_tests (the six GPU test files of a validation run, TESTS_LIMIT s),
#   memcheck_bwd / memcheck_fwd (FAMILIES=… WIDTHS=lo|all: one family's backward / forward
#   configurations under memcheck), racecheck_only (ONLY=label part, e.g. ones3: those backward
#   configurations under racecheck)
# Logs land in $OUT/*.log; the lines RELIABILITY.md quotes are echoed to stdout.
set -o pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}  # keeps the caller's (e.g. tools/device_env.sh's wheels)
OUT=${OUT:-out}
mkdir -p "$OUT"
STEPS=${*:-tests sweep memcheck memcheck_split racecheck initcheck huge}
PY=python3

# hypothesis for the two property tests (they skip without it; everything else runs): a local
# wheel when the machine has none (no internet there).
if ! $PY -c "import hypothesis" 2>/dev/null; then
  wheels=$(ls .whl/hypothesis-*.whl .whl/sortedcontainers-*.whl hypothesis-*.whl sortedcontainers-*.whl 2>/dev/null)
  if [ -n "$wheels" ]; then
    $PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/hyp $wheels 2>&1 | tail -2
    export PYTHONPATH=/tmp/hyp:$PYTHONPATH
  fi
fi

{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv
  $PY -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  $PY -c "import hypothesis; print('hypothesis', hypothesis.__version__)" 2>&1 | tail -1
  which compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null
} 2>&1 | tee "$OUT/env.log"
SANITIZER=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)

run_sanitizer() {  # tool, timeout, log name, sweep arguments...
  local tool=$1 limit=$2 name=$3
  shift 3
  if [ -z "$SANITIZER" ]; then echo "$name: compute-sanitizer not found" | tee "$OUT/$name.log"; return; fi
  # Own cudaMalloc per tensor: memcheck sees accesses past a tensor, initcheck reads of unwritten memory.
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout "$limit" "$SANITIZER" --tool "$tool" --target-processes all \
    $PY tools/sanitize_sweep.py "$@" > "$OUT/$name.log" 2>&1
  echo "$name (exit $?): $(grep -c ': ok (' "$OUT/$name.log") runs ok," \
       "$(grep -c 'FAIL' "$OUT/$name.log") failed"
  grep -E "ERROR SUMMARY|sanitize_sweep:" "$OUT/$name.log" | sort | uniq -c
}

for step in $STEPS; do
  case $step in
    tests)  # GPU parts of the reliability and property tests (compiles each configuration)
      # Fewer hypothesis examples than on the CPU: here each new flag/dtype combination is a compile.
      NORMKIT_HYPOTHESIS_EXAMPLES=${NORMKIT_HYPOTHESIS_EXAMPLES:-0.3} timeout -s INT -k 30 190 $PY -m pytest \
        tests/test_reliability.py tests/test_properties.py -q -p no:cacheprovider -W ignore::DeprecationWarning \
        > "$OUT/pytest.log" 2>&1
      echo "pytest (exit $?):"; grep -E "passed|failed|error|launch configurations|heuristics, |missed" "$OUT/pytest.log"
      ;;
    gpu_tests)  # the GPU test files of a validation run (device runs Q-S), one pytest; at the time
      # limit SIGINT, so pytest still prints which tests failed (run ZQ's plain timeout cut the summary)
      NORMKIT_HYPOTHESIS_EXAMPLES=${NORMKIT_HYPOTHESIS_EXAMPLES:-0.3} timeout -s INT -k 30 ${TESTS_LIMIT:-330} $PY -m pytest \
        tests/test_properties.py tests/test_split_rows.py tests/test_reliability.py tests/test_ops.py \
        tests/test_failure_paths.py tests/test_launch.py -q -p no:cacheprovider -rfE -W ignore::DeprecationWarning > "$OUT/tests.log" 2>&1
      echo "tests rc=$? $(tail -1 "$OUT/tests.log")"
      grep -E "^(FAILED|ERROR)|Falsifying|configurations|heuristics, |missed" "$OUT/tests.log" | head -20
      ;;
    sweep)  # no sanitizer: warms Triton's cache for the sanitizer runs and checks every result
      timeout ${SWEEP_LIMIT:-90} $PY tools/sanitize_sweep.py > "$OUT/sweep.log" 2>&1
      echo "sweep (exit $?):"; grep -E "FAIL|sanitize_sweep:" "$OUT/sweep.log" | tail -5
      ;;
    memcheck)       run_sanitizer memcheck ${MEMCHECK_LIMIT:-80} memcheck --split exclude ;;
    memcheck_split) run_sanitizer memcheck ${MEMCHECK_SPLIT_LIMIT:-30} memcheck_split --split only --families ${FAMILIES:-rms,layer_norm} ;;
    memcheck_bwd)   # one family's backward configurations after a tile change (FAMILIES, WIDTHS lo/all)
      run_sanitizer memcheck ${MEMCHECK_LIMIT:-60} memcheck_bwd_${FAMILIES:-rms} --kind bwd --families ${FAMILIES:-rms} \
        --split exclude --widths ${WIDTHS:-all} ;;
    memcheck_fwd)   # one family's forward configurations (FAMILIES, WIDTHS lo/all), e.g. after a mask change
      run_sanitizer memcheck ${MEMCHECK_LIMIT:-60} memcheck_fwd_${FAMILIES:-layer_norm} --kind fwd \
        --families ${FAMILIES:-layer_norm} --split exclude --widths ${WIDTHS:-all} ;;
    racecheck)      run_sanitizer racecheck 60 racecheck --split exclude --widths lo --families rms,layer_norm ;;
    racecheck_only) # the backward configurations whose label has ONLY (e.g. ones3: loads staged in shared memory)
      run_sanitizer racecheck ${RACECHECK_LIMIT:-60} racecheck_${ONLY:-ones3} --kind bwd --split exclude --widths lo \
        --families ${FAMILIES:-rms,layer_norm} --only ${ONLY:-ones3} ;;
    initcheck)      run_sanitizer initcheck 50 initcheck --split exclude --widths lo ;;
    huge)  # tensors above 2**31 elements
      timeout 80 $PY tools/check_huge.py > "$OUT/huge.log" 2>&1
      echo "huge (exit $?):"; cat "$OUT/huge.log" | tail -6
      ;;
    *) echo "unknown step $step" ;;
  esac
done
