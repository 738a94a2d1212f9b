# Sourced by the device run scripts (tools/runs/device_*.sh, run from the checkout's root): NVLink multicast off for NCCL, PyTorch
# and NVSHMEM (the device README: it can take a shared host's GPUs out of service), unbuffered
# output, and the carried wheels (.whl: Liger, hypothesis) on PYTHONPATH.
set -o pipefail
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
export PYTHONPATH=/tmp/site:$PWD

# The run's logs: $L (made here), packed into $OUT/logs.tgz by pack_logs at the end (what comes
# back from the device is at most 8 files, so the many logs travel as one archive).
L=$OUT/logs; mkdir -p "$L"
pack_logs() { tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$L"; }

# gpu_tests_on GPU LIMIT: the GPU test files (device_reliability.sh gpu_tests) on one GPU, logs in $L.
gpu_tests_on() {
  ( export CUDA_VISIBLE_DEVICES=$1; OUT=$L TESTS_LIMIT=$2 bash tools/device_reliability.sh gpu_tests )
}

# ab_bench_rounds ROUNDS BASE_DIR NEW_DIR SPEC...: an A/B of two builds of normkit (normkit only),
# alternated ROUNDS times; each SPEC "TAG|FAMILY|DTYPES|SHAPES" is one bench call per build and
# round, into $L/ab_{base,new}_{round}TAG.json (tools/ab_summary.py reads them). Each build runs
# from its own directory: `python3 -m normkit` imports the working directory's copy before anything
# on PYTHONPATH (what voided runs Y, ZA and ZC's A/Bs), so PYTHONPATH carries only the wheels;
# round 1 prints which copy each arm imports.
ab_bench_rounds() {
  local rounds=$1 base=$2 new=$3 round build dir spec tag family dtypes shapes
  shift 3
  for round in $(seq "$rounds"); do
    for build in base new; do
      dir=$base; [ $build = new ] && dir=$new
      (
        cd "$dir" || exit 1
        [ "$round" = 1 ] && PYTHONPATH=/tmp/site python3 -c "import normkit; print('$build imports', normkit.__file__)"
        for spec in "$@"; do
          IFS='|' read -r tag family dtypes shapes <<< "$spec"
          PYTHONPATH=/tmp/site timeout 60 python3 -m normkit bench --family "$family" --impls normkit --dtypes "$dtypes" \
              --shapes "$shapes" --json "$L/ab_${build}_${round}${tag}.json" > "$L/ab_${build}_${round}${tag}.log" 2>&1
          echo "== $build round $round $dtypes${tag:+ ($tag)} (rc=$?)"
        done
      )
    done
  done
}

# ab_bench ROUNDS SHAPES BASE_DIR NEW_DIR: ab_bench_rounds with bf16, every family, at SHAPES, then fp32:
# AB_FP32_FAMILY at AB_FP32_SHAPES, by default LayerNorm 16384×4096.
ab_bench() {
  ab_bench_rounds "$1" "$3" "$4" "|all|bf16|$2" "_fp32|${AB_FP32_FAMILY:-layer_norm}|fp32|${AB_FP32_SHAPES:-16384x4096}"
}

# ab_summarised ROUNDS BASE_DIR NEW_DIR SPEC...: ab_bench_rounds, then tools/ab_summary.py's table (also
# into $L/ab_summary.txt).
ab_summarised() {
  ab_bench_rounds "$@"
  python3 tools/ab_summary.py "$L" | tee "$L/ab_summary.txt"
}

# checked_tests LIMIT PYTEST_ARGS...: pytest with the launcher in check mode and 0.3× the hypothesis
# examples, SIGINT at LIMIT s (the summary still prints which tests failed), log $L/${TESTS_LOG:-tests}.log
# (two calls at once on two GPUs need two names); prints the count, the failures and the
# configurations run.
checked_tests() {
  local limit=$1 log="$L/${TESTS_LOG:-tests}.log"
  shift
  NORMKIT_FAST_LAUNCH=check NORMKIT_HYPOTHESIS_EXAMPLES=0.3 timeout -s INT -k 20 "$limit" python3 -m pytest -q \
      -p no:cacheprovider -rfE -W ignore::DeprecationWarning "$@" > "$log" 2>&1
  echo "tests rc=$? $(tail -1 "$log")"
  grep -E "^(FAILED|ERROR)|configurations" "$log" | head
}

# split_checks DIR MEMCHECK_LIMIT: an experiment's build in DIR, in check mode, on its split rows —
# tests/test_split_rows.py whole, tests/test_ops.py's backward and split cases, then compute-sanitizer
# memcheck of the split backward and forward (tools/sanitize_sweep.py --split only) under MEMCHECK_LIMIT s.
split_checks() {
  ( cd "$1" && export PYTHONPATH=/tmp/site:$1
    TESTS_LOG=split checked_tests 240 tests/test_split_rows.py
    TESTS_LOG=ops checked_tests 120 tests/test_ops.py -k "backward or bwd or wide or split"
    san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout "$2" "$san" --tool memcheck --target-processes all \
        python3 tools/sanitize_sweep.py --kind both --split only --families rms,layer_norm > "$L/memcheck.log" 2>&1
    echo "memcheck exit $?: $(grep -c ': ok (' "$L/memcheck.log") ok, $(grep -c FAIL "$L/memcheck.log") failed;" \
         "$(grep -c '^========= Invalid' "$L/memcheck.log") invalid accesses" )
}

# side_by_side LIMIT: every family, normkit against its peers (BENCHMARKS' current numbers), into
# $OUT/bench.{log,json,png}.
side_by_side() {
  timeout "$1" python3 -m normkit bench --family all --impls normkit,native,compile,liger --markdown \
      --json "$OUT/bench.json" --plot "$OUT/bench.png" > "$OUT/bench.log" 2>&1
  echo "bench rc=$?"
}

# memcheck_split KIND LIMIT: compute-sanitizer memcheck over every split-row configuration of KIND
# (fwd / bwd) the heuristics pick (tools/sanitize_sweep.py --split only), log
# $L/memcheck_KIND_split.log; prints the runs, failures and the error summary.
memcheck_split() {
  local kind=$1 limit=$2 log="$L/memcheck_$1_split.log" san
  san=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout "$limit" "$san" --tool memcheck --target-processes all \
      python3 tools/sanitize_sweep.py --kind "$kind" --split only > "$log" 2>&1
  echo "memcheck $kind split (exit $?): $(grep -c ': ok (' "$log") runs ok, $(grep -c 'FAIL' "$log") failed;" \
       "$(grep -E 'ERROR SUMMARY' "$log" | sort | uniq -c | tr '\n' ' ')$(grep 'sanitize_sweep:' "$log")"
}

# tune_sweep KIND FAMILY DTYPE SHAPES LIMIT CONFIG...: tools/tune.py's time of each CONFIG (--each)
# and of the heuristic, one line each, the tile shortened (ROWSxWIDTH, warps, programs an SM, ...);
# TUNE_ARGS: more of tune.py's arguments (e.g. "--out-dtype fp32 --weight-dtype fp32").
tune_sweep() {
  local kind=$1 family=$2 dtype=$3 shapes=$4 limit=$5
  shift 5
  timeout "$limit" python3 tools/tune.py --kind "$kind" --family "$family" --dtype "$dtype" --shapes "$shapes" \
      ${TUNE_ARGS:-} --each $(printf -- "--config %s " "$@") 2>&1 | grep -E "each|Error|heuristic" | short_tiles \
    | sed "s/^/$family $dtype /"
}
short_tiles() {
  sed -E 's/TileConfig\(block_m=([0-9]+), block_n=([0-9]+), one_tile=/\1x\2 one=/; s/, num_stages=[0-9]+//;
          s/, (split|prefetch|joined_sums|async_stages|reload|column_stages|centered_pass|max_registers|hold_weight)=(False|0)//g;
          s/num_warps=/w/; s/programs_per_sm=/p/; s/max_registers=/r/; s/column_stages=/cs/;
          s/centered_pass=True/two/; s/, / /g; s/\)$//'
}

