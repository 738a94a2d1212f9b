"""What each launch passes: the tile, the constexprs, the grid and the arguments of the forward, the
backward and the finisher, built from the tensors of one call. The launchers (`normkit.launchers`: eager
calls, with plans and the compile fallback) and the compile-time path (`normkit.compiled`: Inductor's
wrapper launches the kernels) build their launches from these, so both run the same kernel variant.
"""

from typing import Optional, Tuple

import torch

from . import config as cfg
from ._runtime import inline_ptx, interpret, resident_programs, target
from .variant import (check_gate_config, gate_flags, gated_backward_tile, gated_forward_tile, sms_for_tiles,
                      tl_compute_dtype, tl_x_hat_dtype)

Tensor = torch.Tensor


def head_count(weight: Optional[Tensor], bias: Optional[Tensor]) -> int:
    """H of per-head (H, N) parameters, else 1."""
    param = weight if weight is not None else bias
    return param.shape[0] if param is not None and param.dim() == 2 else 1


def _stride(t: Optional[Tensor], dim: int) -> int:
    return t.stride(dim) if t is not None else 0


def resident(kernel, device: torch.device) -> Optional[int]:
    """How many programs of a compiled kernel one multiprocessor of `device` holds (None: no
    compiled kernel — the interpreter runs one program at a time — so no limit)."""
    if kernel is None:
        return None
    return resident_programs(kernel, device)


_STREAM_MIN_N = 2048  # the forward's evict_first rows (launch_fwd)


def rows_to_fit(m):
    """M as BLOCK_M is fitted to it: an int as it is; a symbolic M (torch.compile) no less than 3, so the smallest
    range its guards give is 2 ≤ M ≤ 4 (BLOCK_M 4) — (1, 2] would be M = 2 alone, which mark_dynamic refuses."""
    return m if type(m) is int else torch.sym_max(m, 3)


def fwd_tile(x, out, weight, bias, residual, residual_out, gate, is_rms_norm: bool, heads: int, sms: int,
             config: Optional[cfg.TileConfig] = None) -> cfg.TileConfig:
    """The forward's tile: `config` (checked) or the heuristics' pick, fitted to M (which may be symbolic)."""
    m, n = x.shape
    if config is not None:
        cfg.check_covers(config, n)
    picked = config or cfg.tile_config(n, False, interpret(), heads=heads, multiprocessors=sms_for_tiles(gate, sms),
                                       residual=residual is not None, layer_norm=not is_rms_norm,
                                       element_size=x.element_size(), out_element_size=out.element_size(),
                                       residual_element_size=max((t.element_size() for t in (residual, residual_out)
                                                                  if t is not None), default=0),
                                       device=target(x.device))
    if gate is not None and config is None:
        picked = gated_forward_tile(picked)
    config = cfg.fit_block_m(picked, rows_to_fit(m))
    if config.split and (config.prefetch or heads > 1):
        raise ValueError(f"the forward's split rows take neither prefetch nor per-head weights, got {config}")
    check_gate_config(gate, config)
    if config.centered_pass and is_rms_norm:
        raise ValueError(f"config.centered_pass computes LayerNorm's centred variance; RMSNorm has none, got {config}")
    if config.prefetch or config.joined_sums or (config.async_stages and not config.split):
        raise ValueError(f"config.prefetch, config.joined_sums and config.async_stages are backward options "
                         f"(the forward has no row loop to load ahead in but its split parts' — which stage with "
                         f"async_stages —, nor Σ(g·h) and Σg), got {config}")
    return config


def fwd_flags(x, weight, bias, residual, residual_out, rstd, gate, is_rms_norm: bool, x_hat_dtype,
              weight_offset: float) -> dict:
    """The forward's feature constexprs (those that do not depend on the tile)."""
    return dict(IS_RMS_NORM=is_rms_norm, HAS_WEIGHT=weight is not None, HAS_BIAS=bias is not None,
                HAS_RESIDUAL=residual is not None, STORE_RESIDUAL_OUT=residual_out is not None,
                STORE_STATS=rstd is not None, COMPUTE_DTYPE=tl_compute_dtype(x),
                X_HAT_DTYPE=tl_x_hat_dtype(x, x_hat_dtype),
                # LayerNorm has no offset: its forward drops the add (1 × 4096: 321 → 303 instructions
                # a thread, −0.7 µs on an H200); RMSNorm keeps it — without, ptxas gives its 1 × 8192
                # tile 40 registers against 32 (3 programs an SM against 4: +1.7 µs).
                HAS_WEIGHT_OFFSET=is_rms_norm or weight_offset != 0.0, **gate_flags(x, weight, gate, x_hat_dtype))


