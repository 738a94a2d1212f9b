"""TileConfig: how one program walks its rows — the launchers' only input besides the tensors."""

from dataclasses import dataclass


@dataclass(frozen=True)
class TileConfig:
    """How one program walks its rows: a BLOCK_M × BLOCK_N tile, whole row or column tiles."""

    block_m: int  # rows per tile
    block_n: int  # columns per tile (a power of two)
    one_tile: bool  # the whole row fits in one tile and stays in registers (forward: unless reload)
    num_warps: int = 4
    programs_per_sm: int = 1  # backward only: persistent programs per multiprocessor
    num_stages: int = 3  # Triton's launch option (its default); it pipelines none of these loops by itself:
    # a loop is pipelined only when it carries num_stages (the backward's row loop: async_stages)
    split: bool = False  # each row cut into cdiv(N, block_n) parts, one (resident) program each (backward;
    # forward: the fused add's wide rows)
    prefetch: bool = False  # backward, one_tile: the next row block's loads go out before this block's math
    joined_sums: bool = False  # backward, one_tile: Σ(g·h) and Σg in one reduction tree (JOIN_SUMS;
    # LayerNorm only — RMSNorm, which shares the tiles, has the one sum Σ(g·h))
    async_stages: int = 0  # backward, one_tile, not prefetch (and the forward's split parts): ≥ 2 stages the
    # row loop's loads in shared memory (cp.async, Triton's software pipeliner; ASYNC_STAGES /
    # SPLIT_STAGES), 0 leaves them in registers
    reload: bool = False  # forward, one_tile: y from the row read again (from L2; RELOAD), not from registers;
    # split parts (either direction): the previous row block read again after the exchange, not held across it
    # (the forward's split tables ask for it: their parts were timed re-reading)
    max_registers: int = 0  # ptxas' register cap (Triton's maxnreg), 0 for none; the backward's grid is
    # fitted to the programs the capped kernel leaves resident
    column_stages: int = 0  # forward, column tiles: ≥ 2 stages the statistics pass's loads in shared
    # memory (cp.async; COLUMN_STAGES), 0 leaves them in registers
    centered_pass: bool = False  # forward, column tiles, LayerNorm: per-lane Σh, then a second statistics
    # pass of per-lane Σ(h − mean)² (CENTERED_PASS), not Chan's merge of every tile
    hold_weight: bool = False  # forward, split parts: the part's weight and bias loaded once and held in
    # registers across its row blocks (HOLD_WEIGHT), not read again (from L2) every row block

    def __post_init__(self):
        for name in ("block_m", "block_n"):
            size = getattr(self, name)
            if not isinstance(size, int) or size < 1 or size & (size - 1):
                raise ValueError(f"{name} is a power of two (a tile's extent, tl.arange), got {size!r}")
        if self.split and not self.one_tile:
            raise ValueError("a split config holds each part of a row in registers: it needs one_tile=True, "
                             f"got {self}")
        if self.prefetch and not self.one_tile:
            raise ValueError(f"prefetch holds the next row block in registers: it needs one_tile=True, got {self}")
        if self.joined_sums and not self.one_tile:
            raise ValueError(f"joined_sums reduces a whole row held in registers: it needs one_tile=True, got {self}")
        if self.async_stages == 1 or self.async_stages < 0:
            raise ValueError(f"async_stages is 0 (no pipeline) or a depth of 2 or more, got {self.async_stages}")
        if self.reload and not self.one_tile:
            raise ValueError(f"reload re-reads a whole row held in one tile: it needs one_tile=True, got {self}")
        if self.column_stages and (self.one_tile or self.column_stages < 2):
            raise ValueError(f"column_stages is 0 or a depth of 2 or more, for column tiles (one_tile=False), got {self}")
        if self.centered_pass and self.one_tile:
            raise ValueError(f"centered_pass is a second pass over column tiles: it needs one_tile=False, got {self}")
        if self.hold_weight and not self.split:
            raise ValueError(f"hold_weight holds a split part's columns of the weight: it needs split=True, got {self}")
        if self.max_registers < 0:
            raise ValueError(f"max_registers is 0 (no cap) or ptxas' register cap, got {self.max_registers}")
        if self.async_stages and not (self.one_tile and not self.prefetch):
            raise ValueError("async_stages pipelines the row loop's loads of whole rows or split parts: it needs "
                             f"one_tile=True and prefetch=False (another way to load ahead), got {self}")


def next_power_of_2(n: int) -> int:
    """The least power of two ≥ n. A symbolic n (a torch.SymInt under torch.compile) by doubling: its guards
    bound the power's range (4 < n ≤ 8) where bit_length would specialise n."""
    if isinstance(n, int):
        return 1 << max(n - 1, 0).bit_length()
    power = 1
    while power < n:
        power *= 2
    return power


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def holds_pairs(config: TileConfig) -> bool:
    """Whether every thread of the config's program holds an even number of each tile row's columns, which
    convert.upcast's BF16_PAIRS (inline PTX taking two elements a register) needs. How many columns a
    thread holds is Triton's layout's choice (alignment, contiguity); block_n ≥ two per thread of the
    program is enough whatever it picks: a dimension held once a thread spans at most the program's
    threads. Narrower tiles may leave a thread one element — N = 1 does, and Triton refuses the packed
    asm ("number of input elements 1 must be a multiple of the op's packed_element attribute, 2")."""
    return config.block_n >= 2 * 32 * config.num_warps


def takes_pairs(config: TileConfig, backward: bool) -> bool:
    """Whether a GPU launch of the config upcasts bf16 by register pairs (convert.upcast's BF16_PAIRS), where
    it won: the forward's split parts and column tiles (its whole rows spilled with it), the backward's whole
    rows and column tiles (its split parts lost 0.5-1.3 %); and only where every thread holds two (`holds_pairs`)."""
    where = not config.split if backward else config.split or not config.one_tile
    return where and holds_pairs(config)


def check_covers(config: TileConfig, n: int) -> None:
    """A config given to a launcher (tests, tools/tune.py) must reach every column of rows of n: a
    whole-row tile that is not split (one_tile, not split) holds block_n columns and nothing loops over
    the rest, so a narrower one would leave columns unread and unwritten — a silently wrong answer."""
    if config.one_tile and not config.split and config.block_n < n:
        raise ValueError(f"a whole-row config (one_tile=True, split=False) needs block_n >= N: got block_n="
                         f"{config.block_n} for N={n} (use split=True or one_tile=False), {config}")
