"""Which kernel variant a launch runs: the constexprs it derives from its arguments, and its tile around
the heuristics' pick (`config.tile_config`, docs/design.md#heuristics).

- dtype constexprs: the compute dtype, where x̂ is rounded (`tl_x_hat_dtype`), a gate's HAS_GATE and
  U_DTYPE (`gate_flags`);
- a gate's tile rules: the heuristics see no SMs, so they never split its rows (`sms_for_tiles`); a gated
  backward's whole-row tile holds half the rows, and rows wider than 8192 take column tiles
  (`gated_backward_tile`); a forced split config with a gate is refused (`check_gate_config`);
- `vector_aligned`: whether the backward's rows load as 16-byte vectors (a staged tile needs it);
- the compile fallback: `run_compiled(run, config, fallback, specialization)` runs `run(config)`; when
  Triton cannot build that configuration (CompilationError, PTXASError, OutOfResources, a failed MLIR
  pass) it warns once with `CompileFallbackWarning` and runs `run(fallback)`: `FALLBACK_FWD` /
  `FALLBACK_BWD`, fitted to M (docs/design.md#launch-path).

The launchers (`normkit.launchers`) apply them.
"""

import dataclasses
import functools
import threading
import warnings
from typing import Callable, Optional

import torch

from . import config as cfg
from . import reference

Tensor = torch.Tensor


@functools.lru_cache(maxsize=None)
def _tl_dtype(dtype: torch.dtype):
    """Triton's dtype for a torch dtype (cached: it runs several times on every launch)."""
    import triton.language as tl

    return {torch.float16: tl.float16, torch.bfloat16: tl.bfloat16, torch.float32: tl.float32,
            torch.float64: tl.float64}[dtype]


def tl_compute_dtype(x: Tensor):
    return _tl_dtype(reference.compute_dtype(x.dtype))


def tl_x_hat_dtype(x: Tensor, x_hat_dtype: Optional[torch.dtype]):
    """Where x̂ is rounded before the weight: nowhere (the compute dtype) unless asked."""
    return tl_compute_dtype(x) if x_hat_dtype is None else _tl_dtype(x_hat_dtype)


def gate_flags(x: Tensor, weight: Optional[Tensor], gate: Optional[Tensor], x_hat_dtype) -> dict:
    """The kernels' gate constexprs: none without a gate (the ungated kernels compile as before),
    else HAS_GATE and where u = x̂·w is rounded before it (`reference.u_dtype`)."""
    if gate is None:
        return {}
    u_dtype = reference.u_dtype(weight, x_hat_dtype)
    return dict(HAS_GATE=True, U_DTYPE=tl_compute_dtype(x) if u_dtype is None else _tl_dtype(u_dtype))


def check_gate_config(gate: Optional[Tensor], config: cfg.TileConfig) -> None:
    """Split rows take no gate (the kernels' split parts were left as they are); the heuristics never
    pick them for one (`sms_for_tiles`), so only a forced config can get here."""
    if gate is not None and config.split:
        raise ValueError(f"a gate runs on whole rows or column tiles, not split rows (split=True), got {config}")