# forward_split_checks: the split forward's GPU checks of a landing tree, in check mode (run from its root) —
# tests/test_split_rows.py's forward cases, tests/test_ops.py's wide and split cases, memcheck of every split
# forward the heuristics pick.
forward_split_checks() {
  TESTS_LOG=split checked_tests 240 tests/test_split_rows.py -k "forward"
  TESTS_LOG=ops checked_tests 120 tests/test_ops.py -k "wide or split"
  memcheck_split fwd 100
}

# patched_copy DIR [-R] PATCH...: this checkout's normkit, tools, tests and pyproject.toml copied to DIR
# with each PATCH applied in order — reversed where "-R" precedes it (the build before a change the tree
# holds) — an experiment's build, for an A/B or its tests; says so if one fails.
patched_copy() {
  local dir=$1 root=$PWD patch reverse=
  shift
  mkdir -p "$dir" && cp -r normkit tools tests pyproject.toml "$dir"/ || { echo "patched_copy: copy failed"; return 1; }
  for patch in "$@"; do
    [ "$patch" = -R ] && { reverse=-R; continue; }
    (cd "$dir" && patch $reverse -p1 -s < "$root/$patch") || { echo "patched_copy: $reverse $patch failed"; return 1; }
    reverse=
  done
}

# ab_rounds ROUNDS ARM DIR...: ARM DIR (a shell function timing one build) for each DIR in turn, ROUNDS
# times — the builds alternate in one run, so drift hits both — each line prefixed with its round.
ab_rounds() {
  local rounds=$1 arm=$2 round dir
  shift 2
  for round in $(seq "$rounds"); do
    for dir in "$@"; do
      "$arm" "$dir" | sed "s/^/r$round /"
    done
  done
}

