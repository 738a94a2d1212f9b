#!/usr/bin/env bash
# The wheel a user installs: `python -m build` makes it, `pip install dist/*.whl` installs it into a
# fresh virtual environment (torch and triton from the system site, normkit only from the wheel),
# and the installed package imports, reports the version pyproject declares, ships py.typed and
# LICENSE, runs a norm on CPU and answers `python -m normkit --help`.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python -m pip install -q "build>=1.2"
python -m build --wheel --outdir "$work/dist" . >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
python -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install -q --no-deps "$work"/dist/normkit-*.whl
cd "$work"  # away from the checkout, so only the installed wheel can be imported
"$work/venv/bin/python" - "$work/venv" <<'PY'
import importlib.metadata, pathlib, sys
import torch
import normkit
venv = pathlib.Path(sys.argv[1]).resolve()
where = pathlib.Path(normkit.__file__).resolve()
assert venv in where.parents, f"normkit imported from {where}, not from the installed wheel in {venv}"
assert importlib.metadata.version("normkit") == normkit.__version__, (importlib.metadata.version("normkit"), normkit.__version__)
assert (where.parent / "py.typed").is_file(), "py.typed is missing from the wheel"
files = [str(f) for f in importlib.metadata.files("normkit")]
assert any(f.endswith("LICENSE") for f in files), "LICENSE is missing from the wheel's metadata"
x, w = torch.randn(3, 64, dtype=torch.float64), torch.rand(64, dtype=torch.float64)
ref = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
assert torch.allclose(normkit.rms_norm(x, w, eps=1e-6), ref), "rms_norm from the wheel disagrees with float64"
print(f"wheel ok: normkit {normkit.__version__} from {where.parent}")
PY
"$work/venv/bin/python" -m normkit --help >"$work/help.txt"
grep -q "bench" "$work/help.txt" || { echo "python -m normkit --help does not list its subcommands"; cat "$work/help.txt"; exit 1; }
