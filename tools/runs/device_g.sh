#!/usr/bin/env bash
# Device run G (session 2): the test files run F did not reach or that changed after it, one file
# at a time so that a stall shows where (verbose log per file under $OUT).
set -o pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:$PWD
fi
for f in ${FILES:-test_distributed test_challenge_grader test_patch test_validation test_reliability test_split_rows}; do
  timeout ${PER_FILE:-60} python -m pytest tests/$f.py -q -p no:cacheprovider -o faulthandler_timeout=50 -rfE > $OUT/$f.log 2>&1
  echo "$f rc=$? $(tail -1 $OUT/$f.log)"
done
