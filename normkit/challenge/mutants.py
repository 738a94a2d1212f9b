"""Plain-PyTorch solutions of the RMSNorm-backward challenge: one right, and wrong ones.

`PlainSolve` is the correct solution, written as a contestant might, in float32::

    rstd = 1/sqrt(mean(x²) + eps),  x̂ = x·rstd,  g = dy·w
    dx = rstd·(g − x̂·mean(g·x̂)),  dweight = Σ_rows dy·x̂

Each mutant overrides one step with a classic mistake. The suite (`cases.run_suite`) must reject
every one of them: that is the evidence its cases can tell a right answer from a wrong one.
"""

import torch


class PlainSolve:
    """The correct solution; call it like `solve(x, weight, dy, dx, dweight, N, C, eps)`."""

    def __call__(self, x, weight, dy, dx, dweight, N, C, eps):
        x, dy = x.reshape(N, C), dy.reshape(N, C)
        rstd = self.rstd(x, eps)
        x_hat = x * rstd
        dx.view(N, C).copy_(self.dx(self.g(dy, weight), x_hat, rstd))
        self.write_dweight(dweight, dy, x, rstd)

    def row_mean(self, t):
        return t.sum(dim=1, keepdim=True) / t.shape[1]

    def rstd(self, x, eps):
        return torch.rsqrt(self.row_mean(x * x) + eps)

    def g(self, dy, weight):
        return dy * weight

    def dx(self, g, x_hat, rstd):
        return rstd * (g - x_hat * self.row_mean(g * x_hat))

    def write_dweight(self, dweight, dy, x, rstd):
        dweight.copy_((dy * x * rstd).sum(dim=0))


class NoProjection(PlainSolve):
    """dx = rstd·g: the term −x̂·mean(g·x̂) dropped."""

    def dx(self, g, x_hat, rstd):
        return rstd * g


class DyForG(PlainSolve):
    """dy where dx needs g = dy·w."""

    def g(self, dy, weight):
        return dy


class XForXHatInDweight(PlainSolve):
    """dweight = Σ dy·x instead of Σ dy·x̂."""

    def write_dweight(self, dweight, dy, x, rstd):
        dweight.copy_((dy * x).sum(dim=0))


class NoOuterRstd(PlainSolve):
    """dx = g − x̂·mean(g·x̂), without the leading rstd."""

    def dx(self, g, x_hat, rstd):
        return g - x_hat * self.row_mean(g * x_hat)


class EpsIgnored(PlainSolve):
    """1/sqrt(mean(x²)): eps dropped, so an all-zero row divides by zero."""

    def rstd(self, x, eps):
        return torch.rsqrt(self.row_mean(x * x))


class EpsOutsideSqrt(PlainSolve):
    """1/sqrt(mean(x²)) + eps."""

    def rstd(self, x, eps):
        return torch.rsqrt(self.row_mean(x * x)) + eps


class MeanOverRows(PlainSolve):
    """Means divided by N (the row count) instead of C."""

    def row_mean(self, t):
        return t.sum(dim=1, keepdim=True) / t.shape[0]


class DweightNotZeroed(PlainSolve):
    """dweight += Σ dy·x̂ into the caller's buffer, which holds garbage (123.0 in the suite)."""

    def write_dweight(self, dweight, dy, x, rstd):
        dweight += (dy * x * rstd).sum(dim=0)


class PartialsOverwritten(PlainSolve):
    """Per-block partials of dweight stored, not added: only the last block of rows survives."""

    BLOCK_ROWS = 64

    def write_dweight(self, dweight, dy, x, rstd):
        for start in range(0, x.shape[0], self.BLOCK_ROWS):
            rows = slice(start, start + self.BLOCK_ROWS)
            dweight.copy_((dy[rows] * x[rows] * rstd[rows]).sum(dim=0))


class TailColumnsDropped(PlainSolve):
    """Vectorised by 4 with no tail loop: the last C % 4 columns are never read or written."""

    def width(self, C):
        return C - C % 4

    def __call__(self, x, weight, dy, dx, dweight, N, C, eps):
        w = self.width(C)
        head = slice(0, w)
        super().__call__(x.reshape(N, C)[:, head], weight[head], dy.reshape(N, C)[:, head],
                         dx.view(N, C)[:, head], dweight[head], N, w, eps)


class PowerOfTwoColumns(TailColumnsDropped):
    """Block size rounded down to a power of two and no column loop: columns past it are lost."""

    def width(self, C):
        return 1 << (C.bit_length() - 1)


plain_solve = PlainSolve()

MUTANTS = {
    "no-projection": NoProjection(),
    "dy-for-g": DyForG(),
    "x-for-x_hat-in-dweight": XForXHatInDweight(),
    "no-outer-rstd": NoOuterRstd(),
    "eps-ignored": EpsIgnored(),
    "eps-outside-sqrt": EpsOutsideSqrt(),
    "mean-over-rows": MeanOverRows(),
    "dweight-not-zeroed": DweightNotZeroed(),
    "partials-overwritten": PartialsOverwritten(),
    "tail-columns-dropped": TailColumnsDropped(),
    "power-of-two-columns": PowerOfTwoColumns(),
}
