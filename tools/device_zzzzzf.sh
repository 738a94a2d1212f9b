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
#  - `bash tools/device_zzzzzf.sh grid` (~6 min): every family side by side, the fused LayerNorm's new
#    bench family included (session 25: `--family fused_layer_norm`, peers native and torch.compile;
#    its rows so far only in tools/tune.py sweeps). Prediction: the fused LayerNorm's backward 81-87 % bf16,
#    96-101 % fp32 (the sweeps), its forward 77-88 %; the other families as in run ZZZZZE `land2` ±2.5 %.
#  Outcome: (to fill)
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?checks} in
checks)
  checked_tests 280 tests/test_split_rows.py
  memcheck_split bwd 240
  memcheck_split fwd 60 ;;
grid)
  side_by_side 540 ;;
esac
pack_logs