def gated_backward_tile(config: cfg.TileConfig) -> cfg.TileConfig:
    """The backward's whole-row tile for a gated norm: half the rows of the ungated one. It holds three
    rows of inputs (h, dy, gate) where the ungated holds two; ptxas (sm_90, the tiles as launched)
    counts bf16 16 × 128 on 1 warp 255 registers and a spill → 8 × 128 168 (ungated 133), 2 × 2048 255 →
    1 × 2048 157 (168), fp32 32 × 128 6048 B spilled → 16 × 128 none. Counted, not yet timed on an H200."""
    if config.one_tile and config.block_n > 8192:
        return GATED_ROW_BACKWARD if config.block_n <= GATED_ROW_BACKWARD.block_n else GATED_WIDE_BACKWARD
    return dataclasses.replace(config, block_m=config.block_m // 2) if config.one_tile and config.block_m > 1 \
        else config


def gated_forward_tile(config: cfg.TileConfig) -> cfg.TileConfig:
    """The forward's tile for a gated norm: the whole row of ≤ 16384 that the ungated forward re-reads under a
    register cap (`TileConfig.reload`, max_registers) held instead — with a gate the re-read is of two rows
    (H100, bf16, `tools/tune.py --family gated`: 4096×16384 166.7 µs, 80 % of copy → 137.0, 98 %; 8192×8192
    136.8 → 132.2). Wider rows: not measured, as picked."""
    if config.reload and config.one_tile and not config.split and config.block_n <= 16384:
        return dataclasses.replace(config, reload=False, max_registers=0)
    return config


# The gated backward's rows of 8193-16384 on one tile of 16 warps (H100, bf16 4096×16384, `tools/tune.py
# --family gated`: 388.2 µs on GATED_WIDE_BACKWARD's column tiles → 325.5, 57 → 68 % of copy; 8 warps 368.6).
GATED_ROW_BACKWARD = cfg.TileConfig(block_m=1, block_n=16384, one_tile=True, num_warps=16, programs_per_sm=1)
# Wider rows take the ungated backward's column tiles of wide rows (a whole row of 32768 holds three rows of inputs).
GATED_WIDE_BACKWARD = cfg.TileConfig(block_m=2, block_n=4096, one_tile=False, num_warps=16, programs_per_sm=2)


def sms_for_tiles(gate: Optional[Tensor], sms: int) -> int:
    """The SM count the tile heuristics see: 0 with a gate, so they never split a row (a split needs
    its parts ≤ the SMs) and take whole rows or column tiles instead (docs/design.md#heuristics)."""
    return 0 if gate is not None else sms


def vector_aligned(n: int, *tensors: Optional[Tensor]) -> bool:
    """Whether a launch over these (M, N) tensors loads whole rows as 16-byte vectors: N and every
    row stride multiples of 16 elements, unit column strides and 16-byte aligned data (the
    divisibility Triton specialises on). config.tile_config's `vector_aligned` says what needs it."""
    return n % 16 == 0 and all(t is None or (t.stride(1) == 1 and t.stride(0) % 16 == 0 and t.data_ptr() % 16 == 0)
                               for t in tensors)


# ----------------------------------------------------------------------------- compile fallback
class CompileFallbackWarning(RuntimeWarning):
    """A launch configuration failed to compile for the GPU; normkit ran a conservative one."""


@functools.lru_cache(maxsize=None)
def _compile_errors() -> tuple:
    """What Triton raises when a configuration cannot be built for the device: the front end
    (CompilationError), ptxas (PTXASError), or loading (OutOfResources: shared memory, registers).
    Imported on first use: importing normkit does not import triton (TRITON_INTERPRET may be set later)."""
    from triton.compiler.errors import CompilationError
    from triton.runtime import errors

    # (Triton 3.2 has no PTXASError: its ptxas failures are RuntimeErrors, `_is_compile_error`)
    return CompilationError, getattr(errors, "PTXASError", CompilationError), errors.OutOfResources


def _is_compile_error(err: BaseException) -> bool:
    """One of `_compile_errors()`, a failed MLIR pass pipeline (a plain RuntimeError("PassManager::run
    failed") when one of Triton's GPU passes asserts, seen with 3.6's OptimizeThreadLocality) or, in Triton
    3.2, a failed ptxas (a RuntimeError with its "Repro command"). Other RuntimeErrors (CUDA's) are not."""
    return isinstance(err, _compile_errors()) or (type(err) is RuntimeError and (
        "PassManager::run failed" in str(err) or "`ptxas` stderr:" in str(err)))


# The conservative configurations: one row, 1024-column tiles, 4 warps (registers and shared
# memory well within any CUDA GPU's limits for every dtype; correct for any N and any heads).
FALLBACK_FWD = cfg.TileConfig(block_m=1, block_n=1024, one_tile=False, num_warps=4)
FALLBACK_BWD = cfg.TileConfig(block_m=1, block_n=1024, one_tile=False, num_warps=4, programs_per_sm=1)
_failed_configs = set()  # (what was compiled, config) that failed: later calls go straight to the fallback
_failed_lock = threading.Lock()


def run_compiled(run: Callable[[cfg.TileConfig], None], config: cfg.TileConfig, fallback: cfg.TileConfig,
                  specialization: Callable[[], tuple]) -> None:
    """run(config); when the GPU compiler rejects that configuration, warn (once for each
    configuration and kernel specialization) and run(fallback) instead. Compilation happens
    before the kernel touches memory, so nothing was written when the fallback starts; other
    errors (and a failure of the fallback itself) propagate (`_is_compile_error` tells them
    apart). `specialization()` names what was compiled (kernel, flags, dtypes); it is only called
    once something has failed."""
    if _failed_configs and (_freeze(specialization()), config) in _failed_configs:
        return run(fallback)
    try:
        return run(config)
    except Exception as err:
        if config == fallback or not _is_compile_error(err):
            raise
        what = _freeze(specialization())
        with _failed_lock:
            _failed_configs.add((what, config))
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else ""
        warnings.warn(f"normkit: the {what[0]} kernel failed to compile for {config} "
                      f"({type(err).__name__}: {first_line}); using {fallback} instead",
                      CompileFallbackWarning, stacklevel=3)
    return run(fallback)


def _freeze(what: tuple) -> tuple:
    return tuple(tuple(part.items()) if isinstance(part, dict) else part for part in what)