# tune_in DIR TUNE_ARGS...: tools/tune.py --each in the build in DIR (importing DIR's normkit; limit
# ${TUNE_LIMIT:-60} s), its per-config ("each"), heuristic and error lines, tiles shortened, each
# prefixed with DIR's name — one arm of an A/B of builds.
tune_in() {
  local dir=$1
  shift
  (cd "$dir" && PYTHONPATH=/tmp/site:$dir timeout "${TUNE_LIMIT:-60}" python3 tools/tune.py --each "$@" 2>&1 \
      | grep -E "each|heuristic|Error" | short_tiles | sed "s|^|$(basename "$dir") |")
}

# heuristic_in DIR LIMIT TUNE_ARGS...: the heuristic's time alone (tools/tune.py --heuristic-only) in the build
# in DIR, limit LIMIT s — one line a shape.
heuristic_in() {
  local dir=$1 limit=$2
  shift 2
  TUNE_LIMIT=$limit tune_in "$dir" --heuristic-only "$@" | sed -E "s/ best .*//"
}

# prefetch_parts_arm DIR: the heuristic's time (tools/tune.py --heuristic-only) of the backward's prefetching
# split parts — the recomputing backward (RMSNorm and LayerNorm bf16 4096×16384, 2048×131072) and fp32 rows
# of 262144 (RMSNorm, the fused add) — in the build in DIR: the arm of an A/B of their wait (ZZZZZV, ZZZZZW).
prefetch_parts_arm() {
  heuristic_in "$1" 60 --kind bwd --recompute --family rms --dtype bf16 --shapes 4096x16384,2048x131072
  heuristic_in "$1" 60 --kind bwd --recompute --family layer_norm --dtype bf16 --shapes 4096x16384,2048x131072
  heuristic_in "$1" 60 --kind bwd --family rms --dtype fp32 --shapes 1024x262144
  heuristic_in "$1" 60 --kind bwd --family fused_add --dtype fp32 --shapes 1024x262144
}

# poll_parts_arm DIR: the heuristic's time (tools/tune.py --heuristic-only) of the forward's split parts that
# wait in a poll loop (stats.await_row_sums without SPIN; all but the fused forwards' 8-byte rows, which
# tune.py's dtypes do not reach), in the build in DIR — RMSNorm
# bf16 2048×131072 / 1024×262144, fp32 4096×65536, bf16 with an fp32 y 4096×65536; LayerNorm bf16
# 2048×131072, fp32 4096×65536 — the arm of an A/B of that wait (runs ZZZZZU, ZZZZZV).
poll_parts_arm() {
  heuristic_in "$1" 60 --kind fwd --family rms --dtype bf16 --shapes 2048x131072,1024x262144
  heuristic_in "$1" 60 --kind fwd --family rms --dtype fp32 --shapes 4096x65536
  heuristic_in "$1" 60 --kind fwd --family rms --dtype bf16 --out-dtype fp32 --shapes 4096x65536
  heuristic_in "$1" 60 --kind fwd --family layer_norm --dtype bf16 --shapes 2048x131072
  heuristic_in "$1" 60 --kind fwd --family layer_norm --dtype fp32 --shapes 4096x65536
}