def fwd_arguments(config: cfg.TileConfig, x, out, weight, bias, residual, residual_out, mean, rstd, gate,
                  heads: int, eps: float, weight_offset: float, flags: dict, even_rows: Optional[bool] = None) -> tuple:
    """(tensors, tail, options) of a forward launch on `config`: the kernel takes tensors, the exchange
    slots (None without a split), tail, then options as keywords (a split adds SPLIT, SPLIT_STAGES).
    even_rows: whether BLOCK_M divides M (None: M % BLOCK_M == 0; a symbolic M passes what holds for every M)."""
    m, n = x.shape
    # LayerNorm only: its PTX loses 7-8 % of its instructions unmasked (346 → 321 at 4096), at
    # the same registers; RMSNorm's and the fused add's gain 9 and cost registers (ptxas, sm_90:
    # 32-35 → 40 at 4096, fewer programs an SM).
    even = not flags["IS_RMS_NORM"] and config.one_tile and n == config.block_n and (
        m % config.block_m == 0 if even_rows is None else even_rows)
    tensors = (x, residual, weight, bias, gate, out, residual_out, mean, rstd)
    tail = (m, n, heads, x.stride(0), x.stride(1), _stride(residual, 0), _stride(residual, 1), _stride(gate, 0),
            _stride(gate, 1), out.stride(0), _stride(residual_out, 0), eps, weight_offset)
    # Whole-row tiles read x once and write y once: L2 evict_first (STREAM) on rows of ≥ 2048 (H200
    # A/B, bf16, µs: LayerNorm 16384×2048 35.3 → 34.3, ×4096 69.1 → 68.0, ×8192 133.8 → 133.0; RMSNorm
    # ×2048 35.2 → 34.1, ×4096 68.1 → 67.8). The fused add (×4096 134.6 → 135.7) and short rows
    # (524288×128: LayerNorm 68.1 → 71.1, RMSNorm 66.8 → 68.1) lost, so keep the default; 1024 was not
    # measured. Rows that re-read x for y (TileConfig.reload) and RMSNorm's column tiles set their own
    # policy (evict_last, then evict_first): docs/design.md#heuristics.
    options = dict(BLOCK_M=config.block_m, BLOCK_N=config.block_n, ONE_TILE=config.one_tile,
                   EVEN_ROWS=even and not config.split,
                   STREAM=config.one_tile and residual is None and config.block_n >= _STREAM_MIN_N,
                   RELOAD=config.reload, COLUMN_STAGES=config.column_stages or None,
                   CENTERED_PASS=config.centered_pass, HOLD_WEIGHT=config.hold_weight,
                   BF16_PAIRS=cfg.takes_pairs(config, backward=False) and inline_ptx(x.device),
                   PTX=inline_ptx(x.device),
                   num_warps=config.num_warps, num_stages=config.num_stages, **flags,
                   **({"maxnreg": config.max_registers} if config.max_registers else {}))
    return tensors, tail, options


