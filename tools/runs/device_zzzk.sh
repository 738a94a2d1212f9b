#!/usr/bin/env bash
# Device run ZZZK (session 16, nvidia-h200, ~3 min): the split forward without the backward's
# gradient sums in its exchange (kernels/stats.py GRAD_SUMS: the forward had sent Σ(g·h) and Σg as
# zeros, 2 of RMSNorm's 3 words a row and part, and polled them). Setup here: `.ab_base` = the working
# tree with HEAD's kernels/{stats,forward,backward}.py; carry [".whl", ".ab_base"].
#  - GPU tests first, launcher in check mode: tests/test_split_rows.py (the split forward and backward
#    against float64, three families × bf16 / fp32 / fp64, ragged parts); then an A/B, 2 rounds: the fused add bf16 4096×65536 / 2048×131072 and fp32 4096×65536, RMSNorm fp32
#    4096×65536 / 2048×131072 (every split forward the heuristics pick).
# Count (PTX, sm_90, on the CPU): the forward's exchange 12 → 4 volatile loads in the poll loop, 3 → 1
# atomic exchanges a row block; 601 → 535 instructions (fused add bf16), 443 → 377 (RMSNorm fp32);
# registers 48 → 57 / 56 → 64 (still 4 programs an SM). The backward's PTX is instruction-identical.
# Prediction: the split forwards −1 to −3 % (the exchange is a small share of an 8 KB part's loads);
# backwards ±1 %.
# Outcome (2 rounds, medians, µs; nvidia-h200): tests 69 passed, 1 skipped. Forwards: the fused add
# bf16 4096×65536 618.6 → 618.7, 2048×131072 610.8 → 617.7, fp32 4096×65536 1263.3 → 1251.6; RMSNorm
# fp32 4096×65536 667.3 → 663.1, 2048×131072 734.9 → 810.3 (+10 %: its 1 × 4096 parts on 8 warps);
# backwards ±0.5 %. Refuted: reverted (the fewer loads and exchanges bought nothing; the registers
# ptxas added cost RMSNorm's 131072). The patch is not kept; this header describes it.
source tools/device_env.sh
checked_tests 70 tests/test_split_rows.py
ab_summarised 2 "$PWD/.ab_base" "$PWD" "_a|fused_add|bf16|4096x65536,2048x131072" \
    "_af|fused_add|fp32|4096x65536" "_r|rms|fp32|4096x65536,2048x131072"
pack_logs
