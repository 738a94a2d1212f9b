#!/usr/bin/env bash
# Device run A: the test suite on the GPU, then the tuning sweeps. Output under $OUT.
set -o pipefail
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || export PYTHONPATH=$PWD
timeout 200 python -m pytest tests -q -x -p no:cacheprovider --ignore=tests/test_challenge.py 2>&1 | tail -25 | tee $OUT/pytest.log
timeout 150 python tools/tune.py --kind bwd --json $OUT/tune_bwd.json 2>&1 | tee $OUT/tune_bwd.log
timeout 90 python tools/tune.py --kind fwd --shapes 524288x128,16384x4096,4096x16384,8192x32768,4096x65536,2048x131072 --json $OUT/tune_fwd.json 2>&1 | tee $OUT/tune_fwd.log
