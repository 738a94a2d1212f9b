#!/usr/bin/env bash
# Device run ZZZZZH (session 27, nvidia-h200; carry [".whl", ".ab_base"] — .ab_base: `git archive` of
# main before the change, normkit tools tests pyproject.toml):
#  - `ab` (~4 min): session 27's heuristic changes, from run ZZZZZG's sweep (tools/runs/device_zzzzzg.sh sweep):
#    LayerNorm's bf16 backward parts of 1 × 4096 on 4 warps, two an SM, staged, at 65536 / 131072 (and the
#    fused LayerNorm's at 131072); the fused LayerNorm's whole rows of 8192 staged (1 × 8192 on 8, three
#    deep) instead of the fused add's prefetching tile; the fused LayerNorm's forward rows of 16384 held
#    in registers, not re-read for y. Count: the same bytes — only the tile changes. Prediction (the
#    sweep's numbers, µs): LayerNorm 4096×65536 513 → ~450, 2048×131072 501 → ~455; the fused LayerNorm
#    2048×131072 610 → ~551, 16384×8192 312 → ~264; its forward 4096×16384 bf16 144 → ~138, fp32 292 →
#    ~273. A/B, 2 rounds, tools/tune.py --heuristic-only, base = .ab_base, new = this tree.
#    Then probes (tools/tune.py --config): LayerNorm / the fused LayerNorm 1024×262144 on the 1 × 4096
#    parts on 4 warps (the heuristic's 1 × 4096 on 8 capped / 1 × 2048), plain LayerNorm's forward
#    4096×16384 held (its heuristic re-reads).
#  - `checks` (~6 min): the whole tests/test_split_rows.py in check mode, then memcheck of the split
#    configurations (backward 200 s, forward 60 s) — design change 32's paired wait and the new parts.
#  Outcome (session 27): `ab` as predicted — LayerNorm 4096×65536 516 → 454, 2048×131072 505 → 460, the fused
#    LayerNorm 2048×131072 614 → 553, 16384×8192 312 → 264, its forward 146 → 139.5 / fp32 295 → 273 (two
#    rounds each); probes: LayerNorm 1024×262144 1 × 4096 on 4 496.7 against 570.5 (taken), the fused 565.5 /
#    568.4 (kept), plain LayerNorm's forward held 112 against 72.6 re-read (kept). `checks`: 275 passed, 1
#    skipped; memcheck backward 111 runs, forward 19, no error. Then the grid (side_by_side 420, run ZZZZZH).
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?ab|checks} in
ab)
  B=$PWD/.ab_base
  arm() {
    TUNE_LIMIT=60 tune_in "$1" --kind bwd --family layer_norm --dtype bf16 --heuristic-only \
        --shapes 4096x65536,2048x131072 | sed -E "s/ best .*//"
    TUNE_LIMIT=60 tune_in "$1" --kind bwd --family layer_norm --residual --dtype bf16 --heuristic-only \
        --shapes 2048x131072,16384x8192 | sed -E "s/ best .*//"
    TUNE_LIMIT=40 tune_in "$1" --kind fwd --family layer_norm --residual --dtype bf16 --heuristic-only \
        --shapes 4096x16384 | sed -E "s/ best .*//"
    TUNE_LIMIT=40 tune_in "$1" --kind fwd --family layer_norm --residual --dtype fp32 --heuristic-only \
        --shapes 4096x16384 | sed -E "s/ best .*//"
  }
  ab_rounds 2 arm "$B" "$PWD" | tee "$L/ab.log"
  { tune_sweep bwd layer_norm bf16 1024x262144 40 1x4096:4:split:a3:p2 1x4096:8:split:a3:p2:r128
    TUNE_ARGS="--residual" tune_sweep bwd layer_norm bf16 1024x262144 40 1x4096:4:split:a3:p2 1x2048:4:split:a3:p4:r128
    tune_sweep fwd layer_norm bf16 4096x16384,8192x16384 30 1x16384:16 1x16384:16:reload 1x16384:32
  } 2>&1 | tee "$L/probe.log" ;;
checks)
  checked_tests 280 tests/test_split_rows.py
  memcheck_split bwd 200
  memcheck_split fwd 60 ;;
esac
pack_logs
