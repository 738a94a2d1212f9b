#!/usr/bin/env bash
# Device run B: wide-row correctness, the test suite, the main job, the side-by-side benchmark
# (normkit, F.rms_norm, torch.compile, Liger from the carried wheel) and the challenge case.
set -o pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:$PWD
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
timeout 120 python tools/check_large.py 2>&1 | tee $OUT/check_large.log
timeout 240 python -m pytest tests -q -x -p no:cacheprovider 2>&1 | tail -15 | tee $OUT/pytest.log
timeout 150 python -m normkit bench --impls normkit,native,compile,liger --markdown --json $OUT/bench.json --plot $OUT/bench.png 2>&1 | tee $OUT/bench.log
timeout 60 python -m normkit challenge rms-norm-backward 2>&1 | tail -4 | tee $OUT/challenge.log
timeout 120 python -m normkit --no-bench 2>&1 | tail -6 | tee $OUT/report.log
