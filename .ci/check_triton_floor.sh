#!/usr/bin/env bash
# The oldest Tritons normkit supports (normkit/_runtime.py MIN_TRITON; README "Needs"), in a fresh virtual
# environment beside CI's Triton 3.6: with Triton 3.3 every kernel family and the heuristics' picks for an H200 and
# an A100 compile (tools/compile_check.py: what a GPU user of PyTorch 2.7 compiles); with Triton 3.4 the CPU
# interpreter passes `python -m normkit`. Triton 3.2 must fall back to the plain-PyTorch path with a warning.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python -m venv "$work/venv"
py="$work/venv/bin/python"
export PYTHONPATH=$PWD  # this checkout's normkit
for triton in 3.2.0 3.3.1 3.4.0; do
  "$py" -m pip install -q "torch==2.13.0" "triton==$triton" "numpy<2.4"
  case $triton in
    3.2.0)
      TRITON_INTERPRET=1 "$py" -W error::RuntimeWarning - <<'PY' 2>"$work/warn.txt" && { echo "Triton 3.2: no warning"; exit 1; }
import torch, normkit
normkit.rms_norm(torch.randn(2, 8), torch.ones(8))
PY
      grep -q "need Triton >= 3.4, found 3.2.0" "$work/warn.txt" || { cat "$work/warn.txt"; exit 1; }
      echo "Triton 3.2.0: plain-PyTorch path with a warning" ;;
    3.3.1) "$py" tools/compile_check.py >/dev/null && "$py" tools/compile_check.py --targets sm90,sm80 | tail -3 ;;
    3.4.0) TRITON_INTERPRET=1 "$py" -m normkit | tail -1 ;;
  esac
done
