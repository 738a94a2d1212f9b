"""`python -m normkit verify` (the default command): the verification report.

Every case runs normkit's kernels and compares them with `normkit.reference` run on float64
copies of the inputs (relative Frobenius error, see `normkit.bench.inputs`):

  y, rstd          rms_norm_fwd(x, weight, store_rstd=True)
  dx, dweight      rms_norm_bwd(x, weight, dy, rstd)        with the saved rstd
  dx*, dweight*    rms_norm_bwd(x, weight, dy, None)        rstd recomputed in the kernel
  autograd         rms_norm(x, weight) + torch.autograd.grad: the worst of its y, dx, dweight

and the same through layer_norm_fwd/bwd for the "layer norm" cases (with a bias, whose dbias
counts in the verdict) and with a residual (the fused pre-norm path) for the "residual" cases.

An output passes when it is finite and its error is within the tolerance of its own dtype:

  bf16 1e-2   rounding the output alone costs ~1.7e-3 (3.3e-3 in Triton's CPU interpreter,
              which truncates float32 → bf16); the rest is headroom
  fp16 2e-3   rounding alone ~2.1e-4
  fp32 1e-5   observed ≤ 2e-7; dweight sums up to 16384 rows, still far below
  fp64 1e-12  observed ~1e-16

rstd is float32 (float64 for fp64 inputs), so it is held to that dtype's tolerance.

On a GPU the grid is larger (up to 16384×4096 and N = 262144) and a first timing table follows
(`normkit.bench`). On a CPU the kernels run in Triton's interpreter on small shapes, and nothing
is timed. Exit status 0 iff every case passes.
"""

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import torch

from . import lowlevel
from .bench import output
from .bench.inputs import float64_errors, make_inputs

EPS = 1e-6
TOLERANCE = {torch.bfloat16: 1e-2, torch.float16: 2e-3, torch.float32: 1e-5, torch.float64: 1e-12}
DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64)
COLUMNS = ("y", "rstd", "dx", "dweight", "dx*", "dweight*", "autograd")


@dataclass(frozen=True)
class Case:
    shape: Tuple[int, ...]
    # "contiguous", "strided" (column stride 2), "no weight", "layer norm" (LayerNorm with weight
    # and bias) or "residual" (RMSNorm of x + residual, the fused pre-norm path)
    layout: str = "contiguous"

    @property
    def label(self) -> str:
        text = "×".join(map(str, self.shape))
        return text if self.layout == "contiguous" else f"{text} {self.layout}"


_SMALL = [Case((1, 1)), Case((3, 7)), Case((64, 256)), Case((2, 3, 40)),
          Case((12, 96), "strided"), Case((64, 256), "no weight"), Case((33, 300), "layer norm"),
          Case((2, 16, 200), "residual")]
_CPU_MORE = [Case((4, 5000)), Case((2, 70000))]  # 70000 > the interpreter's 65536-wide tile
# GPU: every tile rule of the launch heuristics (docs/design.md#heuristics) — stacked rows (128,
# 768), whole rows (2048 … 12000), the backward's column tiles past 16384 (20000, 40000), the
# forward's past 32768 (40000, 70000, 262144); QK-norm rows; large M.
_GPU_MORE = [Case((4, 5000)), Case((2, 70000)), Case((4096, 2048)), Case((1000, 12000)),
             Case((300, 20000)), Case((100, 40000)), Case((65537, 128)), Case((4, 33, 768)),
             Case((512, 3000), "strided"), Case((16384, 4096)), Case((64, 262144)),
             Case((4096, 4096), "layer norm"), Case((4096, 4096), "residual"), Case((64, 70000), "layer norm")]
BENCH_GRID = [(torch.bfloat16, 4096, 2048), (torch.bfloat16, 16384, 4096),
              (torch.float32, 16384, 4096)]


def grid(on_gpu: bool, quick: bool) -> List[Tuple[Case, torch.dtype]]:
    cases = list(_SMALL)
    if on_gpu:
        cases += _GPU_MORE[:3] if quick else _GPU_MORE
    elif not quick:
        cases += _CPU_MORE
    return [(case, dtype) for case in cases for dtype in DTYPES]


def _family_inputs(case: Case, x: torch.Tensor, weight, seed: int):
    """(bias, residual) for the "layer norm" (weight and bias) and "residual" (pre-norm) cases."""
    gen = torch.Generator(device=x.device).manual_seed(seed + 7919)
    randn = lambda *size: torch.randn(*size, generator=gen, device=x.device)  # noqa: E731
    bias = (0.1 * randn(x.shape[-1])).to(x.dtype) if case.layout == "layer norm" else None
    residual = randn(*x.shape).to(x.dtype) if case.layout == "residual" else None
    return bias, residual


