#!/usr/bin/env bash
# Device run ZZZZZZP (session 41, nvidia-h200, no carry needed):
#  Why: run ZZZZZZM landed the fused forwards' whole rows held beside a 4-byte residual (bf16 x with the residual
#  stream kept in fp32); the benchmark CLI keeps every tensor in x's dtype, so torch.compile was not beside them.
#  - `peer` (~2 min): tools/out_dtype_peer.py --residual-dtype fp32 (now taking a residual and LayerNorm), RMSNorm's
#    fused add and the fused LayerNorm, bf16 x and y, at 16384×4096, 16384×8192, 4096×16384, 8192×32768 against
#    torch.compile of the same composite. Prediction: normkit 95-98 % of copy at each (ZZZZZZM: 91-97 %), compile
#    within 5 % at ≤ 16384 and behind at 32768 (its LayerNorm 89 % with a bf16 residual, session 30's grid).
#  - `checks` (~3 min): the GPU's every-heuristic-config test (tests/test_properties.py, forward; its enumeration now
#    has 2-byte x beside a 4-byte residual, whose four held tiles it missed) and tests/test_ops.py's tile cases, in
#    check mode.
#  Outcome: not run in session 41 (every machine start after run ZZZZZZO was refused).
source tools/device_env.sh
export CUDA_VISIBLE_DEVICES=0
for call in "${@:?peer|checks ...}"; do
case $call in
peer) for fam in rms layer_norm; do
    timeout 150 python3 tools/out_dtype_peer.py --family $fam --dtype bf16 --out-dtype bf16 --residual-dtype fp32 \
        --shapes 16384x4096,16384x8192,4096x16384,8192x32768 2>&1 | tee -a "$L/peer.log"
  done ;;
checks) TESTS_LOG=props checked_tests 240 tests/test_properties.py -k "every_gpu_heuristic and fwd"
  TESTS_LOG=ops checked_tests 60 tests/test_ops.py -k "residual or tiles or wide" ;;
*) echo "unknown call $call"; exit 2 ;;
esac
done
pack_logs
