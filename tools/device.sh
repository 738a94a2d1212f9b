#!/usr/bin/env bash
# The one script the GPU machine runs (from the checkout's root, with $OUT set by the device tool).
#
#   bash tools/device.sh SUBCOMMAND [SUBCOMMAND ...]      e.g. bash tools/device.sh tests bench
#
#   env            GPU, driver, torch/triton versions, compute-sanitizer (always printed first)
#   tests          the GPU test files (compiled kernels, every heuristic configuration), SIGINT at $TESTS_LIMIT s
#   verify         python -m normkit (the main job) with its timing table
#   bench          every family side by side with its peers: $OUT/bench.{json,log} (benchmarks/README.md)
#   eager          eager wall µs per call against the peers (bench --eager): $OUT/eager.{json,log}
#   host           host time per call and per layer (tools/profile_host.py --detail): $OUT/host.log
#   model          training steps of llama, qwen3 (eager with Liger; compiled with --profile) and qwen3-next
#                  (eager): $OUT/<model>-<mode>.{json,log}
#   cold           python -m normkit with Triton's and Inductor's caches emptied, timed: $OUT/cold.{log,json}
#   portable       split-row tests with the portable spin wait, then the wide-row bench tuned / generic / generic
#                  portable (NORMKIT_ARCH, NORMKIT_PORTABLE; $PORTABLE_VARIANTS picks, tuned-portable too): $OUT/portable-*.log
#   compiled       the traced-kernel compile path: its GPU tests, then llama and qwen3 compiled, stock against the
#                  opaque ops (patched, fused) and the traced kernels (traced, fused-traced): $OUT/<model>-traced.*
#   sweep          every heuristic configuration against float64, no sanitizer (warms Triton's cache)
#   memcheck | memcheck_split | racecheck | initcheck
#                  compute-sanitizer over tools/sanitize_sweep.py (docs/reliability.md)
#   huge           tensors above 2**31 elements (tools/check_huge.py)
#   reliability    sweep memcheck memcheck_split racecheck initcheck huge, in that order
#
# Carried wheels (.whl/*.whl: Liger, hypothesis) are installed to /tmp/site first. Logs land in $OUT.
set -o pipefail
case ${1:-} in -h|--help|help|"") sed -n '2,25p' "$0"; exit 0 ;; esac
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-out}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
export PYTHONPATH=/tmp/site:$PWD
PY=python3
SANITIZER=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)

env_info() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv
  $PY -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  echo "compute-sanitizer: ${SANITIZER:-not found}"
}

sanitize() {  # TOOL LIMIT NAME SWEEP_ARGS...
  local tool=$1 limit=$2 name=$3
  shift 3
  if [ -z "$SANITIZER" ]; then echo "$name: compute-sanitizer not found"; return 1; fi
  # One cudaMalloc per tensor: memcheck sees accesses past a tensor, initcheck reads of unwritten memory.
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout "$limit" "$SANITIZER" --tool "$tool" --target-processes all \
    $PY tools/sanitize_sweep.py "$@" > "$OUT/$name.log" 2>&1
  echo "$name (exit $?): $(grep -c ': ok (' "$OUT/$name.log") runs ok, $(grep -c 'FAIL' "$OUT/$name.log") failed"
  grep -E "ERROR SUMMARY|sanitize_sweep:" "$OUT/$name.log" | sort | uniq -c
}

