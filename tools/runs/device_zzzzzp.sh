#!/usr/bin/env bash
# Device run ZZZZZP (prepared in session 30 for the next session, nvidia-h200; carry [".whl"]):
#  Why: run ZZZZZO's Nsight Compute said the backward's staged split parts are a dependent chain — with
#  the bf16 pairs 7 % fewer instructions, each waiting longer (barrier 0.86 → 1.05, short_scoreboard
#  0.65 → 0.75 warps an issue in LayerNorm's 1 × 2048 part) and no faster. Which instructions the stalls
#  pile on decides the next change; so far only totals were read. And LayerNorm's bf16 forward at
#  8192×32768 trails torch.compile (305 against 284 µs, grid ZZZZZN) with every normkit tile swept: read
#  the kernel Inductor generates and profile both.
#  - `ncusrc` (~2 min): Nsight Compute's source counters (warp-state samples per SASS instruction, with
#    Triton's line info: the Python line) on one launch of the heuristic's backward — LayerNorm bf16
#    4096×16384 (1 × 2048 staged parts, four an SM) and RMSNorm bf16 2048×131072 (1 × 4096, two an SM) —
#    printed as CSV of the source page (SASS), the report kept (logs/*.ncu-rep). Prediction: the samples
#    pile on the BAR.SYNC of the row sums' cross-warp reduction and on the LDS / LDGSTS waits of the staged
#    tile (short_scoreboard), not on the element-wise math; the exchange's spin (the partner parts' sums)
#    under 10 % of samples (session 28's lag-2 A/B: the partners are not late).
#  - `inductor` (~2 min): tools/inductor_code.py — torch.compile's LayerNorm composite at bf16 8192×32768,
#    its generated Triton kernel and kept config printed (read before: runs ZZX, ZZZL — 1 × 32768 on 32
#    warps; what is new is the profile), then Nsight Compute on it (--launches, a warm cache) and on
#    normkit's forward at the same shape (ncu_stalls_of / ncu_stalls). Prediction: Inductor's kernel a
#    persistent-reduction or looped two-pass kernel of one row a program on 16-32 warps reading x twice
#    (the second read from L2), DRAM bytes ≈ normkit's (the minimum, 1.07 GB), higher achieved occupancy
#    or fewer stall cycles an issue — which of the two is what normkit's three-read tile lacks.
#  - `finisher` (~1 min, added in session 31): tools/time_finisher.py --no-sweep — RMSNorm bf16's
#    heuristic backward with dweight and without any parameter gradient, graph-timed, at the near gaps
#    (4096×16384: 107.0 µs, 105 for 90 %; 2048×131072) and two controls. Prediction: 2-3 µs between the
#    two at 4096×16384 (the partial rows' stores and the finisher's L2 round trip behind its PDL wait),
#    the same µs at the wider shapes (a smaller share).
#  Outcome (session 31, one call `finisher ncusrc inductor`, 120 s):
#  - `finisher` (µs, with dweight / without any parameter gradient; the finisher alone): 4096×16384 108.8 /
#    103.9, 2.26 (G = 66, 128 × 16 on 2 warps); 8192×32768 409.3 / 402.7, 2.65 (G = 33); 2048×131072 434.9 /
#    422.2, 6.03 (G = 8: 8 × 16 on one warp, 8192 programs); 16384×4096 99.7 / 96.3, 1.88 (G = 132). The
#    prediction held at 16384 (4.9 µs between the two, 2.3 of them the finisher) and failed past it: the
#    finisher alone is 6 µs at G = 8 — its 16-column strips tiny where the split parts leave few groups.
#    → run ZZZZZQ (tools/runs/device_zzzzzq.sh), design change 37.
#  - `ncusrc` (logs/*_sass.csv, warp-state samples per SASS instruction): the largest pile, as predicted not
#    on the math — the ISETP right after the exchange's first LDG.E.64.STRONG.GPU (long_scoreboard: the L2
#    round trip of the partner's word) holds 20.1 % of LayerNorm 4096×16384's samples and 28.6 % of RMSNorm
#    2048×131072's. RMSNorm's first read finds the word there 98.6 % of the time (3759 of 262144 miss; 5974 spins),
#    LayerNorm's 61 % (50797 of 131072 miss; 172014 spins). Next: 15.0 % (RMSNorm) / 9.0 % (LayerNorm) on the
#    instruction after one BAR.SYNC — the one the pipeliner puts before staging the saved rstd (and mean)
#    through shared memory (PTX: backward.py's rstd tl.load as cp.async.ca of 4 bytes behind a bar.sync of its
#    own). → run ZZZZZQ `statab`, design change 38. The reduction's FADD chain ~1 % an instruction
#    (short_scoreboard). The prediction's "spin under 10 %" held for RMSNorm; LayerNorm's partners are late
#    four times in ten at 16384.
#  - `inductor`: Inductor's kernel is the one already read (1 × 16384 on 32 warps, three passes, evict_last
#    on passes 1-2); timed 282.5 µs against normkit's 305.3 (copy 4210 GB/s). Under Nsight Compute (one
#    launch, --clock-control none) it ran 357.4 µs, DRAM 537.0 MB read (the minimum) at 61 % of peak, 44.8 %
#    achieved occupancy, 17.4 cycles an issue (long_scoreboard 4.87); normkit's three-read tile 305.4 µs,
#    553.4 MB read (3 % over: its second / third passes miss L2 on 3 % of the bytes), 72 % of peak, 68 %
#    occupancy, 17.3 cycles an issue (long_scoreboard 7.70). So the profile does not show what makes
#    Inductor faster in the graph-timed loop: it is slower than normkit profiled alone. Not followed further.
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
# source_counters NAME LAUNCH_TILE_ARGS...: the backward's third launch with source counters, its SASS page as CSV
source_counters() {
  local name=$1
  shift
  [ -n "$NCU" ] || { echo "ncu: not installed"; return; }
  timeout 150 "$NCU" --clock-control none --kernel-name norm_bwd_kernel --launch-skip 2 --launch-count 1 \
      --section SourceCounters --section WarpStateStats --import-source yes -f -o "$L/$name" \
      python3 tools/launch_tile.py --launches 3 "$@" > "$L/$name.log" 2>&1
  echo "== source counters $name rc=$? ($("$NCU" --version | tail -1))"
  "$NCU" --import "$L/$name.ncu-rep" --page source --print-source sass --csv > "$L/${name}_sass.csv" 2> "$L/${name}_sass.err" \
    || "$NCU" --import "$L/$name.ncu-rep" --page source --csv > "$L/${name}_sass.csv" 2>> "$L/${name}_sass.err"
  echo "sass csv: $(wc -l < "$L/${name}_sass.csv") lines; header: $(head -1 "$L/${name}_sass.csv" | cut -c1-400)"
  head -3 "$L/${name}_sass.err"
}
for call in "${@:?ncusrc|inductor|finisher ...}"; do
case $call in
ncusrc)
  source_counters ln_bwd_16384 --family layer_norm --dtype bf16 --shape 4096x16384
  source_counters rms_bwd_131072 --family rms --dtype bf16 --shape 2048x131072 ;;
inductor)
  export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor_cache  # warm for the profiled process: no autotuning launches there
  timeout 150 python3 tools/inductor_code.py --family layer_norm --shapes 8192x32768 > "$L/inductor_ln.log" 2>&1
  echo "inductor_code rc=$?: $(grep -c 'def triton_' "$L/inductor_ln.log") kernels"; grep -E " us |kept" "$L/inductor_ln.log"
  ncu_stalls_of inductor_ln_32768 regex:triton_ \
      python3 tools/inductor_code.py --family layer_norm --shapes 8192x32768 --launches 3
  ncu_stalls fwd normkit_ln_32768 --family layer_norm --dtype bf16 --shape 8192x32768 ;;
finisher)  # the backward with and without its parameter gradients (partials + finisher), RMSNorm bf16
  timeout 150 python3 tools/time_finisher.py --no-sweep --shapes 4096x16384,8192x32768,2048x131072,16384x4096 \
      --json "$L/finisher.json" 2>&1 | tee "$L/finisher.log" ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
