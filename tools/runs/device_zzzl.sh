#!/usr/bin/env bash
# Device run ZZZL (prepared in session 16 for the next session, nvidia-h200-x2, ~8 min; no setup:
# carry [".whl"]): docs/experiments/backward-split-reload.patch — the backward's split parts read the
# previous row block again after the exchange (RELOAD) instead of holding it across it: one row block
# fewer live in registers (the patch's header has the counts: bf16 2 × 2048 on 8 warps RMSNorm 153 →
# 127 registers, two an SM without a cap; fp32 1 × 2048 on 4 warps 225-245 → 162-167, three an SM);
# and with it a part may finish the block two back (":l2", exchange_lag 2: two blocks' work to hide
# each exchange round trip behind, no registers added).
#  - GPU 1: the patched copy's split tests against float64, launcher in check mode (four reload
#    configurations added, two with a lag of 2), and its refusal tests. A deadlock (were the lag's
#    ring argument wrong) would show here and in the sweeps as a timeout, not as a wrong number.
#    Then torch.compile's LayerNorm forward kernel at 8192×32768 into the logs (tools/inductor_code.py).
#  - GPU 0: sweeps in the patched copy (tools/tune.py --config …:reload against the heuristic, which
#    the patch leaves unchanged): bf16 RMSNorm 4096×16384 (126 µs against issue #3's 105), every family
#    at 8192×32768 / 4096×65536 (the fused add 2048×131072: 71 %), fp32 every family at 4096×16384 /
#    4096×65536.
# Count: RMSNorm bf16 8192×32768 moves 3 × 512 MiB = 1.61 GB → 382 µs at 4214 GB/s (507 = 75 %).
# Prediction: where the lower registers fit more programs an SM, −5 to −10 % (bf16 2 × 2048 on 8 warps
# two an SM; fp32 three an SM); elsewhere within ±3 % (the extra L2 reads against the freed
# registers); a lag of 2 a further −5 to −15 % where the exchange is what the parts wait on (RMSNorm
# 4096×16384 126 → ≤ 110). Landing needs an A/B of the heuristic moved to the winners, memcheck over
# them, and the bitwise determinism tests.
# Outcome (session 17, µs; heuristic then → best reloading part): the lag of 2 lost everywhere (+5 to
# +15 %; the fused add 2048×131072 on 2 × 2048: 1285). Reload without the lag won a little: RMSNorm bf16
# 8192×32768 509.9 → 492.5, 4096×65536 525.1 → 515.6 (1 × 4096 on 4, two an SM); the fused add bf16
# 2048×131072 724.3 → 705.1 (1 × 8192 on 8); fp32 1 × 2048 on 4 three an SM: RMSNorm 237.8 → 235.9,
# 940.1 → 918.9, the fused add 309.1 → 301.4, 1229.1 → 1223.1, LayerNorm 242.2 → 241.3, 943.0 → 945.3.
# Lost: RMSNorm bf16 4096×16384 (128.2 against 133.8-146.4), LayerNorm bf16 (591-737 against 528.5 /
# 603.0). GPU 1: test_split_rows with the reload and lag configurations 118 passed, 1 skipped, 0
# failed (no deadlock); torch.compile's LayerNorm forward kernel source in the logs (1 kernel; not
# read yet). Next: A/B of the winners (run ZZZM).
source tools/device_env.sh
P=/tmp/ab/reload
mkdir -p $P && cp -r normkit tools tests pyproject.toml $P/ && \
  (cd $P && patch -p1 -s < "$OLDPWD/docs/experiments/backward-split-reload.patch") || echo "patch failed"
(
  export CUDA_VISIBLE_DEVICES=0
  cd $P && export PYTHONPATH=/tmp/site:$PWD
  sweep() { tune_sweep bwd "$1" "$2" "$3" 120 "${@:4}"; }  # family dtype shapes configs...
  sweep rms bf16 4096x16384 2x2048:4:split:pf:p2:reload 2x2048:4:split:pf:p2:reload:l2 \
      2x2048:8:split:pf:p2:reload 2x2048:8:split:pf:p2:reload:l2
  sweep rms bf16 8192x32768,4096x65536 1x4096:4:split:pf:p2:reload 1x4096:4:split:pf:p2:reload:l2 \
      2x2048:8:split:pf:p2:reload 2x2048:8:split:pf:p2:reload:l2 1x2048:4:split:pf:p3:reload:l2
  sweep layer_norm bf16 8192x32768,4096x65536 2x2048:4:split:pf:p2:reload 2x2048:4:split:pf:p2:reload:l2 \
      2x2048:8:split:pf:p2:r128:reload:l2 1x2048:4:split:pf:p3:reload:l2
  sweep fused_add bf16 8192x32768,2048x131072 1x4096:4:split:pf:p2:reload:l2 \
      2x2048:8:split:pf:p2:reload:l2 1x8192:8:split:pf:reload 1x8192:8:split:pf:reload:l2
  for family in rms fused_add layer_norm; do
    sweep $family fp32 4096x16384,4096x65536 1x2048:4:split:pf:p3:reload 1x2048:4:split:pf:p3:reload:l2 \
        1x2048:4:split:pf:p2:reload:l2
  done
) > "$L/gpu0.log" 2>&1 &
(
  export CUDA_VISIBLE_DEVICES=1
  cd $P && export PYTHONPATH=/tmp/site:$PWD
  TESTS_LOG=split_reload checked_tests 240 tests/test_split_rows.py
  # torch.compile's LayerNorm forward at 8192×32768 (278 µs against 313): its kernel source into the
  # logs, for the SASS diff on the CPU next (compiled for sm_90 as tools/compile_check.py does)
  timeout 120 python3 tools/inductor_code.py --family layer_norm --shapes 8192x32768 > "$L/inductor_ln.log" 2>&1
  echo "inductor_code rc=$?: $(grep -c 'def triton_' "$L/inductor_ln.log") kernels in $L/inductor_ln.log"
) > "$L/gpu1.log" 2>&1 &
wait
cat "$L/gpu0.log" "$L/gpu1.log"
pack_logs
