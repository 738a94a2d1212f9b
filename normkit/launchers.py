"""The launchers: `launch_fwd` and `launch_bwd` write a norm's outputs into tensors their caller allocated.

Layering: functional → calls → ops → launchers → kernels. A launcher takes 2-D (M, N) views and weights of
shape (N,) or per-head (H, N). A signature's first call takes the full path: `config.tile_config` picks the
tile (a gate adjusts the pick), a forced config is checked, every scratch buffer (the backward's partial
sums, a split row's exchange slots) is allocated before the first launch, the kernels launch through
`normkit.launch` — a configuration the GPU compiler rejects runs as a conservative one
(`normkit.variant`) — and a launch plan is recorded (`normkit.plan`). Later calls with that
signature launch the plan; `planned_fwd` and `launch_bwd_plan` do the same for call plans
(`normkit.calls`). Without Triton (CPU tensors, no TRITON_INTERPRET) they run `normkit.reference`.
docs/design.md#launch-path has the whole path.
"""

from typing import Optional, Tuple

import torch

from . import config as cfg
from . import reference
from ._runtime import (dependent_launch, interpret, interpreter_rounds_to_nearest, kernels, multiprocessor_count,
                       uses_triton)
from .arguments import _STREAM_MIN_N  # noqa: F401  (tools/compile_targets.py and tools/ptx_stats.py read it here)
from .arguments import (bwd_arguments, bwd_flags, bwd_grid, bwd_tile, finish_arguments, fwd_arguments, fwd_flags,
                        fwd_tile, head_count, resident)
from .launch import bind, launch, launch_fitted
from .plan import PLANS, BwdPlan, FwdPlan, bwd_key, fwd_key, guard_device, plain
from .validation import stats_dtype
from .variant import FALLBACK_BWD, FALLBACK_FWD, run_compiled, vector_aligned

Tensor = torch.Tensor


def _contiguous(t: Optional[Tensor]) -> Optional[Tensor]:
    """Parameters and statistics are indexed densely by the kernels (a no-op when already dense)."""
    return None if t is None else t.contiguous()


class _NullGuard:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


_NULL_GUARD = _NullGuard()


def _device_guard(device: torch.device):
    """Launch on the tensors' device, not the current one (a no-op for CPU / current device)."""
    if device.type == "cuda" and device.index is not None and device.index != torch.cuda.current_device():
        return torch.cuda.device(device)
    return _NULL_GUARD


def _per_head(t: Optional[Tensor], heads: int) -> Optional[Tensor]:
    """(M, N) → (M/H, H, N) so the reference broadcasts a per-head (H, N) weight."""
    return t if t is None or heads == 1 else t.view(-1, heads, t.shape[-1])


def _split_buffer(config: cfg.TileConfig, parts: int, groups: int, device: torch.device):
    """The zeroed int64 exchange slots (groups, RING, 4·2·SPLIT·BLOCK_M + COUNT_WORDS) of a split-row launch
    (see `kernels.stats.publish_row_sums`; a round's words are tagged ≥ 1, so zeros never match; the counts start
    at 0)."""
    if interpret():
        raise ValueError("split-row configs need every program resident at once; "
                         "Triton's interpreter runs programs one after another")
    ring = kernels().stats.RING.value  # slots of the exchange's ring (interpret() imported the kernels)
    slot = 8 * cfg.next_power_of_2(parts) * config.block_m + kernels().stats.COUNT_WORDS.value
    return torch.zeros((groups * ring * slot,), dtype=torch.int64, device=device)


def _dtypes(*tensors: Optional[Tensor]) -> tuple:
    return tuple(None if t is None else t.dtype for t in tensors)


