# Sourced by the device run scripts (tools/device_*.sh): NVLink multicast off for NCCL, PyTorch
# and NVSHMEM (the device README: it can take a shared host's GPUs out of service), unbuffered
# output, and the carried wheels (.whl: Liger, hypothesis) on PYTHONPATH.
set -o pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
export PYTHONPATH=/tmp/site:$PWD

# The run's logs: $L (made here), packed into $OUT/logs.tgz by pack_logs at the end (what comes
# back from the device is at most 8 files, so the many logs travel as one archive).
L=$OUT/logs; mkdir -p "$L"
pack_logs() { tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$L"; }

# gpu_tests_on GPU LIMIT: the GPU test files (device_reliability.sh gpu_tests) on one GPU, logs in $L.
gpu_tests_on() {
  ( export CUDA_VISIBLE_DEVICES=$1; OUT=$L TESTS_LIMIT=$2 bash tools/device_reliability.sh gpu_tests )
}

# ab_bench ROUNDS SHAPES BASE_DIR NEW_DIR: an A/B of two builds of normkit (bf16, every family,
# normkit only, at SHAPES; then fp32: AB_FP32_FAMILY at AB_FP32_SHAPES, by default LayerNorm
# 16384×4096), alternated ROUNDS times, into
# $L/ab_{base,new}_{round}[_fp32].json. Each build runs from its own directory: `python3 -m normkit`
# imports the working directory's copy before anything on PYTHONPATH (what voided runs Y, ZA and
# ZC's A/Bs), so PYTHONPATH carries only the wheels; round 1 prints which copy each arm imports.
ab_bench() {
  local rounds=$1 shapes=$2 base=$3 new=$4 round build dir
  for round in $(seq "$rounds"); do
    for build in base new; do
      dir=$base; [ $build = new ] && dir=$new
      (
        cd "$dir" || exit 1
        [ "$round" = 1 ] && PYTHONPATH=/tmp/site python3 -c "import normkit; print('$build imports', normkit.__file__)"
        PYTHONPATH=/tmp/site timeout 60 python3 -m normkit bench --family all --impls normkit --dtypes bf16 \
            --shapes "$shapes" --json "$L/ab_${build}_$round.json" > "$L/ab_${build}_$round.log" 2>&1
        echo "== $build round $round bf16 (rc=$?)"
        PYTHONPATH=/tmp/site timeout 60 python3 -m normkit bench --family "${AB_FP32_FAMILY:-layer_norm}" --impls normkit \
            --shapes "${AB_FP32_SHAPES:-16384x4096}" --dtypes fp32 --json "$L/ab_${build}_${round}_fp32.json" \
            > "$L/ab_${build}_${round}_fp32.log" 2>&1
        echo "== $build round $round fp32 (rc=$?)"
      )
    done
  done
}
