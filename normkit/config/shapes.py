"""The heuristics' vocabulary: the problem they look at, and the three tile shapes their tables hold.

Every table entry in forward.py and backward.py is one of `Whole`, `Columns` or `Split`, with a one-line
reason beside it; the lookup picks an entry and turns it into the `TileConfig` the launchers read
(docs/design.md#heuristics).
"""

from dataclasses import dataclass
from functools import cached_property

from .tile import TileConfig, cdiv, next_power_of_2


@dataclass(frozen=True)
class Problem:
    """What a lookup looks at: rows of n columns, what each row moves, and the device."""

    n: int
    heads: int = 1  # weight heads: each head's rows split on programs of their own
    multiprocessors: int = 0
    residual: bool = False  # forward: a residual added (fused add); backward: dresidual_out read too
    layer_norm: bool = False
    x_bytes: int = 2
    y_bytes: int = 2  # forward: y's element size
    residual_bytes: int = 2  # forward: the wider of the residual's and residual_out's element sizes
    vector_aligned: bool = True  # backward: rows load as 16-byte vectors, which staging (cp.async) needs
    recompute: bool = False  # backward: the statistics are recomputed, not read

    @cached_property
    def whole(self) -> int:
        """n rounded up to a power of two: the tables' key."""
        return next_power_of_2(self.n)

    def fits(self, tile: TileConfig) -> bool:
        """Whether a split tile's parts, of every head, all get a resident program (one an SM at least):
        they wait on each other, so a part without one would deadlock its row (docs/design.md#split-rows)."""
        return cdiv(self.n, tile.block_n) * self.heads <= self.multiprocessors


@dataclass(frozen=True)
class Whole:
    """block_m whole rows a tile, held in registers (block_n: the row's width rounded up to a power of two)."""

    block_m: int
    warps: int
    per_sm: int = 1  # backward: persistent programs an SM
    stages: int = 0  # backward: the row loop's loads staged this deep in shared memory (cp.async); 0: none
    prefetch: bool = False  # backward: the next row block's loads in flight during this one's math
    joined_sums: bool = False  # backward: Σ(g·h) and Σg in one reduction tree (LayerNorm's)
    reload: bool = False  # forward: y from the row read again (from L2), not from registers
    max_registers: int = 0  # ptxas' register cap; 0: none

    def tile(self, whole: int) -> TileConfig:
        return TileConfig(self.block_m, whole, True, self.warps, programs_per_sm=self.per_sm,
                          async_stages=self.stages, prefetch=self.prefetch, joined_sums=self.joined_sums,
                          reload=self.reload, max_registers=self.max_registers)


@dataclass(frozen=True)
class Columns:
    """block_m rows walked in tiles of block_n columns: a statistics pass, then the output pass (its reads
    mostly from L2)."""

    block_m: int
    block_n: int
    warps: int
    per_sm: int = 1  # backward: persistent programs an SM
    column_stages: int = 0  # forward: the statistics pass's loads staged this deep in shared memory; 0: none
    centered_pass: bool = False  # forward, LayerNorm: Σx, then Σ(x − mean)², then y: three reads
    max_registers: int = 0

    def tile(self) -> TileConfig:
        return TileConfig(self.block_m, self.block_n, False, self.warps, programs_per_sm=self.per_sm,
                          column_stages=self.column_stages, centered_pass=self.centered_pass,
                          max_registers=self.max_registers)


@dataclass(frozen=True)
class Split:
    """A row cut in parts of part_bytes, one resident program each, the parts exchanging their row sums
    (docs/design.md#split-rows)."""

    block_m: int
    part_bytes: int  # of the stream the lookup names (x, or the wider of x and y or the residual)
    warps: int
    per_sm: int  # programs an SM asked for; the launcher fits the grid to what the compiled kernel leaves
    stages: int = 0  # the row loop's loads staged this deep in shared memory (cp.async); 0: none
    prefetch: bool = False  # backward: the next row block's loads in flight in registers instead
    reload: bool = False  # the previous row block read again after the exchange, not held across it
    max_registers: int = 0
    hold_weight: bool = False  # forward: the part's weight (and bias) held in registers across row blocks

    def tile(self, column_bytes: int) -> TileConfig:
        return TileConfig(self.block_m, self.part_bytes // column_bytes, True, self.warps, programs_per_sm=self.per_sm,
                          split=True, async_stages=self.stages, prefetch=self.prefetch, reload=self.reload,
                          max_registers=self.max_registers, hold_weight=self.hold_weight)