# split_bwd_arm DIR: the backward's split parts as the heuristic picks them in the build in DIR — bf16
# LayerNorm 4096×16384 / 8192×32768 / 2048×131072, RMSNorm and the fused add 4096×16384 / 2048×131072, the
# fused LayerNorm 4096×16384, LayerNorm fp32 4096×16384 — the arm of an A/B of the split exchange (runs
# ZZZZZG, ZZZZZJ).
split_bwd_arm() {
  heuristic_in "$1" 70 --kind bwd --family layer_norm --dtype bf16 --shapes 4096x16384,8192x32768,2048x131072
  heuristic_in "$1" 60 --kind bwd --family rms --dtype bf16 --shapes 4096x16384,2048x131072
  heuristic_in "$1" 60 --kind bwd --family fused_add --dtype bf16 --shapes 4096x16384,2048x131072
  heuristic_in "$1" 40 --kind bwd --family layer_norm --residual --dtype bf16 --shapes 4096x16384
  heuristic_in "$1" 40 --kind bwd --family layer_norm --dtype fp32 --shapes 4096x16384
}

# layer_norm_fwd_sweep: LayerNorm's bf16 forward tiles where it stays short (runs ZZZZZJ / ZZZZZK
# `fwdsweep`) — three-read 1 × 16384 on 32 warps (torch.compile's tile) and the whole row re-read at
# 8192×32768 / 4096×16384, the capped 16 KB split parts at 4096×65536 / 8192×32768.
layer_norm_fwd_sweep() {
  tune_sweep fwd layer_norm bf16 8192x32768 40 1x16384:32:col:two 1x16384:32:col:two:r32 1x4096:8:col:two \
      1x32768:32:reload
  tune_sweep fwd layer_norm bf16 4096x16384 30 1x16384:32:reload 1x16384:32:col:two 1x8192:16:col:two \
      1x4096:8:col:two
  tune_sweep fwd layer_norm bf16 4096x65536,8192x32768 40 1x8192:4:split:p4:r128:reload 1x4096:4:split:p4:r128:reload
}

# fwd_heuristic_in DIR TUNE_ARGS...: the forward heuristic's time in the build in DIR (tune_in's
# heuristic lines for --kind fwd).
fwd_heuristic_in() {
  tune_in "$@" --kind fwd | grep -vE " each "
}

# ncu_stalls KIND NAME LAUNCH_TILE_ARGS...: Nsight Compute on one launch of the KIND (fwd / bwd) kernel
# that tools/launch_tile.py makes (its third launch): time, DRAM bytes and throughput, occupancy and the
# warp-stall reasons of ≥ 0.05 warps an issue, largest first; the whole report in $L/ncu_NAME.log.
ncu_stalls() {
  local kind=$1 name=$2
  shift 2
  ncu_stalls_of "$name" "norm_${kind}_kernel" python3 tools/launch_tile.py --kind "$kind" --launches 3 "$@"
}

# ncu_stalls_of NAME KERNEL CMD...: ncu_stalls' report for the third launch of KERNEL (a name, or
# regex:…) that CMD makes — a peer's kernel (torch.compile's: regex:triton_), not only launch_tile's.
ncu_stalls_of() {
  local name=$1 kernel=$2 ncu log="$L/ncu_$1.log"
  shift 2
  ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  [ -n "$ncu" ] || { echo "ncu: not installed"; return; }
  timeout 120 "$ncu" --clock-control none --kernel-name "$kernel" --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats \
      --metrics "dram__bytes_read.sum,dram__bytes_write.sum,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
      "$@" > "$log" 2>&1
  echo "== ncu $name rc=$?"
  grep -E "launch_tile:|inductor_code:|Duration|DRAM Throughput|dram__bytes|Achieved Occupancy|Registers Per|Warp Cycles Per Issued" "$log" \
      | sed 's/  */ /g'
  grep -E "issue_stalled" "$log" | awk '$NF+0 >= 0.05 {print $1, $NF}' \
      | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | sort -k2 -gr | head -10 | tr '\n' ' '
  echo
}
