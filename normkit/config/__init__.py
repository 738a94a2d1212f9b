"""Launch heuristics: tile shape, warps and grid from N, the element sizes and the device
(docs/design.md#heuristics).

Pure functions of their arguments (cached), so no device query or Python work that a cache can hold runs on
every call. Tests and tools may pass a `TileConfig` of their own to the launchers in `normkit.launchers`.

    tile.py      TileConfig (how one program walks its rows), next_power_of_2, cdiv
    shapes.py    Problem (what the lookups look at) and the table entries: Whole, Columns, Split
    forward.py   the forward's tables (H200) and its ladder, forward_tile
    backward.py  the backward's tables (H200) and its ladder, backward_tile
    grid.py      rows a tile at small M, the persistent grid, residency, the dweight finisher's tile
    device.py    Device: a GPU's limits (SMs, shared memory, registers, warp size, L2) and which tables it reads
    generic.py   the generic ladder: every GPU but sm_90 (derived from the Device record)

tests/test_config.py holds every pick of the sm_90 tables for every N up to 262144 in every scenario: a change that
moves one fails. tests/test_portability.py checks the generic ladder's picks against the limits of other GPUs.
"""

import functools
from typing import Optional

from .backward import WHOLE_ROW_MAX as BACKWARD_WHOLE_ROW_MAX
from .backward import backward_tile, even_cols, joins_stats, may_stage
from .device import KNOWN as KNOWN_DEVICES
from .device import Device, shared_bytes
from .forward import WHOLE_ROW_MAX as FORWARD_WHOLE_ROW_MAX
from .forward import forward_tile
from .generic import fits_device, generic_tile
from .grid import backward_grid, finish_config, fit_block_m, resident_programs, split_parts
from .shapes import Columns, Problem, Split, Whole
from .tile import TileConfig, cdiv, check_covers, holds_pairs, next_power_of_2, takes_pairs

__all__ = ["BACKWARD_WHOLE_ROW_MAX", "Columns", "Device", "FORWARD_WHOLE_ROW_MAX", "KNOWN_DEVICES", "Problem",
           "Split", "TileConfig", "Whole",
           "backward_grid", "cdiv", "check_covers", "even_cols", "finish_config", "fit_block_m", "holds_pairs",
           "joins_stats", "may_stage", "next_power_of_2", "resident_programs", "shared_bytes", "split_parts",
           "takes_pairs", "tile_config"]

# Interpreter (CPU): every program is a Python loop iteration of numpy ops on whole tiles, so the fewer and
# larger the programs, the faster; registers do not exist there.
INTERPRET_TILE_ELEMENTS = 65536
_ELEMENT_SIZES = (2, 4, 8)  # bf16 / fp16, fp32, fp64


@functools.lru_cache(maxsize=None)
def tile_config(n: int, backward: bool, interpret: bool, heads: int = 1, multiprocessors: Optional[int] = None,
                residual: bool = False, layer_norm: bool = False, element_size: int = 2,
                vector_aligned: bool = True, out_element_size: int = 0, recompute: bool = False,
                residual_element_size: int = 0, device: Optional[Device] = None) -> TileConfig:
    """The tile for rows of n columns, forward or backward, on a GPU or in the interpreter.

    heads, multiprocessors: split rows need every part of every head resident at once (parts·heads ≤ SMs);
        the forward splits rows of one head only.
    residual: the forward adds a residual (fused add), the backward reads dresidual_out too.
    layer_norm: LayerNorm (else RMSNorm).
    element_size: bytes per element of x (2, 4 or 8).
    out_element_size, residual_element_size: the forward's y and the wider of its residual and residual_out
        (0: as x's).
    vector_aligned: the backward's rows load as 16-byte vectors (N and every row stride multiples of 16
        elements, unit column strides, 16-byte aligned pointers); staging in shared memory needs it.
    recompute: the backward recomputes the statistics (no saved mean / rstd).
    device: the GPU (`_runtime.target`): its ladder picks the tables — the H200's (sm_90) or the generic
        ladder's — and multiprocessors, when None, is its count. None: the sm_90 tables with `multiprocessors`.
    """
    sizes = {"element_size": element_size, "out_element_size": out_element_size or element_size,
             "residual_element_size": residual_element_size or element_size}
    for name, size in sizes.items():
        if size not in _ELEMENT_SIZES:
            raise ValueError(f"{name} is the bytes of a bf16, fp16, fp32 or fp64 element (2, 4 or 8), got {size!r}")
    whole = next_power_of_2(n)
    if interpret:
        block_n = min(whole, INTERPRET_TILE_ELEMENTS)
        return TileConfig(block_m=max(1, INTERPRET_TILE_ELEMENTS // block_n), block_n=block_n, one_tile=block_n >= n)
    if multiprocessors is None:  # (0 is an answer: no row is split, e.g. a gated norm's)
        multiprocessors = device.multiprocessors if device is not None else 0
    problem = Problem(n, heads, multiprocessors, residual, layer_norm, element_size, sizes["out_element_size"],
                      sizes["residual_element_size"], vector_aligned, recompute)
    if device is not None and device.ladder == "generic":
        return generic_tile(problem, device, backward)
    tile = backward_tile(problem) if backward else forward_tile(problem)
    if device is not None and not fits_device(tile, problem, device, backward):
        return generic_tile(problem, device, backward)  # the sm_90 tables forced on a smaller GPU (NORMKIT_ARCH)
    return tile
