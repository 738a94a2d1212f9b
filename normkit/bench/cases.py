"""The cases `python -m normkit verify` checks, the kernel paths each one takes, and the subset it
runs by default.

A case is a shape and a layout: a comma-separated list of FEATURES ("layer norm, residual").

Kernel paths. On a GPU the first `python -m normkit` spends almost all its time in Triton compiling
kernels (166 s for 88 cases on an H200), so by default verify runs a representative subset and
`--full` every case. Each case × dtype is labelled with what it exercises:

  - its family (RMSNorm, LayerNorm), its layout's features (residual, bias, per-head weight,
    weight offset, llama casting, no weight, strided rows), rows not a multiple of 16, its dtype;
  - per pass (forward; backward with saved statistics; backward recomputing them) the tile the launch
    heuristics pick for it on this device (`normkit.config.tile_config`): whole row, column tiles or
    split rows; and per direction that tile with all its options (re-read, prefetch, staged loads,
    register cap, ...), so every combination the grid reaches is a path of its own.

The subset is a greedy cover of every label of the full grid: take the case × dtype with the most
labels not yet covered (ties: the fewer elements, then the earlier in the grid), until none is left.
It is computed, not listed, so a change to the heuristics that moves a shape onto a new tile keeps
that tile in the default check (tests/test_report.py checks the cover against the full grid).
"""

import math
from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Sequence, Tuple

import torch

from .. import lowlevel
from .output import DTYPE_NAMES

FEATURES = {
    "contiguous": "row-major x, weight (N,)",
    "strided": "x and dy with a column stride of 2",
    "no weight": "no weight",
    "layer norm": "LayerNorm with weight and bias (else RMSNorm)",
    "residual": "x + residual, the fused pre-norm path; a gradient arrives on residual_out too",
    "per-head": "weight (and bias) of shape (H, N) for x of shape (..., H, N)",
    "offset": "RMSNorm with weight_offset = 1 (Gemma's weight + 1)",
    "llama": "casting_mode 'llama': x̂ rounded to x's dtype before the weight",
}
# tile options named in the labels: TileConfig field → name
_TILE_OPTIONS = {"reload": "re-read", "prefetch": "prefetch", "joined_sums": "joined sums",
                 "async_stages": "staged loads", "column_stages": "staged column loads",
                 "centered_pass": "centred pass", "hold_weight": "held weight", "max_registers": "register cap"}
PASSES = ("forward", "backward, saved statistics", "backward, recomputed statistics")


@dataclass(frozen=True)
class Case:
    shape: Tuple[int, ...]
    layout: str = "contiguous"  # features from FEATURES, comma-separated

    def __post_init__(self):
        unknown = self.features - set(FEATURES)
        if unknown:
            raise ValueError(f"layout features must be among {', '.join(FEATURES)}, got {self.layout!r}")
        if "per-head" in self.features and len(self.shape) < 3:
            raise ValueError(f"a per-head case needs a shape (..., H, N), got {self.shape}")
        if "offset" in self.features and "layer norm" in self.features:
            raise ValueError("weight_offset is RMSNorm's (LayerNorm has none), got layout 'layer norm, offset'")

    @property
    def features(self) -> FrozenSet[str]:
        return frozenset(f.strip() for f in self.layout.split(","))

    @property
    def label(self) -> str:
        text = "×".join(map(str, self.shape))
        return text if self.layout == "contiguous" else f"{text} {self.layout}"

    @property
    def is_rms_norm(self) -> bool:
        return "layer norm" not in self.features

    @property
    def heads(self) -> int:
        return self.shape[-2] if "per-head" in self.features else 1

    @property
    def weight_offset(self) -> float:
        return 1.0 if "offset" in self.features else 0.0

    def has(self, feature: str) -> bool:
        return feature in self.features


def tile_calls(case: Case, dtype: torch.dtype, interpret: bool, multiprocessors: int) -> Dict[str, Dict]:
    """{pass (PASSES): the keyword arguments its launch gives the heuristics (`lowlevel.tile_config`)},
    as `normkit.launchers.launch_fwd` / `launch_bwd` derive them from the case's tensors (tests/test_report.py
    checks the two agree on every case)."""
    size = dtype.itemsize
    n = case.shape[-1]
    common = dict(n=n, interpret=interpret, heads=case.heads, multiprocessors=multiprocessors,
                  residual=case.has("residual"), layer_norm=not case.is_rms_norm, element_size=size)
    forward = dict(common, backward=False, out_element_size=size,
                   residual_element_size=size if case.has("residual") else 0)
    # 16-byte vector loads: N and every row stride multiples of 16 elements, unit column strides
    aligned = n % 16 == 0 and not case.has("strided")
    backward = dict(common, backward=True, vector_aligned=not lowlevel.may_stage(n, size) or aligned)
    return dict(zip(PASSES, (forward, dict(backward, recompute=False), dict(backward, recompute=True))))


def paths(case: Case, dtype: torch.dtype, interpret: bool, multiprocessors: int) -> FrozenSet[str]:
    """The labels of what one case × dtype exercises (the module's docstring lists them)."""
    family = "RMSNorm" if case.is_rms_norm else "LayerNorm"
    features = {f for f in case.features if f not in ("contiguous", "llama")} | {DTYPE_NAMES[str(dtype)]}
    if case.has("llama") and dtype.itemsize < 4:  # (x̂ rounded to fp32 or fp64 is x̂ itself)
        features.add("llama")
    if case.has("layer norm"):
        features.add("bias")
    labels = {family, *features, *(f"{family}, {feature}" for feature in features)}
    if case.shape[-1] % 16:
        labels.add("rows not a multiple of 16")
    for name, arguments in tile_calls(case, dtype, interpret, multiprocessors).items():
        config = lowlevel.tile_config(**arguments)
        kind = "split rows" if config.split else "whole row" if config.one_tile else "column tiles"
        direction = name.split(",")[0]
        options = [option for field, option in _TILE_OPTIONS.items() if getattr(config, field)]
        labels.add(f"{name}: {kind}")
        labels.add(f"{direction}: {kind}" + "".join(f", {option}" for option in options))
    return frozenset(labels)


def representative(grid: Sequence[Tuple[Case, torch.dtype]], interpret: bool, multiprocessors: int
                   ) -> List[Tuple[Case, torch.dtype]]:
    """The greedy cover of every path label of `grid`, in the grid's order (the module's docstring)."""
    labelled = [(i, item, paths(*item, interpret, multiprocessors)) for i, item in enumerate(grid)]
    uncovered = set().union(*(labels for _, _, labels in labelled))
    chosen = []
    while uncovered:
        i, item, labels = max(labelled, key=lambda entry: (len(entry[2] & uncovered),
                                                           -math.prod(entry[1][0].shape), -entry[0]))
        chosen.append((i, item))
        uncovered -= labels
    return [item for _, item in sorted(chosen, key=lambda entry: entry[0])]
