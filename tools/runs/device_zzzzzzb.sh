#!/usr/bin/env bash
# Device run ZZZZZZB (session 37, nvidia-h200; no carry needed):
#  Why: run ZZZZZZA's forward diet (split-forward-even-cols.patch: −11 % of LayerNorm bf16 131072's row-loop
#  instructions) moved nothing, as session 30's diet did not: the forward's split parts are not issue-bound.
#  LayerNorm's and RMSNorm's split forwards move the same DRAM bytes (x read, y written: 1 GiB at bf16
#  2048×131072) but take 318 against 280 µs. Counted per element of x, what a split part moves between the
#  SMs and L2 (not DRAM): x read (DRAM), x read again (RELOAD, from L2), the weight (every row block reads
#  its part's columns of w again: 2048 × 256 KB = 512 MiB), LayerNorm's bias as much, y written: RMSNorm
#  2.0 GiB, LayerNorm 2.5 GiB — 7.1 / 7.9 TB/s through L2 at 280 / 318 µs, against the copy's 4.2. If L2's
#  bandwidth (not DRAM's) bounds the split forward, the weight's and bias's re-reads are the lever (a part's
#  columns are fixed across its row blocks: w and b could be read once a program).
#  - `l2` (~2 min): Nsight Compute's byte counts of the heuristic's forward (LayerNorm bf16 2048×131072, fp32
#    4096×65536, RMSNorm bf16 2048×131072), its saved-statistics backward (RMSNorm bf16 4096×16384, LayerNorm
#    bf16 2048×131072) and a torch copy of 1 GiB: L2↔L1 bytes, L1 hit rate, L2 / DRAM throughput % of peak.
#    Prediction: the forward parts' L2 traffic 2.0 / 2.5 GiB (L1 misses the weight's re-reads: 16 KB a part
#    a row block behind 16-32 KB of x), L2 throughput ≥ 80 % of peak for LayerNorm's; the copy's L2 % the
#    ceiling to compare with.
#  - `wb` (~2 min): the same forwards timed (CUDA graph) with weight and bias, weight only, neither.
#    Prediction, if L2-bound: LayerNorm bf16 318 → ~290 weight only, → ~265 neither; if not, ±2 %.
#  - `ab` (~7 min, 2 rounds, main → each patch): the forward's split shapes (LayerNorm bf16 2048×131072, fp32
#    4096×65536, RMSNorm bf16 2048×131072, fp32 4096×65536, the fused add and the fused LayerNorm bf16
#    2048×131072) in four builds: main; docs/experiments/split-forward-weight-evict-last.patch (w and b
#    loaded L1::evict_last: a part's w and b, 64-128 KB an SM, kept in L1 across row blocks); …-x-cg.patch
#    (that, and x loaded .cg — past L1, without L2 hints — so L1 holds only w and b); split-forward-weight-
#    held.patch (w and b loaded once before the row loop, held in registers: LayerNorm bf16 spills 404 B,
#    RMSNorm bf16 168 registers → 3 an SM; LayerNorm fp32 1 × 4096 128, 0 B; so also LayerNorm bf16 in
#    1 × 4096 parts there). Prediction: if `wb` shows L2 bound, LayerNorm bf16 −5 to −12 %, fp32 −3 to −8 %,
#    RMSNorm −1 to −5 % for whichever patch keeps w / b out of L2 (ncu's L2 bytes to confirm).
#  - `l2ab` (~1 min): `l2`'s LayerNorm bf16 forward in each patched build.
#  Outcome (session 37; `l2 wb` 76 s, `ab` 304 s; `l2ab` not run):
#  - `l2`: lts__t_bytes / DRAM bytes, L2 % of peak — LayerNorm bf16 2.40 / 1.08 GB, 80.9 % (DRAM 70.4 %, L1
#    hits 31 %, L1's reads from L2 1.30 GB for 0.54 of x); fp32 4.79 / 2.20, 87.0 %; RMSNorm bf16 2.02 / 1.07,
#    87.6 %; backward RMSNorm 0.62 / 0.39, 87.4 %, LayerNorm 2.48 / 1.60, 85.6 % (the backward at its minimum:
#    its parts keep w). L2's % is 81-88 % everywhere, so not a bound by itself; the copy's line did not come
#    (`copy_` is a cudaMemcpy).
#  - `wb` (as predicted for an L2 bound): LayerNorm bf16 322.1 / 318.1 w+b → 295.0 / 296.6 w → 278.7 / 279.9
#    neither; RMSNorm 286.6 / 286.2 → 281.1 / 281.3; fp32 LayerNorm 591.5 / 592.8 → 567.9 / 568.1 → 542.3 /
#    541.5, RMSNorm 589.6 / 589.5 → 542.1 / 540.0.
#  - `ab` (main → evict-last → x-cg → held, 2 rounds): LayerNorm bf16 321.6 / 316.4 → 314.8 / 315.5 → 354.3 /
#    354.1 → 524.6 / 524.8 (held spills; 1 × 4096 held 352.5 / 353.2, 8 warps two an SM 550.6 / 552.9);
#    LayerNorm fp32 587.0 / 590.7 → 592.5 / 595.6 → 675.8 / 685.3 → **544.4 / 545.7**; RMSNorm bf16 284.8 /
#    283.5 → 282.4 / 283.3 → 328.4 / 326.5 → 280.1 / 280.1; fp32 563.5 / 567.8 → 562.1 / 562.0 → 661.4 / 661.1 →
#    594.4 / 598.8; the fused add 532.0 / 538.5 → 534.8 / 534.7 → 534.4 / 535.3 → 526.1 / 530.4; the fused
#    LayerNorm 553.8 / 556.5 → 554.7 / 552.9 → 553.6 / 553.8 → 584.1 / 586.8. Landed: held, for LayerNorm's
#    4-byte parts (BENCHMARKS design change 40; run ZZZZZZC).
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,\
lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_write.sum,lts__t_sector_hit_rate.pct,\
l1tex__t_sector_hit_rate.pct,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,\
lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__throughput.avg.pct_of_peak_sustained_elapsed,\
dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active
l2_of() {  # NAME KERNEL CMD...
  local name=$1 kernel=$2
  shift 2
  [ -n "$NCU" ] || { echo "ncu: not installed"; return; }
  timeout 120 "$NCU" --clock-control none --kernel-name "$kernel" --launch-skip 2 --launch-count 1 \
      --metrics "$METRICS" "$@" > "$L/l2_$name.log" 2>&1
  echo "== $name rc=$?"
  grep -E "launch_tile:|gpu__time|dram__|lts__|l1tex__|warps_active" "$L/l2_$name.log" | awk '{print "   ", $1, $(NF-1), $NF}'
}
E0=/tmp/ab/weight-evict-last E1=/tmp/ab/weight-evict-last-x-cg E2=/tmp/ab/weight-held
fwd_arm() {
  heuristic_in "$1" 60 --kind fwd --family layer_norm --dtype bf16 --shapes 2048x131072
  heuristic_in "$1" 60 --kind fwd --family layer_norm --dtype fp32 --shapes 4096x65536
  heuristic_in "$1" 60 --kind fwd --family rms --dtype bf16 --shapes 2048x131072
  heuristic_in "$1" 60 --kind fwd --family rms --dtype fp32 --shapes 4096x65536
  heuristic_in "$1" 60 --kind fwd --family fused_add --dtype bf16 --shapes 2048x131072
  heuristic_in "$1" 60 --kind fwd --family layer_norm --residual --dtype bf16 --shapes 2048x131072
  [ "$1" = $E2 ] && tune_in "$1" --kind fwd --family layer_norm --dtype bf16 --shapes 2048x131072 \
      --config 1x4096:4:split:reload:p4:r128 --config 1x4096:8:split:reload:p2 | grep " each "
}
for call in "${@:?l2|wb|ab ...}"; do
case $call in
l2)
  l2_of ln_fwd_bf16 norm_fwd_kernel python3 tools/launch_tile.py --kind fwd --family layer_norm --shape 2048x131072 --launches 3
  l2_of ln_fwd_fp32 norm_fwd_kernel python3 tools/launch_tile.py --kind fwd --family layer_norm --dtype fp32 --shape 4096x65536 --launches 3
  l2_of rms_fwd_bf16 norm_fwd_kernel python3 tools/launch_tile.py --kind fwd --family rms --shape 2048x131072 --launches 3
  l2_of rms_bwd_bf16 norm_bwd_kernel python3 tools/launch_tile.py --family rms --shape 4096x16384 --launches 3
  l2_of ln_bwd_bf16 norm_bwd_kernel python3 tools/launch_tile.py --family layer_norm --shape 2048x131072 --launches 3
  l2_of copy "regex:.*" python3 -c "
