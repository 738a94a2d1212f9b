#!/usr/bin/env bash
# Device run ZZZZZF (prepared in session 25 for the next session, nvidia-h200; carry [".whl"]):
#  - `bash tools/device_zzzzzf.sh checks` (~8 min): what session 25 landed and could not check for lack of
#    device time — tests/test_split_rows.py whole in check mode (new: the forward's staged held parts on
#    rows that are not vector-aligned, (33, 40001, 1 × 2048 three deep), every family and dtype), then
#    memcheck of every backward split configuration the heuristics pick (new since session 24's 256 runs:
#    LayerNorm's fp32 parts four deep, the fused LayerNorm's bf16 parts three / four deep, LayerNorm bf16
#    1 × 4096 on 4 at 32768) and the forward's.
#    Prediction: all pass, 0 errors (the held forward ran 144 + 262 + 25 checked tests in run ZZZZZE, the
#    four-deep parts 28 + 28).
#  Outcome: (to fill)
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?checks} in
checks)
  checked_tests 280 tests/test_split_rows.py
  memcheck_split bwd 240
  memcheck_split fwd 60 ;;
esac
pack_logs
