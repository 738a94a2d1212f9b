#!/usr/bin/env bash
# Device run C: the whole test suite on the GPU, the fused-add / LayerNorm benchmark families,
# whole-row backward tiles for N = 16384 / 32768, and a host-overhead profile. Output under $OUT.
set -o pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:$PWD
fi
timeout 190 python -m pytest tests -q -p no:cacheprovider 2>&1 | tail -15 | tee $OUT/pytest.log
timeout 110 python -m normkit bench --family fused_add,layer_norm --impls normkit,native,compile,liger --markdown --json $OUT/bench_families.json 2>&1 | tee $OUT/bench_families.log
timeout 45 python tools/tune.py --kind bwd --shapes 4096x16384,8192x32768 --one-tile-limit 32768 --ppsm 1,2 2>&1 | grep -v MISMATCH | tee $OUT/tune_c.log
timeout 25 python tools/profile_host.py 2>&1 | tee $OUT/profile.log
