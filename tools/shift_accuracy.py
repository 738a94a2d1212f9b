"""LayerNorm statistics in one pass from a shifted sum and sum of squares, against the two passes
the forward uses — float32 in numpy, errors against float64 (a CPU experiment, session 10).

One reduction tree for both sums (Σd, Σd², d = h − K with K = the row's first element) would
drop the forward's second block reduction; this measures what it costs in accuracy:

    python tools/shift_accuracy.py

K far from the mean (an outlier in the first column) leaves Σd²/N − (Σd/N)² cancelling:
rstd 3.9e-4 off and y 2.5e-2 against the two passes' 1.5e-7 and 9.7e-6 — rejected.
"""
import numpy as np


def two_pass(h):
    n = np.float32(h.shape[1])
    mean = h.sum(1, dtype=np.float32) / n
    centred = h - mean[:, None]
    return mean, (centred * centred).sum(1, dtype=np.float32) / n


def shifted(h):
    n = np.float32(h.shape[1])
    d = h - h[:, :1]
    m1 = d.sum(1, dtype=np.float32) / n
    return h[:, 0] + m1, (d * d).sum(1, dtype=np.float32) / n - m1 * m1


def errors(stats, h, eps=1e-5):
    """(max relative error of rstd, max absolute error of y = (h − mean)·rstd) against float64."""
    h = h.astype(np.float32)
    mean, var = stats(h)
    exact = h.astype(np.float64)
    rstd = 1 / np.sqrt(var.astype(np.float64) + eps)
    rstd_exact = 1 / np.sqrt(exact.var(1) + eps)
    y = (exact - mean[:, None]) * rstd[:, None]
    y_exact = (exact - exact.mean(1)[:, None]) * rstd_exact[:, None]
    return np.abs(rstd / rstd_exact - 1).max(), np.abs(y - y_exact).max()


def main():
    rng = np.random.default_rng(0)
    m, n = 256, 4096
    normal = rng.standard_normal((m, n))
    outlier = normal.copy()
    outlier[:, 0] = 1000
    inner = normal.copy()
    inner[:, 5] = 1000
    cases = {"N(0, 1)": normal, "mean 100, std 0.01": 100 + 0.01 * normal, "mean 1000, std 1": 1000 + normal,
             "1000 in column 0": outlier, "1000 in column 5": inner}
    for name, h in cases.items():
        (r2, y2), (r1, y1) = errors(two_pass, h), errors(shifted, h)
        print(f"{name:20s} two passes: rstd {r2:.1e}, y {y2:.1e} | shifted one pass: rstd {r1:.1e}, y {y1:.1e}")


if __name__ == "__main__":
    main()
