#!/usr/bin/env bash
# Device run E: split rows (forward and backward): correctness, then config sweeps on the wide
# shapes, then the whole test suite with per-test durations (run D's did not finish in 220 s).
set -o pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
NORMKIT_FAST_LAUNCH=check timeout 150 python -m pytest tests/test_split_rows.py -q -x -p no:cacheprovider 2>&1 | tail -15 | tee $OUT/split_tests.log
timeout 170 python tools/tune.py --kind bwd --split only --shapes 4096x16384,8192x32768,4096x65536,2048x131072 --json $OUT/tune_split_bwd.json 2>&1 | grep -v MISMATCH | tee $OUT/tune_split_bwd.log
timeout 80 python tools/tune.py --kind fwd --split only --shapes 8192x32768,4096x65536,2048x131072 --json $OUT/tune_split_fwd.json 2>&1 | grep -v MISMATCH | tee $OUT/tune_split_fwd.log
timeout 180 python -m pytest tests -q -p no:cacheprovider --durations=30 2>&1 | tail -50 | tee $OUT/pytest.log