def bwd_tile(x, dbias, dresidual_out, rstd, gate, is_rms_norm: bool, heads: int, sms: int, aligned: bool,
             config: Optional[cfg.TileConfig] = None) -> cfg.TileConfig:
    """The backward's tile: `config` (checked) or the heuristics' pick, fitted to the rows of a head.
    aligned: whether every row loads as 16-byte vectors (`variant.vector_aligned`)."""
    m, n = x.shape
    if config is not None:
        cfg.check_covers(config, n)
    picked = config or cfg.tile_config(n, True, interpret(), heads=heads, multiprocessors=sms_for_tiles(gate, sms),
                                       residual=dresidual_out is not None, layer_norm=not is_rms_norm,
                                       element_size=x.element_size(), recompute=rstd is None, vector_aligned=aligned,
                                       device=target(x.device))
    if gate is not None and config is None:
        picked = gated_backward_tile(picked)
    config = cfg.fit_block_m(picked, rows_to_fit(m // heads))
    check_gate_config(gate, config)
    forward_only = [f for f in ("reload", "column_stages", "centered_pass", "hold_weight") if getattr(config, f)
                    and not (f == "reload" and config.split)]  # the backward's split parts re-read too
    if forward_only:  # else a forced config would run (and be timed) as the tile without them
        raise ValueError(f"config.{', config.'.join(forward_only)} shape the forward only (reload: and the "
                         f"backward's split parts); the backward has no such path, got {config}")
    return config


def bwd_flags(x, weight, dweight, dbias, dresidual_out, rstd, gate, is_rms_norm: bool, x_hat_dtype) -> dict:
    """The backward's feature constexprs (those that do not depend on the tile)."""
    return dict(IS_RMS_NORM=is_rms_norm, HAS_WEIGHT=dweight is not None, HAS_BIAS=dbias is not None,
                HAS_DRESIDUAL=dresidual_out is not None, RECOMPUTE_STATS=rstd is None,
                COMPUTE_DTYPE=tl_compute_dtype(x), X_HAT_DTYPE=tl_x_hat_dtype(x, x_hat_dtype),
                **gate_flags(x, weight, gate, x_hat_dtype))


def bwd_grid(config: cfg.TileConfig, x: Tensor, heads: int, sms: int):
    """grid(kernel): the backward's persistent grid, (programs × parts, heads), the programs fitted to
    those of the compiled kernel an SM holds (kernel None: as many as the config asks)."""
    m, n = x.shape
    parts = cfg.split_parts(config, n)

    def grid(kernel) -> Tuple[int, int]:
        programs = cfg.backward_grid(config, m // heads, sms, n=n, heads=heads, resident=resident(kernel, x.device))
        return programs * parts, heads

    return grid


def bwd_arguments(config: cfg.TileConfig, x, weight, dy, dresidual_out, mean, rstd, gate, dx, dw_partial,
                  db_partial, dgate, xchg, heads: int, eps: float, weight_offset: float, flags: dict,
                  pdl: bool) -> tuple:
    """(args, options) of a backward launch on `config`; pdl: let the finisher launch early."""
    m, n = x.shape
    args = (x, weight, dy, dresidual_out, mean, rstd, gate, dx, dw_partial, db_partial, dgate, xchg, m, n, heads,
            x.stride(0), x.stride(1), dy.stride(0), dy.stride(1), _stride(dresidual_out, 0),
            _stride(dresidual_out, 1), _stride(gate, 0), _stride(gate, 1), dx.stride(0), _stride(dgate, 0), eps,
            weight_offset)
    options = dict(
        BLOCK_M=config.block_m, BLOCK_N=config.block_n, ONE_TILE=config.one_tile,
        SPLIT=cfg.next_power_of_2(cfg.split_parts(config, n)), PREFETCH=config.prefetch, LAUNCH_DEPENDENTS=pdl,
        JOIN_SUMS=config.joined_sums, ASYNC_STAGES=config.async_stages or None, RELOAD=config.reload,
        JOIN_STATS=rstd is None and cfg.joins_stats(config, not flags["IS_RMS_NORM"]),
        EVEN_COLS=cfg.even_cols(config, n, x.element_size()),
        BF16_PAIRS=cfg.takes_pairs(config, backward=True) and inline_ptx(x.device), PTX=inline_ptx(x.device),
        num_warps=config.num_warps, num_stages=config.num_stages, **flags,
        **({"maxnreg": config.max_registers} if config.max_registers else {}),
    )
    return args, options


def finish_arguments(partials: Tensor, out: Tensor, out2: Tensor, count: int, programs: int, columns: int,
                     pdl: bool, tile_rows: Optional[int] = None) -> tuple:
    """(grid, args, options) of the finisher summing `programs` partial rows of `columns` from partials[k]
    into out (k = 0) and, with count 2, out2 (docs/design.md#finisher); pdl: wait for the backward's writes.
    tile_rows: the row count its tile is chosen for, where `programs` is symbolic (default: programs)."""
    finish = cfg.finish_config(interpret(), programs if tile_rows is None else tile_rows, columns)
    grid = (cfg.cdiv(columns, finish.block_n), count)
    args = (partials, out, out2, programs, columns, partials.stride(0))
    options = dict(BLOCK_G=finish.block_m, BLOCK_N=finish.block_n, USE_PDL=pdl, num_warps=finish.num_warps,
                   **({"launch_pdl": True} if pdl else {}))
    return grid, args, options