def check(case: Case, dtype: torch.dtype, device: torch.device, seed: int) -> Dict[str, float]:
    """Errors of every output of one case (NaN for an output that is not finite).

    The low-level forward, the backward with saved and with recomputed statistics, and autograd.
    With a residual the backward's input is residual_out = x + residual, and dx is the gradient
    of x and of the residual alike.
    """
    import normkit

    layout = "strided" if case.layout == "strided" else "contiguous"
    x, weight, dy = make_inputs(case.shape, dtype, device, seed, layout=layout,
                                with_weight=case.layout != "no weight")
    bias, residual = _family_inputs(case, x, weight, seed)
    rms = case.layout != "layer norm"
    has = dict(has_bias=bias is not None, has_residual=residual is not None)
    if rms:
        y, h, rstd = normkit.rms_norm_fwd(x, weight, bias, residual, eps=EPS, store_rstd=True)
        dx, dweight, dbias, _ = normkit.rms_norm_bwd(h, weight, dy, rstd, eps=EPS, **has)
        dx_r, dweight_r, _, _ = normkit.rms_norm_bwd(h, weight, dy, None, eps=EPS, **has)
    else:
        y, h, mean, rstd = normkit.layer_norm_fwd(x, weight, bias, residual, eps=EPS, store_rstd=True)
        dx, dweight, dbias, _ = normkit.layer_norm_bwd(h, weight, dy, mean, rstd, eps=EPS, **has)
        dx_r, dweight_r, _, _ = normkit.layer_norm_bwd(h, weight, dy, None, None, eps=EPS, **has)
    leaves = [x.detach().requires_grad_()] + ([weight.detach().requires_grad_()] if weight is not None else [])
    norm = normkit.rms_norm if rms else normkit.layer_norm
    y_a = norm(leaves[0], leaves[1] if weight is not None else None, bias, residual, eps=EPS)
    grads = torch.autograd.grad(y_a, leaves, dy)
    outputs = {"y": ("y", y), "rstd": ("rstd", rstd), "dx": ("dx", dx), "dx*": ("dx", dx_r),
               "autograd y": ("y", y_a.detach()), "autograd dx": ("dx", grads[0])}
    if weight is not None:
        outputs.update({"dweight": ("dweight", dweight), "dweight*": ("dweight", dweight_r),
                        "autograd dweight": ("dweight", grads[1])})
    if bias is not None:
        outputs["dbias"] = ("dbias", dbias)
    errors = float64_errors(x, weight, dy, EPS, outputs, bias=bias, residual=residual, is_rms_norm=rms)
    tolerances = {label: TOLERANCE[t.dtype] for label, (_, t) in outputs.items()}
    return {label: (errors[label], tolerances[label]) for label in outputs}


def verdict(results: Dict[str, Tuple[float, float]]) -> bool:
    return bool(results) and all(err <= tol for err, tol in results.values())  # NaN fails


def _cell(results: Dict[str, Tuple[float, float]], column: str) -> str:
    if column == "autograd":
        picked = [v for k, v in results.items() if k.startswith("autograd")]
    else:
        picked = [results[column]] if column in results else []
    if not picked:
        return "—"
    err, tol = max(picked, key=lambda v: (math.isnan(v[0]), v[0] / v[1]))
    return output.fmt_err(err) + ("" if err <= tol else " !")


def verify(on_gpu: bool, quick: bool) -> List[Dict]:
    device = torch.device("cuda" if on_gpu else "cpu")
    rows = []
    for seed, (case, dtype) in enumerate(output.progress(grid(on_gpu, quick), "verify")):
        row = {"case": case.label, "shape": list(case.shape), "layout": case.layout,
               "dtype": output.DTYPE_NAMES[str(dtype)], "tolerance": TOLERANCE[dtype]}
        try:
            results = check(case, dtype, device, seed)
            row.update(errors={k: e for k, (e, _) in results.items()}, passed=verdict(results),
                       cells=[_cell(results, c) for c in COLUMNS])
        except Exception as exc:  # a crash is a failure of that case, not of the report
            row.update(errors={}, passed=False, cells=["—"] * len(COLUMNS),
                       error=f"{type(exc).__name__}: {exc}")
        rows.append(row)
    return rows