import torch
s = torch.empty(2**29, dtype=torch.bfloat16, device='cuda'); d = torch.empty_like(s)
for _ in range(4): d.copy_(s)
torch.cuda.synchronize()" ;;
wb) python3 - <<'PY' 2>&1 | tee "$L/wb.log"
import torch
from normkit import ops
from normkit.bench.timing import copy_bandwidth, graph_time
dev = torch.device("cuda")
copy = copy_bandwidth(dev)
print(f"copy {copy / 1e9:.0f} GB/s")
side = torch.cuda.Stream()
for dtype, (m, n) in ((torch.bfloat16, (2048, 131072)), (torch.float32, (4096, 65536))):
    x = torch.randn(m, n, device=dev, dtype=dtype)
    w = 1 + 0.1 * torch.randn(n, device=dev, dtype=dtype)
    b = 0.1 * torch.randn(n, device=dev, dtype=dtype)
    y = torch.empty_like(x)
    for rnd in range(2):
        for rms in (False, True):
            for name, ww, bb in (("w+b", w, b), ("w", w, None), ("none", None, None)):
                if rms and bb is not None:
                    continue
                with torch.cuda.stream(side):
                    t = graph_time([lambda: ops.launch_fwd(x, y, weight=ww, bias=bb, eps=1e-6, is_rms_norm=rms)])
                pct = 100 * 2 * x.numel() * x.element_size() / t / copy
                print(f"r{rnd + 1} {str(dtype)[6:]} {m}x{n} {'rms' if rms else 'layer_norm'} {name}: {t * 1e6:.1f} us ({pct:.0f}%)")
PY
  ;;
ab) [ -d $E0 ] || patched_copy $E0 docs/experiments/split-forward-weight-evict-last.patch
  [ -d $E1 ] || patched_copy $E1 docs/experiments/split-forward-weight-evict-last-x-cg.patch
  [ -d $E2 ] || patched_copy $E2 docs/experiments/split-forward-weight-held.patch
  ab_rounds 2 fwd_arm "$PWD" $E0 $E1 $E2 | tee -a "$L/ab.log" ;;
l2ab) for d in $E0 $E1 $E2; do
    (cd $d && PYTHONPATH=/tmp/site:$d l2_of "ln_fwd_bf16_$(basename $d)" norm_fwd_kernel python3 tools/launch_tile.py \
        --kind fwd --family layer_norm --shape 2048x131072 --launches 3)
  done ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
