#!/usr/bin/env bash
# Device run ZZZZZG (prepared in session 26 for the next session, nvidia-h200; carry [".whl"]):
#  - `bash tools/runs/device_zzzzzg.sh sweep` (~3 min; tools/tune.py --config, µs, the heuristic first in the same
#    process): the staged parts again where session 25 measured them before design change 32's paired wait
#    (LayerNorm bf16 4096×65536: staged 523.8-580.5 against the prefetching 2 × 2048's 514.7 — the staged
#    parts' wait then took two L2 round trips a row block, the prefetching parts' poll one); wider parts
#    where 64 parts a row wait for the slowest partner (LayerNorm / the fused LayerNorm 2048×131072: 75 /
#    83 %); the fused LayerNorm's whole rows of 8192 (82 %, on the fused add's 1 × 8192 prefetching tile,
#    which runs the fused add's same bytes at 100 %) and its forward at 4096×16384 (87 %; torch.compile
#    leads in fp32, 269 against 293).
#    Count: staged 1 × 2048 parts on 4 warps, four an SM (128 registers capped, 16 KB shared three deep);
#    1 × 4096 on 4, two an SM (240 registers, 32 KB); the fused LayerNorm's 1 × 8192 on 16 prefetching
#    (128 registers, ptxas sm_90; 8 warps staged: 225, 16 staged: 127, no spills).
#    Prediction: LayerNorm bf16 4096×65536 staged 1 × 2048 ≤ 470 µs (−9 %, as the paired wait gave at
#    16384 / 32768: then the heuristic's); 2048×131072 1 × 4096 ±3 %; the fused LayerNorm 16384×8192: a
#    staged whole row −10 to −15 % (RMSNorm's / LayerNorm's rows of 8192 stage); its forward ±3 %.
#  - `ab` (~5 min): the exchange's words read early (docs/experiments/split-early-wait.patch, session 26,
#    not yet on a GPU): a staged part reads block t − 1's words at the top of iteration t
#    (stats.peek_row_sums: relaxed loads in PTX, issued before this block's loads, row sums and publish)
#    and only checks their tags after them (stats._settle_word: no load where they had arrived, else the
#    spin as before) — the last L2 round trip of a row block's critical path overlapped with the block's
#    work; backward and the staged forwards (the fused add's, the fused LayerNorm's). Count (tools/ptx_stats.py
#    --sass, sm_90): the early loads at the loop's top, before the row sums' first shuffle; the same
#    registers ±3, 0 B spilled, row loop 441-575 instructions (±10); compile_check 75 ok. A/B, 2 rounds,
#    tools/tune.py --heuristic-only, base = main, new = main + the patch; then the patched build's split
#    tests in check mode. Prediction: if that round trip is what the parts wait for, RMSNorm bf16 4096×16384
#    108 → 95-102 µs, LayerNorm 117 → 104-110, the fused add and the fused LayerNorm alike, the fused
#    forwards −2 to −5 %; rows of 131072 (64 parts, the slowest partner) ±2 %. If it wins: land it (the
#    patch as is; ptx_stats counts the settle loops' `CHECK:` as spin waits then — adjust
#    test_gpu_compile's exchange test).
#  - `checks` (~6 min): the whole tests/test_split_rows.py in check mode, then memcheck of the split
#    configurations on the paired wait (backward 300 s, forward 60 s). Prediction: all pass, 0 errors.
#  Outcome (session 27): `ab` LOST — LayerNorm 4096×16384 117 → 146 µs, 8192×32768 439 → 555, RMSNorm 108 →
#    119, the fused add 132 → 140, the fused LayerNorm's forward 4096×65536 552 → 691 (correct: 157 split tests
#    passed); dropped (BENCHMARKS "Session 27"). `sweep`: LayerNorm 4096×65536 1 × 4096 on 4 448.8 against
#    512.8, 2048×131072 454.9 / 500.7; the fused LayerNorm 2048×131072 551.0 / 609.5, 16384×8192 staged
#    1 × 8192 on 8 264.2 / 311.9, its forward 4096×16384 held 138.2 / 143.6, fp32 272.7 / 292.3 — design
#    change 33. RMSNorm's neighbours: none better. `checks`: run as tools/runs/device_zzzzzh.sh checks.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
case ${1:?sweep|ab|checks} in
sweep)
  { tune_sweep bwd layer_norm bf16 4096x65536,2048x131072 60 1x2048:4:split:a3:p4:r128 1x2048:4:split:a4:p4:r128 \
        1x4096:4:split:a3:p2 1x4096:8:split:a3:p2:r128
    TUNE_ARGS="--residual" tune_sweep bwd layer_norm bf16 2048x131072 40 1x4096:4:split:a3:p2 \
        1x4096:8:split:a3:p2:r128 1x2048:4:split:a4:p4:r128
    TUNE_ARGS="--residual" tune_sweep bwd layer_norm bf16 16384x8192 60 1x8192:8:a3 1x8192:16:a3 1x8192:16:a2 \
        1x8192:8:pf 2x4096:8:a3 1x8192:16:pf:p1
    tune_sweep bwd rms bf16 4096x16384,2048x131072 40 1x2048:4:split:a4:p4:r128 1x4096:4:split:a3:p2
    TUNE_ARGS="--residual" tune_sweep fwd layer_norm bf16 4096x16384 30 1x16384:16 1x16384:16:reload 1x16384:32:reload
    TUNE_ARGS="--residual" tune_sweep fwd layer_norm fp32 4096x16384 30 1x16384:16 1x16384:32:reload \
        1x1024:4:split:a3:p8
  } 2>&1 | tee "$L/sweep.log" ;;
ab)
  N=/tmp/ab/early
  patched_copy $N docs/experiments/split-early-wait.patch
  arm() {
    split_bwd_arm "$1"
    heuristic_in "$1" 50 --kind fwd --family fused_add --dtype bf16 --shapes 4096x65536
    heuristic_in "$1" 50 --kind fwd --family layer_norm --residual --dtype bf16 --shapes 4096x65536
  }
  ab_rounds 2 arm "$PWD" $N | tee "$L/ab.log"
  ( cd $N && TESTS_LOG=early_split PYTHONPATH=/tmp/site:$N checked_tests 150 tests/test_split_rows.py \
        -k "backward or per_head or bitwise or staged or forward_heuristic" ) ;;
checks)
  checked_tests 280 tests/test_split_rows.py
  memcheck_split bwd 300
  memcheck_split fwd 60 ;;
esac
pack_logs