def timing_summary(results: List[Dict]) -> str:
    """normkit against native and compile per shape: µs, % copy, and normkit's speed-up."""
    table = []
    for label in dict.fromkeys(output.shape_label(r) for r in results):
        by_impl = {r["impl"]: r for r in results if output.shape_label(r) == label}
        for key in ("fwd", "bwd"):
            ours = by_impl.get("normkit", {}).get(f"{key}_s")
            cells = []
            for name in ("normkit", "native", "compile"):
                r = by_impl.get(name, {})
                t = r.get(f"{key}_s")
                cells.append("fails" if r.get("error") else
                             f"{output.fmt_us(t)} ({output.fmt_pct(r.get(f'{key}_pct'))})")
            peers = [by_impl[n][f"{key}_s"] for n in ("native", "compile")
                     if by_impl.get(n, {}).get(f"{key}_s")]
            speedup = f"{min(peers) / ours:.2f}×" if ours and peers else "—"
            table.append([label, key, *cells, speedup])
    headers = ("dtype M×N", "pass", "normkit µs (% copy)", "native µs (% copy)", "compile µs (% copy)",
               "normkit speed-up vs best peer")
    return output.text_table(headers, table)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m normkit verify",
        description="Check normkit's kernels (forward, backward, autograd) on a grid of shapes, dtypes and "
                    "layouts against a float64 reference: relative error ‖got − ref‖ / ‖ref‖ per output "
                    "(dx: relative to the larger of ‖dx_ref‖ and ‖rstd·dy·weight‖), within a tolerance per "
                    "dtype. On a GPU a first timing table follows. Exit status 0 iff every case passes.")
    p.add_argument("--quick", action="store_true", help="only the small shapes (on a GPU, plus the first three large ones)")
    p.add_argument("--no-bench", action="store_true", help="skip the timing table that follows on a GPU")
    p.add_argument("--json", metavar="PATH", help="write every case's errors, verdict and timings as JSON")
    return p


def _backend(on_gpu: bool) -> Optional[str]:
    """Where the kernels run, or None when they cannot run here at all."""
    if on_gpu and lowlevel.backend("cuda") == "triton":
        return f"Triton on {torch.cuda.get_device_name()}"
    if not on_gpu and lowlevel.backend("cpu") == "interpreter":
        return "Triton interpreter on CPU (TRITON_INTERPRET=1): verification only, no timing"
    return None


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    started = time.perf_counter()
    on_gpu = torch.cuda.is_available()
    backend = _backend(on_gpu)
    info = lowlevel.runtime_info()
    if backend is None:
        why = ("triton is not installed" if info["triton"] is None else
               "no GPU, and Triton's interpreter is off (TRITON_INTERPRET=1 must be set before the first "
               "launch; `python -m normkit` does that)")
        print(f"normkit verify: the Triton kernels cannot run here: {why}. Nothing verified.", file=sys.stderr)
        return 1
    print(f"normkit {info['normkit']} verification · {backend} · torch {info['torch']} · triton {info['triton']}")
    print("Each cell: relative error vs a float64 reference, ‖got − ref‖ / ‖ref‖; a case passes when "
          "every error is finite and ≤ its dtype's tolerance (tol).")
    rows = verify(on_gpu, args.quick)
    table = [[r["case"], r["dtype"], *r["cells"], f"{r['tolerance']:.0e}",
              "PASS" if r["passed"] else "FAIL"] for r in rows]
    print(output.text_table(("case", "dtype", *COLUMNS, "tol", "result"), table))
    print("* rstd recomputed in the kernel; autograd: the worst of its y, dx, dweight; "
          "'!' = above tolerance or not finite")
    for r in rows:
        if r.get("error"):
            print(f"FAIL {r['case']} {r['dtype']}: {r['error']}")
    passed = all(r["passed"] for r in rows)
    report = {"backend": backend, **info, "measure": "relative error vs float64, ‖got − ref‖ / ‖ref‖",
              "passed": passed, "cases": [{k: v for k, v in r.items() if k != "cells"} for r in rows]}
    if on_gpu and not args.no_bench:
        passed = _bench(report) and passed
    report["passed"] = passed
    failures = sum(not r["passed"] for r in rows)
    print(f"\n{'PASS' if passed else 'FAIL'}: {len(rows) - failures}/{len(rows)} cases pass "
          f"({time.perf_counter() - started:.1f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0 if passed else 1


def _bench(report: Dict) -> bool:
    """The first timing table; False when normkit itself fails to run in it."""
    from .bench import cli

    results, env = cli.run(BENCH_GRID, ["normkit", "native", "compile"], torch.device("cuda"))
    print(f"\nTiming: GPU µs per call, median of CUDA-graph replays; % copy = minimum bytes moved / time "
          f"/ copy bandwidth ({env['copy_gbps']:.0f} GB/s, measured now)")
    print(timing_summary(results))
    report["bench"] = {"environment": env, "results": results}
    broken = [r for r in results if r["impl"] == "normkit" and r.get("error")]
    for r in broken:
        print(f"FAIL timing {output.shape_label(r)}: {r['error']}")
    return not broken