run_step() {
  case $1 in
    env) env_info 2>&1 | tee "$OUT/env.log" ;;
    tests)  # SIGINT at the limit, so pytest still prints which tests failed
      NORMKIT_HYPOTHESIS_EXAMPLES=${NORMKIT_HYPOTHESIS_EXAMPLES:-0.3} timeout -s INT -k 30 "${TESTS_LIMIT:-420}" \
        $PY -m pytest -q -p no:cacheprovider -rfE -W ignore::DeprecationWarning ${TESTS:-tests} > "$OUT/tests.log" 2>&1
      echo "tests rc=$? $(tail -1 "$OUT/tests.log")"
      grep -E "^(FAILED|ERROR)|Falsifying|configurations" "$OUT/tests.log" | head -20 ;;
    verify) timeout "${VERIFY_LIMIT:-300}" $PY -m normkit verify 2>&1 | tee "$OUT/verify.log" | tail -40 ;;
    bench)
      timeout "${BENCH_LIMIT:-420}" $PY -m normkit bench --family all --impls "${IMPLS:-normkit,native,compile,liger}" \
        --markdown --json "$OUT/bench.json" > "$OUT/bench.log" 2>&1
      echo "bench rc=$?"; tail -5 "$OUT/bench.log" ;;
    eager)
      timeout "${BENCH_LIMIT:-300}" $PY -m normkit bench --eager --impls "${IMPLS:-normkit,native,compile,liger}" \
        --markdown --json "$OUT/eager.json" > "$OUT/eager.log" 2>&1
      echo "eager rc=$?"; grep -E "^\|" "$OUT/eager.log" | tail -20 ;;
    host) timeout 240 $PY tools/profile_host.py --detail > "$OUT/host.log" 2>&1; echo "host rc=$?"; head -60 "$OUT/host.log" ;;
    model)
      for m in llama qwen3; do
        timeout 200 $PY -m normkit bench --model $m --modes eager --variants stock,patched,fused,liger --markdown \
          --json "$OUT/$m-eager.json" > "$OUT/$m-eager.log" 2>&1; echo "$m eager rc=$?"; grep -E "^\|" "$OUT/$m-eager.log"
        timeout 240 $PY -m normkit bench --model $m --modes compile --variants stock,patched,fused --steps 20 --profile --markdown \
          --json "$OUT/$m-compile.json" > "$OUT/$m-compile.log" 2>&1; echo "$m compile rc=$?"
        grep -E "^\|" "$OUT/$m-compile.log" | head -8
      done
      timeout 150 $PY -m normkit bench --model qwen3-next --modes eager --variants stock,patched,liger --markdown \
        --json "$OUT/qwen3-next-eager.json" > "$OUT/qwen3-next-eager.log" 2>&1; echo "qwen3-next rc=$?"
      grep -E "^\|" "$OUT/qwen3-next-eager.log" ;;
    portable)
      if [ "${PORTABLE_TESTS_LIMIT:-150}" != 0 ]; then  # (0: the benches only)
        NORMKIT_PORTABLE=1 timeout -s INT "${PORTABLE_TESTS_LIMIT:-150}" $PY -m pytest -x -q -p no:cacheprovider -rfE \
          tests/test_split_rows.py > "$OUT/portable-tests.log" 2>&1
        echo "portable split tests rc=$? $(tail -1 "$OUT/portable-tests.log")"
        grep -E "^(FAILED|ERROR)" "$OUT/portable-tests.log" | head -5
      fi
      for v in ${PORTABLE_VARIANTS:-tuned generic portable}; do
        case $v in tuned) E="";; generic) E="NORMKIT_ARCH=generic";; portable) E="NORMKIT_ARCH=generic NORMKIT_PORTABLE=1";;
          tuned-portable) E="NORMKIT_PORTABLE=1";; *) echo "PORTABLE_VARIANTS: unknown variant '$v'" >&2; return 2;; esac
        env $E timeout 100 $PY -m normkit bench --family rms,layer_norm --impls normkit --dtypes bf16 --markdown \
          --shapes 4096x16384,2048x32768,4096x65536,2048x131072 > "$OUT/portable-$v.log" 2>&1; echo "bench $v rc=$?"
        grep -E "^(###|\| bf16)" "$OUT/portable-$v.log" | grep -i -A4 backward | grep "^| bf16" | cut -c1-40
      done ;;
    compiled)
      timeout "${COMPILED_TESTS_LIMIT:-300}" $PY -m pytest -q -p no:cacheprovider -rfE tests/test_compile_ops.py tests/test_compile_hunt.py > "$OUT/compiled-tests.log" 2>&1
      echo "compile ops tests rc=$? $(tail -1 "$OUT/compiled-tests.log")"; grep -E "^(FAILED|ERROR)" "$OUT/compiled-tests.log" | head -5
      for m in llama qwen3; do
        timeout "${MODEL_LIMIT:-200}" $PY -m normkit bench --model $m --modes compile --variants stock,patched,traced,fused,fused-traced \
          --steps 20 --markdown --json "$OUT/$m-traced.json" > "$OUT/$m-traced.log" 2>&1; echo "$m traced rc=$?"
        grep -E "^\|" "$OUT/$m-traced.log" | head -8
      done ;;
    cold)
      rm -rf ~/.triton/cache /tmp/torchinductor_* 2>/dev/null
      ( time timeout 200 $PY -m normkit --json "$OUT/cold.json" > "$OUT/cold.log" 2>&1 ) 2>&1 | tail -3
      tail -12 "$OUT/cold.log" ;;
    sweep)
      timeout "${SWEEP_LIMIT:-90}" $PY tools/sanitize_sweep.py > "$OUT/sweep.log" 2>&1
      echo "sweep (exit $?):"; grep -E "FAIL|sanitize_sweep:" "$OUT/sweep.log" | tail -5 ;;
    memcheck)       sanitize memcheck "${MEMCHECK_LIMIT:-80}" memcheck --split exclude ;;
    memcheck_split) sanitize memcheck "${MEMCHECK_LIMIT:-60}" memcheck_split --kind both --split only ;;
    racecheck)      sanitize racecheck 60 racecheck --split exclude --widths lo --families rms,layer_norm ;;
    initcheck)      sanitize initcheck 50 initcheck --split exclude --widths lo ;;
    huge) timeout 80 $PY tools/check_huge.py 2>&1 | tee "$OUT/huge.log" | tail -6 ;;
    reliability) for s in sweep memcheck memcheck_split racecheck initcheck huge; do run_step "$s"; done ;;
    -h|--help|help) sed -n '2,25p' "$0" ;;
    *) echo "tools/device.sh: unknown subcommand '$1' (see: bash tools/device.sh --help)" >&2; return 2 ;;
  esac
}

run_step env
for step in "$@"; do run_step "$step" || exit $?; done