def launch_fwd(x: Tensor, out: Tensor, *, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               residual: Optional[Tensor] = None, residual_out: Optional[Tensor] = None,
               mean: Optional[Tensor] = None, rstd: Optional[Tensor] = None, eps: float,
               weight_offset: float = 0.0, is_rms_norm: bool = True,
               x_hat_dtype: Optional[torch.dtype] = None, gate: Optional[Tensor] = None,
               config: Optional[cfg.TileConfig] = None) -> Optional[FwdPlan]:
    """Write y into `out` (row-major (M, N)) and, when given, residual_out, mean and rstd (M,).
    Returns the launch plan that ran or was recorded (`normkit.plan`), None where there is none.

    x_hat_dtype: round x̂ to this dtype before the weight (Llama-style casting), None: no rounding.
    gate: (M, N), y = u·silu(gate) with u = x̂·(w + weight_offset) (no bias; `reference.u_dtype`
    says where u is rounded).
    """
    m, n = x.shape
    if m == 0:
        return
    if not uses_triton(x.device):
        heads = head_count(weight, bias)
        y, h, mu, r = reference.norm_fwd(
            _per_head(x, heads), weight, bias, _per_head(residual, heads), eps=eps,
            is_rms_norm=is_rms_norm, weight_offset=weight_offset, out_dtype=out.dtype,
            residual_dtype=None if residual_out is None else residual_out.dtype, x_hat_dtype=x_hat_dtype,
            gate=_per_head(gate, heads))
        for dst, src in ((out, y), (residual_out, h), (mean, mu), (rstd, r)):
            if dst is not None:
                dst.copy_(src.reshape(dst.shape))
        return None
    eps, weight_offset = float(eps), float(weight_offset)  # (the kernels' fp64 scalars, as a plan passes them)
    weight, bias = _contiguous(weight), _contiguous(bias)
    staged = []  # (destination, float32 stand-in) for outputs routed through float32
    if x.dtype == torch.float64 and interpret() and not interpreter_rounds_to_nearest():
        # Triton 3.6's interpreter converts float64 → bfloat16 wrongly, and where normkit cannot take over
        # its casts (_runtime.rounded_casts), bf16 outputs of a float64 input are stored as float32 and rounded here.
        if out.dtype == torch.bfloat16:
            staged.append((out, torch.empty(out.shape, dtype=torch.float32, device=x.device)))
            out = staged[-1][1]
        if residual_out is not None and residual_out.dtype == torch.bfloat16:
            staged.append((residual_out, torch.empty(residual_out.shape, dtype=torch.float32, device=x.device)))
            residual_out = staged[-1][1]
    key = fwd_key(x, out, weight, bias, residual, residual_out, mean, rstd, gate, is_rms_norm, x_hat_dtype,
                  weight_offset, config)
    planned = PLANS.get(key)
    if planned is not None:  # this signature ran before: launch what it ran (docs/design.md#launch-path)
        _launch_fwd_plan(planned, x, residual, weight, bias, gate, out, residual_out, mean, rstd, eps, weight_offset)
        for destination, stand_in in staged:
            destination.copy_(stand_in)
        return None if staged else planned
    heads = head_count(weight, bias)
    sms = multiprocessor_count(x.device)  # cached per device: split rows need every part resident
    config = fwd_tile(x, out, weight, bias, residual, residual_out, gate, is_rms_norm, heads, sms, config)
    flags = fwd_flags(x, weight, bias, residual, residual_out, rstd, gate, is_rms_norm, x_hat_dtype, weight_offset)
    ran = []  # (grid, args, kwargs, exchange slots) of the launch that ran: the plan

    def run(config: cfg.TileConfig) -> None:
        ran.clear()
        args, tail, options = fwd_arguments(config, x, out, weight, bias, residual, residual_out, mean, rstd, gate,
                                            heads, eps, weight_offset, flags)
        if not config.split:
            grid = (cfg.cdiv(m, config.block_m),)
            launch(kernels().norm_fwd_kernel, grid, *args, None, *tail, **options)
            ran.append((grid, (*args, None, *tail), options, 0))
            return
        # split rows: groups of `parts` programs, every program resident at once (the grid fitted to
        # the programs of the compiled kernel an SM holds, at most config.programs_per_sm)
        parts = cfg.split_parts(config, n)
        xchg = _split_buffer(config, parts, cfg.backward_grid(config, m, sms, n=n), x.device)

        def grid(kernel) -> Tuple[int]:
            return (cfg.backward_grid(config, m, sms, n=n, resident=resident(kernel, x.device)) * parts,)

        options = dict(options, SPLIT=cfg.next_power_of_2(parts), SPLIT_STAGES=config.async_stages or None)
        launched = launch_fitted(kernels().norm_fwd_kernel, grid, *args, xchg, *tail, **options)
        ran.append((launched, (*args, xchg, *tail), options, xchg.numel()))

    with _device_guard(x.device):
        run_compiled(run, config, cfg.fit_block_m(FALLBACK_FWD, m),
                      lambda: ("fwd", flags, x.dtype, out.dtype, _dtypes(residual, weight, bias, residual_out, gate)))
        planned = None
        if key is not None and ran and plain(x, out, weight, bias, residual, residual_out, mean, rstd, gate):
            launched, args, kwargs, xchg = ran[0]
            planned = FwdPlan(bind(kernels().norm_fwd_kernel, launched, args, kwargs), args[10:-2], xchg,
                              guard_device(x))
            PLANS.put(key, planned)
    for destination, stand_in in staged:
        destination.copy_(stand_in)
    return None if staged else planned


