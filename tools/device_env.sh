# Sourced by the device run scripts (tools/device_*.sh): NVLink multicast off for NCCL, PyTorch
# and NVSHMEM (the device README: it can take a shared host's GPUs out of service), unbuffered
# output, and the carried wheels (.whl: Liger, hypothesis) on PYTHONPATH.
set -o pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
export PYTHONPATH=/tmp/site:$PWD
