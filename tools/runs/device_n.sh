#!/usr/bin/env bash
# Device run N then O (session 4, one H200), on a build with the pipelined split-row exchange (design change 6, not on
# main: docs/change6_tagged_exchange.diff; N: counters, O: tagged words). Publish
# block t, then wait for block t-1; a ring of 4 exchange slots. (1) correctness first: split-row
# tests, every heuristic configuration forced, bitwise determinism; (2) the split sweep on the wide
# shapes (and N = 16384, where a split may now win); (3) QK-norm rows with few warps.
source tools/device_env.sh
timeout 200 python3 -m pytest tests/test_split_rows.py tests/test_properties.py -k "split or every_gpu or enumeration" \
  -q -p no:cacheprovider -rfE -x > $L/tests.log 2>&1
echo "tests rc=$? $(tail -1 $L/tests.log)"; grep -E "FAIL|Error" $L/tests.log | head -5
timeout 200 python3 tools/tune.py --kind bwd --split only --prefetch only \
  --shapes ${SPLIT_SHAPES:-8192x32768,2048x131072,4096x16384} > $L/tune_split.log 2>&1
grep -h -A3 "heuristic" $L/tune_split.log
if [ -z "$SKIP_QK" ]; then  # run O (the tagged exchange) skipped it: run N had measured it
  timeout 120 python3 tools/tune.py --kind bwd --split no --prefetch no --ppsm 2,4 --shapes 524288x128 > $L/tune_qk.log 2>&1
  grep -h -A3 "heuristic" $L/tune_qk.log
fi
pack_logs