def launch_bwd(x: Tensor, dy: Tensor, dx: Tensor, *, weight: Optional[Tensor] = None,
               dweight: Optional[Tensor] = None, dbias: Optional[Tensor] = None,
               dresidual_out: Optional[Tensor] = None, mean: Optional[Tensor] = None,
               rstd: Optional[Tensor] = None, eps: float, weight_offset: float = 0.0,
               is_rms_norm: bool = True, x_hat_dtype: Optional[torch.dtype] = None,
               gate: Optional[Tensor] = None, dgate: Optional[Tensor] = None,
               config: Optional[cfg.TileConfig] = None) -> Optional[BwdPlan]:
    """Write dx (row-major (M, N)) and, when given, dweight and dbias (weight's shape), and dgate
    (row-major (M, N)) for a gated forward. Returns the launch plan that ran or was recorded, or None.

    x is the normalised input (residual_out when there was a residual). rstd None (and mean None
    for LayerNorm) recomputes the statistics. dweight must be given exactly when weight is, dgate
    exactly when gate is; dx must not overlap x or dy (rows wider than one tile are read twice).
    """
    for name, param, grad in (("weight", weight, dweight), ("gate", gate, dgate)):
        if (param is None) != (grad is None):  # one kernel flag for both (HAS_WEIGHT, HAS_GATE)
            raise ValueError(f"launch_bwd: d{name} must be given exactly when {name} is, got {name} "
                             f"{'None' if param is None else tuple(param.shape)} and d{name} "
                             f"{'None' if grad is None else tuple(grad.shape)}")
    m, n = x.shape
    if m == 0:
        for grad in (dweight, dbias):
            if grad is not None:
                grad.zero_()
        return None
    if not uses_triton(x.device):
        heads = head_count(weight, dbias)
        d_x, d_w, d_b, *d_gate = reference.norm_bwd(
            _per_head(x, heads), weight, _per_head(dy, heads), mean, rstd,
            _per_head(dresidual_out, heads), eps=eps, is_rms_norm=is_rms_norm,
            weight_offset=weight_offset, bias_dtype=None if dbias is None else dbias.dtype,
            param_ndim=2 if heads > 1 else 1, x_hat_dtype=x_hat_dtype, gate=_per_head(gate, heads))
        for dst, src in ((dx, d_x), (dweight, d_w), (dbias, d_b), (dgate, d_gate[0] if d_gate else None)):
            if dst is not None:
                dst.copy_(src.reshape(dst.shape))
        return None
    eps, weight_offset = float(eps), float(weight_offset)  # (the kernels' fp64 scalars, as a plan passes them)
    weight, mean, rstd = _contiguous(weight), _contiguous(mean), _contiguous(rstd)
    pdl = dependent_launch(x.device) and (dweight is not None or dbias is not None)
    key = bwd_key(x, dy, dx, weight, dweight, dbias, dresidual_out, mean, rstd, gate, dgate, is_rms_norm, x_hat_dtype,
                  pdl, config)
    planned = PLANS.get(key)
    if planned is not None:  # this signature ran before: launch what it ran (docs/design.md#launch-path)
        launch_bwd_plan(planned, x, weight, dy, dresidual_out, mean, rstd, gate, dx, dweight, dbias, dgate, eps,
                        weight_offset)
        return planned
    heads = head_count(weight, dbias)
    sms = multiprocessor_count(x.device)
    # (the alignment check, ~3 µs of host time on a CPU runner, only where the tile may stage its loads)
    aligned = not cfg.may_stage(n, x.element_size()) or vector_aligned(n, x, dy, dx, dresidual_out, gate, dgate)
    config = bwd_tile(x, dbias, dresidual_out, rstd, gate, is_rms_norm, heads, sms, aligned, config)
    acc = reference.compute_dtype(x.dtype)
    flags = bwd_flags(x, weight, dweight, dbias, dresidual_out, rstd, gate, is_rms_norm, x_hat_dtype)
    ran = []  # what the configuration that ran launched: the plan

    def run(config: cfg.TileConfig) -> None:
        ran.clear()
        # Every buffer is allocated before the first launch: an out-of-memory error leaves the
        # caller's dx, dweight and dbias untouched. They are sized for the grid the config asks
        # for; the grid launched may be smaller (fewer of the compiled kernel's programs fit).
        asked = cfg.backward_grid(config, m // heads, sms, n=n, heads=heads)
        parts = cfg.split_parts(config, n)
        grads = [g for g in (dweight, dbias) if g is not None]  # finished together, in one launch
        partials = torch.empty((len(grads), asked, heads * n), dtype=acc, device=x.device) if grads else None
        dw_partial, db_partial = _partial_rows(partials, dweight, dbias)
        xchg = _split_buffer(config, parts, asked * heads, x.device) if parts > 1 else None
        grid = bwd_grid(config, x, heads, sms)
        args, options = bwd_arguments(config, x, weight, dy, dresidual_out, mean, rstd, gate, dx, dw_partial,
                                      db_partial, dgate, xchg, heads, eps, weight_offset, flags, pdl)
        launched = launch_fitted(kernels().norm_bwd_kernel, grid, *args, **options)
        programs = launched[0] // parts
        finished = None
        if grads:
            finish_grid, finish_args, finish_options = finish_arguments(partials, grads[0], grads[-1], len(grads),
                                                                        programs, heads * n, pdl)
            launch(kernels().sum_partials_kernel, finish_grid, *finish_args, **finish_options)
            finished = (finish_grid, finish_args, finish_options)
        ran.append((launched, args, options, None if partials is None else partials.shape,
                    0 if xchg is None else xchg.numel(), finished))

    with _device_guard(x.device):
        run_compiled(run, config, cfg.fit_block_m(FALLBACK_BWD, m // heads),
                      lambda: ("bwd", flags, x.dtype, dy.dtype, dx.dtype,
                               _dtypes(weight, dweight, dbias, dresidual_out, rstd, gate, dgate)))
        planned = None
        if key is not None and ran and plain(x, dy, dx, weight, dweight, dbias, dresidual_out, mean, rstd, gate, dgate):
            launched, args, options, partials, xchg, finished = ran[0]
            finish, finish_ints = None, ()
            if finished is not None:
                finish = bind(kernels().sum_partials_kernel, finished[0], finished[1], finished[2])
                finish_ints = finished[1][3:]
            planned = BwdPlan(bind(kernels().norm_bwd_kernel, launched, args, options), args[12:-2],
                              None if partials is None else (tuple(partials), acc), xchg, finish, finish_ints,
                              guard_device(x))
            PLANS.put(key, planned)
    return planned


def _partial_rows(partials: Optional[Tensor], dweight, dbias) -> tuple:
    """The backward's DW_PARTIAL and DB_PARTIAL: partials[0] and partials[-1] where asked for (the
    kernel takes their data pointers: partials itself stands for partials[0], no view to build)."""
    if partials is None:
        return None, None
    if dweight is None:
        return None, partials
    return partials, None if dbias is None else partials[-1]


def launch_bwd_plan(planned: BwdPlan, x, weight, dy, dresidual_out, mean, rstd, gate, dx, dweight, dbias, dgate,
                    eps, weight_offset) -> None:
    """launch_bwd's launches for a signature that ran before (on the plan's device when that is not the
    current one)."""
    if planned.device is None:
        _launch_bwd_plan(planned, x, weight, dy, dresidual_out, mean, rstd, gate, dx, dweight, dbias, dgate, eps,
                         weight_offset)
    else:
        with torch.cuda.device(planned.device):
            _launch_bwd_plan(planned, x, weight, dy, dresidual_out, mean, rstd, gate, dx, dweight, dbias, dgate, eps,
                             weight_offset)


def _launch_bwd_plan(planned: BwdPlan, x, weight, dy, dresidual_out, mean, rstd, gate, dx, dweight, dbias, dgate,
                     eps, weight_offset) -> None:
    """launch_bwd's launches for a signature that ran before: its buffers (every one before the first
    launch, as the full path), the backward, then the finisher."""
    partials = None
    if planned.partials is not None:
        shape, acc = planned.partials
        partials = torch.empty(shape, dtype=acc, device=x.device)
    xchg = torch.zeros((planned.xchg,), dtype=torch.int64, device=x.device) if planned.xchg else None
    planned.go(x, weight, dy, dresidual_out, mean, rstd, gate, dx, *_partial_rows(partials, dweight, dbias), dgate,
               xchg, *planned.ints, eps, weight_offset)
    if planned.finish is not None:
        planned.finish(partials, dweight if dweight is not None else dbias, dbias if dbias is not None else dweight,
                       *planned.finish_ints)


def planned_fwd(planned: FwdPlan, x, weight, bias, residual, gate, out_dtype, residual_out_dtype, store_stats,
                is_rms_norm, eps, weight_offset) -> tuple:
    """launch_fwd's launch for a call plan (`normkit.calls`): (out, residual_out, mean, rstd), None where not
    produced, allocated like x (of any rank: the plan holds the strides of its 2-D view) before the launch."""
    out = torch.empty_like(x, dtype=out_dtype, memory_format=torch.contiguous_format)
    residual_out = None if residual_out_dtype is None else torch.empty_like(
        x, dtype=residual_out_dtype, memory_format=torch.contiguous_format)
    mean = rstd = None
    if store_stats:
        rows, acc = out.numel() // x.shape[-1], stats_dtype(x.dtype)
        rstd = torch.empty(rows, dtype=acc, device=x.device)
        if not is_rms_norm:
            mean = torch.empty(rows, dtype=acc, device=x.device)
    _launch_fwd_plan(planned, x, residual, weight, bias, gate, out, residual_out, mean, rstd, eps, weight_offset)
    return out, residual_out, mean, rstd


def _launch_fwd_plan(planned: FwdPlan, x, residual, weight, bias, gate, out, residual_out, mean, rstd, eps,
                     weight_offset) -> None:
    """The forward's launch for a signature that ran before: its exchange slots, then the kernel (on the
    plan's device when that is not the current one)."""
    xchg = torch.zeros((planned.xchg,), dtype=torch.int64, device=x.device) if planned.xchg else None
    if planned.device is None:
        planned.go(x, residual, weight, bias, gate, out, residual_out, mean, rstd, xchg, *planned.ints, eps,
                   weight_offset)
    else:
        with torch.cuda.device(planned.device):
            planned.go(x, residual, weight, bias, gate, out, residual_out, mean, rstd, xchg, *planned.ints, eps,
                       weight_offset)
