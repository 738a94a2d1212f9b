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
#  Outcome: (to fill)
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
case ${1:?ncusrc|inductor} in
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
esac
pack_logs
