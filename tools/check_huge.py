"""GPU check: tensors above 2**31 elements, forward and backward, against float64 (dev tool).

Shapes (the heuristics' own configurations, no override):

* bf16 65536 × 32769 = 2 147 549 184 elements (forward: column tiles; backward: split rows or
  column tiles): 4.3 GB a tensor;
* fp32 33000 × 65536 = 2 162 688 000 elements: 8.7 GB a tensor.

Families: rms (weight; backward with the saved rstd and recomputing it), layer_norm (weight +
bias) and fused_add (RMSNorm of x + residual, residual_out checked; the backward from residual_out
with dresidual_out — the fused add's wide forward splits rows). Rows are checked against float64 computed on the GPU for sampled rows only — the first,
the middle, the last and those around element 2**31 (where 32-bit offsets would wrap) — every
column of them; dweight and dbias against float64 sums over all rows, accumulated in chunks.
Peak memory about 8 tensors of the shape (x, dy, y, dx, …): ~70 GB for the fp32 shape.

    PYTHONPATH=$PWD python tools/check_huge.py [--shapes bf16:65536x32769,fp32:33000x65536] [--families rms,layer_norm,fused_add]

Checks the sizes where int32 offsets would break; prints one line per check and exits 1 on any failure.
"""

import argparse
import pathlib
import sys
import time

import torch

TOOLS = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(TOOLS.parent), str(TOOLS)]

import normkit  # noqa: E402
from normkit.bench.cli import _parse_names, parse_shapes  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32, "fp16": torch.float16}
TOL = {torch.bfloat16: 8e-3, torch.float16: 1e-3, torch.float32: 1e-5}  # relative Frobenius error
CHUNK = 2048  # rows per float64 chunk of the parameter-gradient reference


def rel(a, b):
    """Relative Frobenius error of a against the float64 reference b."""
    return ((a.double() - b).norm() / b.norm()).item()


