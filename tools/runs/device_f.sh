#!/usr/bin/env bash
# Device run F (session 2): where the GPU suite stalled in runs D/E (a faulthandler dump), the
# whole suite without that file, the host-overhead profile (fast launch), the demo's rounding
# control, the wide-row / host-bound bench rows side by side, the hidden-4096 demo step time.
set -o pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:$PWD
fi
timeout 45 python -m pytest tests/test_challenge_grader.py -x -q -p no:cacheprovider -o faulthandler_timeout=25 > $OUT/grader.log 2>&1; grep -v "^  File.*site-packages" $OUT/grader.log | tail -40
timeout 230 python -m pytest tests -q -p no:cacheprovider --durations=15 --ignore=tests/test_challenge_grader.py --ignore=tests/test_properties.py --ignore=tests/test_reliability.py 2>&1 | tail -40 | tee $OUT/pytest.log
timeout 40 python tools/profile_host.py 2>&1 | tail -12 | tee $OUT/profile.log
timeout 60 python tools/demo_control.py --steps 200 --lrs 3e-3,3e-4 2>&1 | tee $OUT/demo_control.log
timeout 120 python -m normkit bench --shapes 4096x16384,8192x32768,4096x65536,2048x131072 --dtypes bf16 --impls normkit,native,compile,liger --markdown --json $OUT/bench_wide.json 2>&1 | tail -30 | tee $OUT/bench_wide.log
timeout 45 python -m normkit demo --dtype bf16 --hidden 4096 --layers 2 --heads 32 --seq 1024 --batch 8 --steps 30 --every 10 --lr 3e-4 --json $OUT/demo_4096.json 2>&1 | tail -7 | tee $OUT/demo.log
