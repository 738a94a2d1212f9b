#!/usr/bin/env bash
# Device run ZZZZZZF (prepared in session 37 for the next session, nvidia-h200; no carry needed):
#  Why: the saved-statistics backward's split parts move their minimum through L2 (run ZZZZZZB: RMSNorm bf16
#  4096×16384 0.62 GB, its kernel 101.4 µs under Nsight Compute = 94 % of copy) yet the backward takes ~107 µs
#  (89 %): the rest is the dweight finisher (2.0-2.4 µs since design change 37) and its launch behind the
#  backward's last program (PDL overlaps part of it). docs/experiments/split-backward-finish.patch: the split
#  parts finish dweight / dbias themselves (FINISH) — each stores its partial row, arrives at a counter of its
#  part (bar.sync, one release add at GPU scope, as cooperative groups' grid sync; the counters after the
#  exchange's slots in its zeroed buffer), every thread spins (ld.acquire.gpu in PTX) until the part's G groups
#  have arrived, then group g sums the G partial rows of the part's 64-column strips g, g + G, … in a fixed
#  order (16 rows a step, then a tree; bitwise reproducible, no float atomics) and stores the gradient; no
#  finisher launch, no PDL. All programs are resident (the split rows' rule), so the wait cannot hang.
#  Counted on the CPU (tools/ptx_stats.py, sm_90, the heuristic's parts; SASS loops by nvdisasm): registers
#  RMSNorm bf16 16384 128 and 131072 248 as before, LayerNorm 128 → 126 and 255 → 248; the row loop RMSNorm
#  400 → 412 / 624 → 640 instructions a thread, LayerNorm 525 → 528 / 787 → 794 (ptxas' scheduling: no new code
#  in it); 6-11 bar.sync more, in the tail. The patched tree passes tests/test_gpu_compile.py, test_ops.py and
#  test_tools.py on the CPU (163 passed; every split path is GPU-only).
#  - `ab` (~5 min, 2 rounds, main → patch): split_bwd_arm (LayerNorm bf16 4096×16384 / 8192×32768 /
#    2048×131072, RMSNorm and the fused add 4096×16384 / 2048×131072, the fused LayerNorm 4096×16384,
#    LayerNorm fp32 4096×16384). Prediction: −1 to −2 % (the finisher's 2 µs less the tail's wait and sums,
#    ~0.5 µs): RMSNorm bf16 4096×16384 107 → 105-106 µs (≥ 90 % of copy), 2048×131072 426 → 423-425.
#  - `checks` (~6 min): split_checks on the patched build — test_split_rows whole (dweight / dbias against
#    float64, bitwise determinism, per-head weights), test_ops' backward and split cases, memcheck of the
#    split rows. Prediction: all pass.
#  Land it if it wins ≥ 1 % with checks passing (then BENCHMARKS, a design change, the README's finisher
#  paragraph, RELIABILITY: the arrival counter's ordering).
#  Outcome (session 38, `ab` only: the loss made `checks` moot): **not landed** — slower or level everywhere, 2 rounds,
#  µs, main → patch: RMSNorm bf16 4096×16384 107.1 / 107.7 → 108.0 / 107.8 (level, not the −1 to −2 % predicted),
#  2048×131072 423.6 / 424.2 → 431.9 / 429.3 (+1.5 %), LayerNorm bf16 4096×16384 113.2 / 115.1 → 115.8 / 116.5,
#  8192×32768 428.1 / 424.4 → 427.5 / 430.6, 2048×131072 435.9 / 432.7 → 443.2 / 446.7 (+2.5 %), the fused add
#  4096×16384 133.8 / 132.4 → 134.3 / 133.2, 2048×131072 506.5 / 507.7 → 513.0 / 512.9, the fused LayerNorm
#  136.5 / 136.5 → 140.1 / 137.7, LayerNorm fp32 4096×16384 201.8 / 204.2 → 212.9 / 213.1 (+5 %). The finisher's
#  launch, overlapped by PDL, cost less than every part's wait for its slowest group and the strips' sums
#  done by the last-arriving programs at the tail.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
P=/tmp/ab/split-finish
for call in "${@:?ab|checks ...}"; do
case $call in
ab|checks) [ -d $P ] || patched_copy $P docs/experiments/split-backward-finish.patch ;;&
ab) ab_rounds 2 split_bwd_arm "$PWD" $P | tee -a "$L/ab.log" ;;
checks) split_checks $P 150 ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