def sample_rows(m: int, n: int):
    edge = (2**31 - 1) // n  # the row holding element 2**31 - 1
    rows = {0, 1, m // 2, m - 2, m - 1, edge - 1, edge, edge + 1}
    return sorted(r for r in rows if 0 <= r < m)


def _stats64(h64, rms, eps):
    mean = None if rms else h64.mean(-1, keepdim=True)
    centered = h64 if rms else h64 - mean
    return centered * torch.rsqrt(centered.square().mean(-1, keepdim=True) + eps)


def check(dtype, m, n, family):
    rms = family != "layer_norm"
    fused = family == "fused_add"  # RMSNorm of x + residual; the backward adds dresidual_out
    eps = 1e-6 if rms else 1e-5
    g = torch.Generator(device="cuda").manual_seed(m + n)
    x = torch.randn(m, n, device="cuda", generator=g, dtype=torch.float32).to(dtype)
    dy = torch.randn(m, n, device="cuda", generator=g, dtype=torch.float32).to(dtype)
    dy.add_(x, alpha=0.5)
    w = (1 + 0.1 * torch.randn(n, device="cuda", generator=g)).to(dtype)
    b = None if rms else (0.1 * torch.randn(n, device="cuda", generator=g)).to(dtype)
    residual = torch.randn(m, n, device="cuda", generator=g, dtype=torch.float32).to(dtype) if fused else None
    t0 = time.time()
    if rms:
        y, h, rstd = normkit.rms_norm_fwd(x, w, residual=residual, eps=eps, store_rstd=True)
        dx, dw, db, _ = normkit.rms_norm_bwd(x if h is None else h, w, dy, rstd, dresidual_out=residual,
                                             has_residual=fused, eps=eps)
    else:
        y, _, mean, rstd = normkit.layer_norm_fwd(x, w, b, eps=eps, store_rstd=True)
        dx, dw, db, _ = normkit.layer_norm_bwd(x, w, dy, mean, rstd, has_bias=True, eps=eps)
    torch.cuda.synchronize()
    elapsed = time.time() - t0
    rows = sample_rows(m, n)
    idx = torch.tensor(rows, device="cuda")
    x64, dy64, w64 = x[idx].double(), dy[idx].double(), w.double()
    if fused:  # y from the unrounded sum; the backward from residual_out as stored (rounded)
        y_ref = _stats64(x64 + residual[idx].double(), rms, eps) * w64
        x64 = h[idx].double()
    xh = _stats64(x64, rms, eps)
    if not fused:
        y_ref = xh * w64 + (0.0 if b is None else b.double())
    g64 = dy64 * w64
    inner = g64 - xh * (g64 * xh).mean(-1, keepdim=True)
    if not rms:
        inner = inner - g64.mean(-1, keepdim=True)
    centered = x64 if rms else x64 - x64.mean(-1, keepdim=True)
    dx_ref = torch.rsqrt(centered.square().mean(-1, keepdim=True) + eps) * inner
    if fused:
        dx_ref = dx_ref + residual[idx].double()
    errors = {"y": rel(y[idx], y_ref), "dx": rel(dx[idx], dx_ref)}
    if fused:
        errors["residual_out"] = rel(h[idx], x[idx].double() + residual[idx].double())
        x = h  # dweight's reference from residual_out, as the backward saw it
    if rms and not fused:  # the recompute path too (statistics from x in the same pass)
        dx2, dw2, _, _ = normkit.rms_norm_bwd(x, w, dy, None, eps=eps)
        errors["dx recomputed"] = rel(dx2[idx], dx_ref)
        recomputed_dw = dw2
        del dx2
    dw_ref = torch.zeros(n, dtype=torch.float64, device="cuda")
    db_ref = torch.zeros(n, dtype=torch.float64, device="cuda")
    for start in range(0, m, CHUNK):
        xc, dyc = x[start:start + CHUNK].double(), dy[start:start + CHUNK].double()
        dw_ref += (dyc * _stats64(xc, rms, eps)).sum(0)
        db_ref += dyc.sum(0)
        del xc, dyc
    errors["dweight"] = rel(dw, dw_ref)
    if rms and not fused:
        errors["dweight recomputed"] = rel(recomputed_dw, dw_ref)
    if db is not None:
        errors["dbias"] = rel(db, db_ref)
    finite = all(torch.isfinite(t).all().item() for t in (y, dx, dw))
    good = finite and all(e <= TOL[dtype] for e in errors.values())
    details = " ".join(f"{k} {v:.1e}" for k, v in errors.items())
    print(f"{m}x{n} ({m * n / 2**31:.3f}·2^31 elements) {str(dtype)[6:]} {family}: {details} | rows {rows} | "
          f"fwd+bwd {elapsed:.2f} s {'OK' if good else 'FAIL'}", flush=True)
    return good


FAMILIES = ("rms", "layer_norm", "fused_add")


def _specs(text):
    """'bf16:65536x32769,fp32:33000x65536' → [(torch.bfloat16, 65536, 32769), (torch.float32, 33000, 65536)]."""
    specs = []
    for spec in filter(None, (s.strip() for s in text.split(","))):
        name, _, shape = spec.partition(":")
        try:
            (m, n), = parse_shapes(shape)
        except (argparse.ArgumentTypeError, ValueError):
            m = n = None
        if name not in DTYPES or m is None:
            raise argparse.ArgumentTypeError(f"--shapes must be DTYPE:MxN,..., DTYPE among {', '.join(DTYPES)}, "
                                             f"e.g. bf16:65536x32769, got {spec!r}")
        specs.append((DTYPES[name], m, n))
    if not specs:
        raise argparse.ArgumentTypeError(f"--shapes names no DTYPE:MxN, got {text!r}")
    return list(dict.fromkeys(specs))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", type=_specs, default="bf16:65536x32769,fp32:33000x65536",
                        help="DTYPE:MxN problems, comma-separated")
    parser.add_argument("--families", type=lambda text: _parse_names(text, FAMILIES, "--families"),
                        default=",".join(FAMILIES), help="among " + ",".join(FAMILIES))
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("check_huge: needs a CUDA device")
        return 2
    ok = True
    for dtype, m, n in args.shapes:
        for family in args.families:
            ok &= check(dtype, m, n, family)
            torch.cuda.empty_cache()
    print(f"check_huge: {'all OK' if ok else 'FAILURES'}; peak memory {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
