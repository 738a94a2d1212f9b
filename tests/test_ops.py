"""rms_norm_fwd / rms_norm_bwd (the quack-aligned ops) against the float64 reference."""

import dataclasses
import itertools

import pytest
import torch

import normkit
from normkit import config as cfg
from normkit import launchers, ops, variant
from tests.utils import assert_matches, make_inputs, ref_bwd, ref_fwd

DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.float64]

# (1,1); odd N; several rows per program; a row longer than one tile; N > 65536.
SHAPES = [(1, 1), (3, 7), (64, 256), (5, 1000), (2, 70000)]


def _check_fwd_bwd(x, w, dy, dtype, *, recompute=False):
    """y from rms_norm_fwd, then dx and dweight from rms_norm_bwd (with the saved rstd, or
    recomputing it), each against float64; returns the forward's rstd."""
    out, _, rstd = normkit.rms_norm_fwd(x, w, store_rstd=True)
    assert out.shape == x.shape and rstd.shape == (x.numel() // x.shape[-1],)
    assert_matches(out, ref_fwd(x, w, 1e-6)[0], dtype, "y")
    dx, dweight, _, _ = normkit.rms_norm_bwd(x, w, dy, None if recompute else rstd)
    dx_ref, dw_ref = ref_bwd(x, w, dy, 1e-6)
    assert_matches(dx, dx_ref, dtype, "dx")
    assert_matches(dweight, dw_ref, dtype, "dweight")
    return rstd


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,n", SHAPES)
def test_forward_matches_float64(m, n, dtype, device):
    x, w, _ = make_inputs(m, n, dtype, device)
    out, residual_out, rstd = normkit.rms_norm_fwd(x, w, eps=1e-6, store_rstd=True)
    y_ref, rstd_ref = ref_fwd(x, w, 1e-6)
    assert out.dtype == dtype and residual_out is x
    assert rstd.dtype == (torch.float64 if dtype == torch.float64 else torch.float32)
    assert_matches(out, y_ref, dtype, "y")
    assert_matches(rstd, rstd_ref, torch.float32 if dtype != torch.float64 else dtype, "rstd")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,n", SHAPES)
@pytest.mark.parametrize("saved", [True, False], ids=["saved_rstd", "recompute_rstd"])
def test_backward_matches_float64(m, n, dtype, saved, device):
    x, w, dy = make_inputs(m, n, dtype, device, seed=1)
    rstd = normkit.rms_norm_fwd(x, w, store_rstd=True)[2] if saved else None
    dx, dweight, dbias, dresidual = normkit.rms_norm_bwd(x, w, dy, rstd, eps=1e-6)
    dx_ref, dw_ref = ref_bwd(x, w, dy, 1e-6)
    assert dbias is None and dresidual is None
    assert dx.dtype == dtype and dweight.dtype == w.dtype
    if n == 1:  # x̂ = ±1 up to eps: dx is ~0 in exact math, only its size is meaningful
        assert dx.double().abs().max().item() < 1e-2
    else:
        assert_matches(dx, dx_ref, dtype, "dx")
    assert_matches(dweight, dw_ref, dtype, "dweight")


def test_no_weight(device):
    x, _, dy = make_inputs(9, 40, torch.float32, device, weight=False)
    out, _, rstd = normkit.rms_norm_fwd(x, None)
    assert rstd is None
    assert_matches(out, ref_fwd(x, None, 1e-6)[0], torch.float32)
    dx, dweight, _, _ = normkit.rms_norm_bwd(x, None, dy)
    assert dweight is None
    assert_matches(dx, ref_bwd(x, None, dy, 1e-6)[0], torch.float32)


def test_recompute_and_saved_rstd_agree(device):
    x, w, dy = make_inputs(33, 300, torch.float32, device, seed=2)
    rstd = normkit.rms_norm_fwd(x, w, store_rstd=True)[2]
    saved = normkit.rms_norm_bwd(x, w, dy, rstd)
    recomputed = normkit.rms_norm_bwd(x, w, dy, None)
    torch.testing.assert_close(saved[0], recomputed[0], rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(saved[1], recomputed[1], rtol=1e-6, atol=1e-6)


def test_saved_rstd_is_used(device):
    """A saved rstd is what the backward uses: doubling it changes dx accordingly."""
    x, w, dy = make_inputs(4, 64, torch.float64, device, seed=3)
    rstd = normkit.rms_norm_fwd(x, w, store_rstd=True)[2]
    dx, _, _, _ = normkit.rms_norm_bwd(x, w, dy, rstd * 2)
    r = (rstd * 2).unsqueeze(1)
    g = dy * w
    expected = r * g - x * r ** 3 * (g * x).sum(1, keepdim=True) / 64
    torch.testing.assert_close(dx, expected)


@pytest.mark.parametrize("shape", [(0, 16), (2, 0, 16)])
def test_zero_rows(shape, device):
    x = torch.randn(shape, device=device)
    w = torch.randn(16, device=device)
    out, _, rstd = normkit.rms_norm_fwd(x, w, store_rstd=True)
    assert out.shape == shape and rstd.shape == (0,)
    dx, dweight, _, _ = normkit.rms_norm_bwd(x, w, torch.randn(shape, device=device), rstd)
    assert dx.shape == shape
    assert torch.equal(dweight, torch.zeros_like(w))


def test_three_dim_input(device):
    x, w, dy = make_inputs(24, 96, torch.bfloat16, device, seed=4)
    x3, dy3 = x.view(2, 12, 96), dy.view(2, 12, 96)
    rstd = _check_fwd_bwd(x3, w, dy3, torch.bfloat16)
    assert rstd.shape == (24,)


def _strided_inputs(kind, device):
    base, w, dy = make_inputs(40, 70, torch.float32, device, seed=5)
    if kind == "row_stride":  # row stride 70 > N = 50
        return base[:, :50], w[:50], dy[:, :50]
    if kind == "col_stride":  # last-dim stride 40 != 1
        return base.t(), torch.randn(40, device=device), dy.t()
    if kind == "expanded_dy":  # dy as autograd produces it for out.sum(): every stride 0
        return base, w, torch.ones(1, 1, device=device).expand(40, 70)
    return base.view(4, 10, 70).transpose(0, 1), w, dy.view(4, 10, 70).transpose(0, 1)


@pytest.mark.parametrize("kind", ["row_stride", "col_stride", "expanded_dy", "transposed_3d"])
def test_non_contiguous_inputs(kind, device):
    x, w, dy = _strided_inputs(kind, device)
    assert not (x.is_contiguous() and dy.is_contiguous())
    _check_fwd_bwd(x, w, dy, torch.float32)


def test_fp16_large_magnitude_does_not_overflow(device):
    """|x| in the hundreds: x² overflows fp16 (max 65504) unless statistics are fp32."""
    x, w, dy = make_inputs(8, 512, torch.float16, device, seed=6)
    x = (x.float() * 300).half()
    _check_fwd_bwd(x, w, dy, torch.float16, recompute=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_backward_is_bitwise_deterministic(dtype, device):
    x, w, dy = make_inputs(300, 1000, dtype, device, seed=7)
    first = normkit.rms_norm_bwd(x, w, dy)
    for _ in range(3):
        again = normkit.rms_norm_bwd(x, w, dy)
        assert torch.equal(first[0], again[0]) and torch.equal(first[1], again[1])


# Configurations the heuristics pick for large shapes (column tiles, stacked rows, persistent
# programs owning several row blocks), forced onto shapes small enough for the interpreter.
FORCED = [
    cfg.TileConfig(block_m=1, block_n=32, one_tile=False),  # ragged column tiles, one row a block
    cfg.TileConfig(block_m=4, block_n=64, one_tile=False),  # column tiles with stacked rows
    cfg.TileConfig(block_m=8, block_n=128, one_tile=True),  # whole row, stacked, masked tail rows
    # whole row, the next row block prefetched (backward only; the forward runs it without)
    cfg.TileConfig(block_m=4, block_n=128, one_tile=True, programs_per_sm=2, prefetch=True),
    # Σ(g·h) and Σg in one reduction tree: one row a tile (the heuristic's), and stacked rows
    cfg.TileConfig(block_m=1, block_n=128, one_tile=True, programs_per_sm=2, prefetch=True, joined_sums=True),
    cfg.TileConfig(block_m=4, block_n=128, one_tile=True, joined_sums=True),
]


def _label(c):
    return (f"m{c.block_m}n{c.block_n}{'one' if c.one_tile else 'tiled'}{'-prefetch' if c.prefetch else ''}"
            f"{'-joined' if c.joined_sums else ''}")


@pytest.mark.parametrize("config", FORCED, ids=_label)
@pytest.mark.parametrize("recompute", [False, True])
def test_forced_configs_write_every_element(config, recompute, device):
    m, n = 37, 100
    x, w, dy = make_inputs(m, n, torch.float32, device, seed=8)
    out = torch.full((m, n), float("nan"), device=device)
    rstd = torch.full((m,), float("nan"), device=device)
    ops.launch_fwd(x, out, weight=w, rstd=rstd, eps=1e-6, config=dataclasses.replace(config, prefetch=False, joined_sums=False))
    y_ref, rstd_ref = ref_fwd(x, w, 1e-6)
    assert_matches(out, y_ref, torch.float32, "y")
    assert_matches(rstd, rstd_ref, torch.float32, "rstd")
    dx = torch.full((m, n), float("nan"), device=device)
    dweight = torch.full((n,), float("nan"), device=device)
    ops.launch_bwd(x, dy, dx, weight=w, dweight=dweight, rstd=None if recompute else rstd, eps=1e-6,
                   config=config)
    dx_ref, dw_ref = ref_bwd(x, w, dy, 1e-6)
    assert_matches(dx, dx_ref, torch.float32, "dx")
    assert_matches(dweight, dw_ref, torch.float32, "dweight")


def test_more_programs_than_rows_still_write_partials(device, monkeypatch):
    """The persistent grid may hold programs that own no row: their partial rows must be zeros."""
    monkeypatch.setattr(launchers, "multiprocessor_count", lambda device: 64)
    x, w, dy = make_inputs(5, 48, torch.float32, device, seed=9)
    config = cfg.TileConfig(block_m=1, block_n=16, one_tile=False, programs_per_sm=1)
    dx, dweight = torch.empty(5, 48, device=device), torch.full((48,), 7.0, device=device)
    ops.launch_bwd(x, dy, dx, weight=w, dweight=dweight, eps=1e-6, config=config)
    assert_matches(dweight, ref_bwd(x, w, dy, 1e-6)[1], torch.float32, "dweight")


def test_resident_programs_follow_cuda_occupancy_rules():
    """Registers per warp in units of 256 (per thread rounded up to a multiple of 8), thread slots,
    shared memory plus the driver's 1 KiB a program, and 32 programs an SM at most — the cases
    ptxas produced for the backward tiles (tools/ptx_stats.py, sm_90)."""
    fit = cfg.resident_programs
    assert fit(128, 4, 0) == 4 and fit(133, 4, 0) == 3  # LayerNorm 1 × 2048 on 4 warps: 133 registers
    assert fit(128, 8, 0) == 2 and fit(172, 8, 0) == 1  # LayerNorm fp32 1 × 4096 on 8 warps: 172
    assert fit(121, 4, 0) == 4 and fit(120, 4, 0) == 4  # 121 rounds up to 128: still 4
    assert fit(128, 16, 0) == 1 and fit(16, 1, 0) == 32  # one 16-warp program; the 32-program cap
    assert fit(32, 4, 100 * 1024) == 2  # shared memory: 2 × (100 KiB + 1 KiB) ≤ 228 KiB < 3 ×
    assert fit(32, 4, 0, sm_threads=1024) == 8  # thread slots
    # the grid: at most the programs that fit, never fewer than one a multiprocessor
    config = cfg.TileConfig(1, 1024, True, 4, programs_per_sm=4)
    assert cfg.backward_grid(config, 10 ** 6, 132) == 528
    assert cfg.backward_grid(config, 10 ** 6, 132, resident=3) == 396
    assert cfg.backward_grid(config, 10 ** 6, 132, resident=8) == 528  # no more than asked
    assert cfg.backward_grid(config, 10 ** 6, 132, resident=0) == 132
    assert cfg.backward_grid(config, 100, 132, resident=3) == 100  # at most one program a row block


def test_grid_shrinks_to_the_programs_that_fit(device, monkeypatch):
    """When fewer programs of the compiled kernel fit on an SM than the tile asks for, the grid
    shrinks to them: the partial rows were allocated for the grid asked for, and the finisher
    sums only the rows written, for both gradients (dweight and dbias: the second one starts a
    buffer's length in)."""
    from normkit import arguments, reference

    monkeypatch.setattr(launchers, "multiprocessor_count", lambda device: 4)
    monkeypatch.setattr(arguments, "resident", lambda kernel, device: 1)  # (the backward grid's residency)
    launched = []
    real = launchers.launch_fitted
    monkeypatch.setattr(launchers, "launch_fitted", lambda fn, grid, *a, **k: launched.append(real(fn, grid, *a, **k))
                        or launched[-1])
    x, w, dy = make_inputs(20, 48, torch.float32, device, seed=3)
    b = torch.zeros(48, device=device)
    config = cfg.TileConfig(block_m=1, block_n=64, one_tile=True, programs_per_sm=3)  # asks for 12 programs
    dx = torch.empty(20, 48, device=device)
    dweight, dbias = torch.full((48,), 7.0, device=device), torch.full((48,), 7.0, device=device)
    ops.launch_bwd(x, dy, dx, weight=w, dweight=dweight, dbias=dbias, eps=1e-5, is_rms_norm=False, config=config)
    assert launched == [(4, 1)]  # 4 SMs × 1 program that fits
    dx_ref, dw_ref, db_ref = reference.norm_bwd(x.double().cpu(), w.double().cpu(), dy.double().cpu(), eps=1e-5,
                                                is_rms_norm=False, bias_dtype=torch.float64)
    assert_matches(dx, dx_ref, torch.float32, "dx")
    assert_matches(dweight, dw_ref, torch.float32, "dweight")
    assert_matches(dbias, db_ref, torch.float32, "dbias")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="compiled kernels report their registers on a GPU")
def test_grid_fits_the_compiled_kernel_on_the_gpu(monkeypatch):
    """On the GPU the backward's grid is min(programs asked, programs that fit) an SM, from the
    compiled kernel's registers (the fused add's fp32 1 × 2048 tile asks for 4 an SM; ptxas gave
    it 158 registers on sm_90, 3 fitting) — and the result is right either way."""
    from normkit._runtime import multiprocessor_limits

    seen = []
    real = launchers.launch_fitted

    def spy(fn, grid, *args, **kwargs):
        def grid_for(kernel):
            seen.append((kernel, grid(kernel)))
            return seen[-1][1]
        return real(fn, grid_for, *args, **kwargs)

    monkeypatch.setattr(launchers, "launch_fitted", spy)
    x, w, dy = make_inputs(4096, 2048, torch.float32, "cuda", seed=5)
    dres = torch.randn_like(x)
    dx, dweight = torch.empty_like(x), torch.empty_like(w)
    ops.launch_bwd(x, dy, dx, weight=w, dweight=dweight, dresidual_out=dres, eps=1e-6)
    (kernel, grid), = seen
    sms = launchers.multiprocessor_count(x.device)
    fit = cfg.resident_programs(kernel.n_regs, kernel.metadata.num_warps, kernel.metadata.shared,
                                *multiprocessor_limits(x.device))
    asked = cfg.tile_config(2048, True, False, multiprocessors=sms, residual=True, element_size=4).programs_per_sm
    assert 1 <= fit and grid == (sms * min(asked, fit), 1)
    dx_ref, dw_ref = ref_bwd(x, w, dy, 1e-6)
    assert_matches(dx, dx_ref + dres.double().cpu(), torch.float32, "dx")
    assert_matches(dweight, dw_ref, torch.float32, "dweight")


def test_offsets_beyond_int32(device):
    """Row offsets past 2**31 elements need 64-bit index math (the interpreter emulates int32
    overflow, so a 32-bit offset crashes or reads the wrong rows). The large buffer is
    allocated lazily: only the touched rows cost memory."""
    m, n, stride = 70000, 8, 32768  # last row starts at 2.29e9 elements
    big = torch.empty(m * stride, dtype=torch.float16, device=device)
    x = big.as_strided((m, n), (stride, 1))
    g = torch.Generator().manual_seed(10)
    x.copy_(torch.randn(m, n, generator=g))
    w = torch.randn(n, generator=g).half().to(device)
    dy = torch.randn(m, n, generator=g).half().to(device)
    _check_fwd_bwd(x, w, dy, torch.float16)
    # the prefetching backward computes its row offsets in its own helper (_load_rows)
    dx = torch.full((m, n), float("nan"), dtype=torch.float16, device=device)
    dweight = torch.full((n,), float("nan"), dtype=torch.float16, device=device)
    ops.launch_bwd(x, dy, dx, weight=w, dweight=dweight, eps=1e-6,
                   config=cfg.TileConfig(4096, 8, True, programs_per_sm=2, prefetch=True))
    dx_ref, dw_ref = ref_bwd(x, w, dy, 1e-6)
    assert_matches(dx, dx_ref, torch.float16, "dx (prefetch)")
    assert_matches(dweight, dw_ref, torch.float16, "dweight (prefetch)")


def test_prefetch_joined_sums_and_async_stages_are_backward_options_of_whole_rows(device):
    with pytest.raises(ValueError, match="prefetch holds the next row block in registers: it needs one_tile=True"):
        cfg.TileConfig(2, 1024, False, prefetch=True)
    x = torch.randn(4, 64, device=device)
    with pytest.raises(ValueError, match="config.prefetch, config.joined_sums and config.async_stages are backward options"):
        ops.launch_fwd(x, torch.empty_like(x), eps=1e-6, config=cfg.TileConfig(4, 64, True, prefetch=True))
    with pytest.raises(ValueError, match="joined_sums reduces a whole row held in registers: it needs one_tile=True"):
        cfg.TileConfig(2, 1024, False, joined_sums=True)
    with pytest.raises(ValueError, match="config.joined_sums and config.async_stages are backward options"):
        ops.launch_fwd(x, torch.empty_like(x), eps=1e-6, config=cfg.TileConfig(4, 64, True, joined_sums=True))
    with pytest.raises(ValueError, match="async_stages is 0 .* or a depth of 2 or more, got 1"):
        cfg.TileConfig(2, 1024, True, async_stages=1)
    for bad in (dict(one_tile=False), dict(prefetch=True), dict(split=True, prefetch=True)):
        with pytest.raises(ValueError, match="async_stages pipelines the row loop's loads of whole rows or split "
                                             "parts: it needs one_tile=True and prefetch=False"):
            cfg.TileConfig(2, 1024, **{"one_tile": True, **bad}, async_stages=3)
    assert cfg.TileConfig(1, 1024, True, split=True, async_stages=3).async_stages == 3  # split parts stage too
    with pytest.raises(ValueError, match="config.async_stages are backward options"):
        ops.launch_fwd(x, torch.empty_like(x), eps=1e-6, config=cfg.TileConfig(4, 64, True, async_stages=2))


def test_backward_stages_loads_for_two_byte_rows_of_128_256_and_1024_to_8192():
    """The GPU heuristic: 2-byte rows of 128 and 256 (QK-norm heads) and of 1024 … 8192 stage their
    loads 3 deep in shared memory, any family but the fused add at 8192 (the fused LayerNorm stages
    there); short rows on one warp (the fused add on two), LayerNorm's with half RMSNorm's rows and twice
    the programs an SM; 4- and 8-byte rows, the fused add's 8192 and other widths load ahead in
    registers (prefetch) or not at all. Never both at once. (Rows of 16384: split parts, staged but
    for 8-byte ones.)"""
    widths = (100, 128, 200, 256, 512, 513, 1024, 2048, 3000, 4096, 8192, 16384)
    for n, residual, layer_norm, size in itertools.product(widths, (False, True), (False, True), (2, 4, 8)):
        config = cfg.tile_config(n, True, False, multiprocessors=132, residual=residual, layer_norm=layer_norm,
                                 element_size=size)
        whole = cfg.next_power_of_2(n)
        staged = size == 2 and (whole in (128, 256) or 1024 <= whole <= (4096 if residual and not layer_norm else 8192))
        # and the split parts of rows past 8192 (test_backward_split_parts_stage_their_loads)
        staged |= whole == 16384 and size in (2, 4)
        deep = 4 if whole == 16384 and size == 4 and layer_norm else 3  # LayerNorm's fp32 parts: four deep
        assert config.async_stages == (deep if staged else 0), (n, residual, layer_norm, size, config)
        if staged and whole <= 256:
            elements = 2048 if residual or not layer_norm else 1024
            assert (config.block_m * whole, config.num_warps, config.programs_per_sm) == (
                (elements, 2, 4) if residual else (elements, 1, 8) if layer_norm else (elements, 1, 4)), config
        assert not (config.async_stages and config.prefetch)
        plain = size == 4 and cfg.next_power_of_2(n) == 4096 and not residual  # config.backward.PLAIN_FP32_4096
        if size != 2 and 1024 <= cfg.next_power_of_2(n) <= 8192:
            assert config.prefetch != plain, (n, residual, layer_norm, size, config)
        # rows that do not load as 16-byte vectors cannot be staged (cp.async): the prefetching tile
        unaligned = cfg.tile_config(n, True, False, multiprocessors=132, residual=residual, layer_norm=layer_norm,
                                    element_size=size, vector_aligned=False)
        assert not unaligned.async_stages
        assert unaligned.prefetch != plain or not 1024 <= cfg.next_power_of_2(n) <= 8192


def test_vector_aligned_rows():
    """variant.vector_aligned: what picks a staged backward tile (N, row strides, column strides and
    data pointers as Triton's launch specialises them)."""
    x = torch.empty(8, 2048, dtype=torch.bfloat16)
    assert variant.vector_aligned(2048, x, torch.empty_like(x), torch.empty_like(x), None)
    assert variant.vector_aligned(1024, x[:, :1024])  # a column slice: row stride 2048
    assert not variant.vector_aligned(1000, x[:, :1000])  # N not a multiple of 16
    assert variant.vector_aligned(1024, x[:, 8:1032])  # data 16 bytes in: still aligned
    assert not variant.vector_aligned(1024, x[:, 1:1025])  # data 2 bytes in
    assert not variant.vector_aligned(1000, torch.empty(8, 1000, dtype=torch.bfloat16))
    assert not variant.vector_aligned(2048, x, torch.empty(2048, 8, dtype=torch.bfloat16).t())  # column stride 8
    assert not variant.vector_aligned(1024, torch.empty(8, 1032, dtype=torch.bfloat16)[:, :1024])  # row stride 1032


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_backward_with_loads_staged_in_shared_memory(device, stages):
    """async_stages (the row loop's loads pipelined through shared memory on a GPU; the interpreter
    runs the loop as written): RMSNorm, LayerNorm with bias and the fused add's dresidual_out against
    float64, with partial row blocks (M not a multiple of the tile's rows) and masked columns."""
    from normkit import arguments, reference

    for m, n, rms, residual in ((37, 256, True, False), (37, 200, False, False), (21, 256, True, True)):
        g = torch.Generator().manual_seed(m * n + stages)
        x, dy, dres = (torch.randn(m, n, generator=g) for _ in range(3))
        w, b = 1 + 0.1 * torch.randn(n, generator=g), torch.randn(n, generator=g)
        mean, rstd = x.double().mean(1), (x.double().var(1, unbiased=False) + 1e-5).rsqrt()
        if rms:
            mean, rstd = None, (x.double().square().mean(1) + 1e-5).rsqrt()
        mean, rstd = (None if t is None else t.float() for t in (mean, rstd))  # as a forward saves them
        dx, dweight = torch.empty(m, n, device=device), torch.empty(n, device=device)
        dbias = None if rms else torch.empty(n, device=device)
        config = cfg.TileConfig(4, 256, True, 2, programs_per_sm=1, async_stages=stages)
        ops.launch_bwd(x.to(device), dy.to(device), dx, weight=w.to(device), dweight=dweight, dbias=dbias,
                       dresidual_out=dres.to(device) if residual else None,
                       mean=None if rms else mean.to(device), rstd=rstd.to(device), eps=1e-5,
                       is_rms_norm=rms, config=config)
        want = reference.norm_bwd(x.double(), w.double(), dy.double(), mean, rstd,
                                  dres.double() if residual else None, eps=1e-5, is_rms_norm=rms,
                                  bias_dtype=None if rms else torch.float64)
        assert_matches(dx, want[0], torch.float32, "dx")
        assert_matches(dweight, want[1], torch.float32, "dweight")
        if not rms:
            assert_matches(dbias, want[2], torch.float32, "dbias")


def test_backward_register_cap_reaches_the_launch(device, monkeypatch):
    """A backward config's max_registers reaches the launch as Triton's maxnreg (the grid is then
    fitted to the programs the capped kernel leaves resident), none without it; the capped launch
    against float64 (RMSNorm and LayerNorm, a partial row block, masked columns)."""
    from normkit import arguments, reference

    seen = []
    real = launchers.launch_fitted
    monkeypatch.setattr(launchers, "launch_fitted", lambda fn, grid, *a, **k: seen.append(k.get("maxnreg"))
                        or real(fn, grid, *a, **k))
    m, n = 19, 200
    g = torch.Generator().manual_seed(11)
    x, dy = torch.randn(m, n, generator=g), torch.randn(m, n, generator=g)
    w = 1 + 0.1 * torch.randn(n, generator=g)
    for rms, cap in ((True, 128), (False, 96), (True, 0)):
        mean = None if rms else x.double().mean(1)
        var = x.double().square().mean(1) if rms else x.double().var(1, unbiased=False)
        rstd = (var + 1e-5).rsqrt()
        dx, dweight = torch.empty(m, n, device=device), torch.empty(n, device=device)
        dbias = None if rms else torch.empty(n, device=device)
        ops.launch_bwd(x.to(device), dy.to(device), dx, weight=w.to(device), dweight=dweight, dbias=dbias,
                       mean=None if rms else mean.float().to(device), rstd=rstd.float().to(device), eps=1e-5,
                       is_rms_norm=rms, config=cfg.TileConfig(4, 256, True, 2, max_registers=cap))
        want = reference.norm_bwd(x.double(), w.double(), dy.double(), mean, rstd, None, eps=1e-5,
                                  is_rms_norm=rms, bias_dtype=None if rms else torch.float64)
        assert_matches(dx, want[0], torch.float32, "dx")
        assert_matches(dweight, want[1], torch.float32, "dweight")
        assert seen[-1] == (cap or None), (seen, cap)


def test_backward_refuses_the_forward_s_tile_flags(device):
    """reload, column_stages, centered_pass and hold_weight shape the forward's tiles; a backward config
    asking for them is refused by name rather than launched (and timed by tools/tune.py) as the tile without."""
    x = torch.randn(4, 300, device=device)
    for config in (cfg.TileConfig(4, 512, True, 4, reload=True),
                   cfg.TileConfig(1, 256, False, 4, column_stages=3),
                   cfg.TileConfig(1, 256, False, 4, centered_pass=True),
                   cfg.TileConfig(1, 256, True, 4, split=True, hold_weight=True)):
        flag = next(f for f in ("reload", "column_stages", "centered_pass", "hold_weight") if getattr(config, f))
        with pytest.raises(ValueError, match=rf"config\.{flag} shape the forward only"):
            ops.launch_bwd(x, x.clone(), torch.empty_like(x), eps=1e-6, config=config)


@pytest.mark.parametrize("rms", [True, False], ids=["rms", "ln"])
def test_staged_backward_with_per_head_weights(device, rms):
    """QK-norm rows (heads of 128, a width the heuristic stages): per-head weights
    (H, D), each program's rows strided by H, loads staged 3 deep, against float64 with a partial
    row block."""
    from normkit import arguments, reference

    heads, tokens, d = 4, 11, 128
    g = torch.Generator().manual_seed(5 + rms)
    x, dy = (torch.randn(tokens * heads, d, generator=g) for _ in range(2))
    w, b = 1 + 0.1 * torch.randn(heads, d, generator=g), torch.randn(heads, d, generator=g)
    xd = x.double()
    mean = None if rms else xd.mean(1)
    rstd = ((xd.square().mean(1) if rms else xd.var(1, unbiased=False)) + 1e-5).rsqrt()
    mean, rstd = (None if t is None else t.float() for t in (mean, rstd))
    dx, dweight = torch.empty(tokens * heads, d, device=device), torch.empty(heads, d, device=device)
    dbias = None if rms else torch.empty(heads, d, device=device)
    ops.launch_bwd(x.to(device), dy.to(device), dx, weight=w.to(device), dweight=dweight, dbias=dbias,
                   mean=None if rms else mean.to(device), rstd=rstd.to(device), eps=1e-5, is_rms_norm=rms,
                   config=cfg.TileConfig(4, d, True, 1, programs_per_sm=2, async_stages=3))
    want = reference.norm_bwd(xd.view(tokens, heads, d), w.double(), dy.double().view(tokens, heads, d), mean, rstd,
                              None, eps=1e-5, is_rms_norm=rms, bias_dtype=None if rms else torch.float64,
                              param_ndim=2)
    assert_matches(dx, want[0].reshape(tokens * heads, d), torch.float32, "dx")
    assert_matches(dweight, want[1], torch.float32, "dweight")
    if not rms:
        assert_matches(dbias, want[2], torch.float32, "dbias")


def test_non_contiguous_weight_and_rstd(device):
    """Parameters and saved statistics are indexed densely by the kernels: strided ones are copied."""
    x, w, dy = make_inputs(6, 64, torch.float32, device, seed=12)
    w_strided = torch.stack([w, torch.full_like(w, 99.0)], dim=1)[:, 0]  # stride 2
    assert not w_strided.is_contiguous()
    out, _, rstd = normkit.rms_norm_fwd(x, w_strided, store_rstd=True)
    assert_matches(out, ref_fwd(x, w, 1e-6)[0], torch.float32, "y")
    rstd_strided = torch.stack([rstd, torch.full_like(rstd, 99.0)], dim=1)[:, 0]
    dx, dweight, _, _ = normkit.rms_norm_bwd(x, w_strided, dy, rstd_strided)
    dx_ref, dw_ref = ref_bwd(x, w, dy, 1e-6)
    assert_matches(dx, dx_ref, torch.float32, "dx")
    assert_matches(dweight, dw_ref, torch.float32, "dweight")


def test_layer_norm_rows_without_masks(device, monkeypatch):
    """LayerNorm's forward drops its masks (EVEN_ROWS) exactly when whole rows fill whole tiles
    (N = BLOCK_N, M a multiple of BLOCK_M); both paths against float64, RMSNorm never unmasked."""
    from normkit import arguments, reference

    seen = []
    real = launchers.launch
    monkeypatch.setattr(launchers, "launch",
                        lambda fn, grid, *a, **k: seen.append(k.get("EVEN_ROWS")) or real(fn, grid, *a, **k))
    # (3, 256): a partial row block (M not a multiple of BLOCK_M); (5, 1000): N below BLOCK_N
    for m, n, rms, even in ((64, 256, False, True), (3, 256, False, False), (5, 1000, False, False),
                            (4, 64, False, True), (64, 256, True, False)):
        x, w, _ = make_inputs(m, n, torch.float32, device, seed=m + n)
        b = torch.randn(n, dtype=torch.float32).to(device)
        out = torch.full_like(x, float("nan"))
        mean, rstd = torch.empty(m, device=device), torch.empty(m, device=device)
        seen.clear()
        ops.launch_fwd(x, out, weight=w, bias=None if rms else b, mean=None if rms else mean, rstd=rstd,
                       eps=1e-5, is_rms_norm=rms)
        assert seen == [even], (m, n, rms)
        y_ref, _, mean_ref, rstd_ref = reference.norm_fwd(x.double().cpu(), w.double().cpu(),
                                                          None if rms else b.double().cpu(), eps=1e-5,
                                                          is_rms_norm=rms)
        assert_matches(out, y_ref, torch.float32, "y")
        assert_matches(rstd, rstd_ref, torch.float32, "rstd")
        if not rms:
            assert_matches(mean, mean_ref, torch.float32, "mean")


def test_forward_adds_the_weight_offset_only_where_it_can_be_nonzero(device, monkeypatch):
    """LayerNorm's forward leaves the offset's add out when the offset is 0 (HAS_WEIGHT_OFFSET);
    RMSNorm always keeps it (its register count, ops.launch_fwd). Both against float64, the
    offset also given to LayerNorm through the low-level launch."""
    from normkit import arguments, reference

    seen = []
    real = launchers.launch
    monkeypatch.setattr(launchers, "launch",
                        lambda fn, grid, *a, **k: seen.append(k.get("HAS_WEIGHT_OFFSET")) or real(fn, grid, *a, **k))
    m, n = 6, 300
    for rms, offset, flag in ((False, 0.0, False), (False, 0.75, True), (True, 0.0, True), (True, 1.0, True)):
        x, w, _ = make_inputs(m, n, torch.float32, device, seed=7)
        b = None if rms else torch.randn(n, dtype=torch.float32).to(device)
        out = torch.full_like(x, float("nan"))
        seen.clear()
        ops.launch_fwd(x, out, weight=w, bias=b, eps=1e-5, weight_offset=offset, is_rms_norm=rms)
        assert seen == [flag], (rms, offset)
        y_ref = reference.norm_fwd(x.double().cpu(), w.double().cpu(), None if b is None else b.double().cpu(),
                                   eps=1e-5, is_rms_norm=rms, weight_offset=offset)[0]
        assert_matches(out, y_ref, torch.float32, "y")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_forward_reload_equals_the_row_kept_in_registers(device, dtype, monkeypatch):
    """A whole-row tile that reads the row again for y (TileConfig.reload → RELOAD) computes the
    same values as the one keeping it in registers, bit for bit: y, residual_out, mean and rstd, for
    RMSNorm (with a weight offset), LayerNorm, the fused add and per-head weights; y against
    float64. The register cap (max_registers) reaches the launch as Triton's maxnreg."""
    from normkit import arguments, reference

    seen = []
    real = launchers.launch
    monkeypatch.setattr(launchers, "launch", lambda fn, grid, *a, **k: seen.append((k.get("RELOAD"), k.get("maxnreg")))
                        or real(fn, grid, *a, **k))
    m, n, heads = 6, 96, 3
    for rms, residual, per_head in ((True, False, False), (False, False, False), (True, True, False),
                                    (False, True, True), (True, False, True)):
        x, w, _ = make_inputs(m, n, dtype, device, seed=n + 2 * rms + residual)
        if per_head:
            w = torch.randn(heads, n, dtype=torch.float32).to(device=device, dtype=dtype)
        b = None if rms else torch.randn(w.shape, dtype=torch.float32).to(device=device, dtype=dtype)
        res = torch.randn(m, n, dtype=torch.float32).to(device=device, dtype=dtype) if residual else None
        offset = 0.5 if rms else 0.0
        runs = []
        for config in (cfg.TileConfig(2, 128, True, 4), cfg.TileConfig(2, 128, True, 4, reload=True, max_registers=32)):
            out = torch.full_like(x, float("nan"))
            res_out = torch.full_like(x, float("nan")) if residual else None
            mean, rstd = torch.full((m,), float("nan"), device=device), torch.full((m,), float("nan"), device=device)
            seen.clear()
            ops.launch_fwd(x, out, weight=w, bias=b, residual=res, residual_out=res_out, mean=None if rms else mean,
                           rstd=rstd, eps=1e-5, weight_offset=offset, is_rms_norm=rms, config=config)
            assert seen == [(True, 32) if config.reload else (False, None)]
            runs.append((out, res_out, mean, rstd))
        for name, kept, reread in zip(("y", "residual_out", "mean", "rstd"), *runs):
            if kept is None or (name == "mean" and rms):  # not produced (RMSNorm has no mean)
                continue
            assert not kept.isnan().any() and torch.equal(kept, reread), (name, rms, residual, per_head)
        h = x.double().cpu() + (res.double().cpu() if residual else 0)
        w_rows = w.double().cpu().repeat(m // heads, 1) if per_head else w.double().cpu()
        b_rows = None if b is None else (b.double().cpu().repeat(m // heads, 1) if per_head else b.double().cpu())
        y_ref = reference.norm_fwd(h, w_rows, b_rows, eps=1e-5, is_rms_norm=rms, weight_offset=offset)[0]
        assert_matches(runs[1][0], y_ref, dtype, "y (reload)")


def test_forward_reloads_rows_of_4096_and_wider():
    """The GPU heuristic: whole rows of 4096 … 32768 are read again for y (reload), and so are RMSNorm's
    plain 2-byte rows of 65536 (whole, on 32 warps), except where LayerNorm holds them: 4-byte rows of
    4096, rows of 32768, the fused LayerNorm's of 16384 and 2-byte rows of 16384 under a 64-register cap.
    RMSNorm's 16 KB rows of 4096 (the fused add's, fp32) run on 16 warps; only plain 2-byte RMSNorm rows
    of ≥ 16384 take a 32-register cap. Narrower rows, column tiles and the interpreter never reload."""
    for n, residual, layer_norm, size in itertools.product((1000, 2048, 3000, 4096, 8192, 16384, 32768, 40000),
                                                           (False, True), (False, True), (2, 4)):
        config = cfg.tile_config(n, False, False, residual=residual, layer_norm=layer_norm, element_size=size)
        whole = cfg.next_power_of_2(n)
        whole_65536 = whole == 65536 and not (residual or layer_norm) and size == 2  # RMSNorm's, whole
        held_cap = layer_norm and size == 2 and whole == 16384  # two an SM
        held = layer_norm and (whole == 32768 or (size == 4 and whole == 4096) or (residual and whole == 16384)
                               or held_cap)
        reload = 4096 <= whole <= 32768 and not held or whole_65536
        assert config.reload == reload, (n, residual, layer_norm, size, config)
        centered = layer_norm and size == 2 and whole == 32768 and not residual  # centered-pass column tiles
        assert config.one_tile == (whole <= 32768 and not centered or whole_65536)
        if whole_65536:
            assert (config.block_m, config.block_n, config.num_warps) == (1, 65536, 32), config
        capped = reload and 16384 <= whole <= 32768 and not (layer_norm or residual) and size == 2
        capped |= layer_norm and size == 2 and whole == 65536 and not residual  # the centered-pass tile
        assert config.max_registers == (32 if capped else 64 if held_cap else 0), (n, residual, layer_norm, size, config)
        if reload and whole == 4096 and not layer_norm:
            assert config.num_warps == (16 if residual or size == 4 else 8), config
        assert not cfg.tile_config(n, False, True, residual=residual, layer_norm=layer_norm, element_size=size).reload


def test_whole_rows_of_65536_want_a_two_byte_y():
    """RMSNorm's 2-byte rows of 65536 run whole, one an SM, only when y is 2-byte too: a 4-byte y
    (out_dtype) spills that tile (ptxas, sm_90: 72-412 B); it splits them in 1 × 4096 parts (16 KB of y)
    on 4 warps, four an SM. `ops.launch_fwd` passes y's size."""
    for size, out_size, whole in ((2, 0, True), (2, 2, True), (2, 4, False), (4, 4, False), (4, 2, False)):
        config = cfg.tile_config(65536, False, False, multiprocessors=132, element_size=size,
                                 out_element_size=out_size)
        assert (config.one_tile and config.block_n == 65536) == whole, (size, out_size, config)
        if not whole and size == 2:  # holding the part's weight
            assert config == cfg.TileConfig(1, 4096, True, 4, programs_per_sm=4, split=True, reload=True,
                                            hold_weight=True), config
    assert cfg.tile_config(65536, False, False, multiprocessors=132, element_size=2, residual=True,
                           out_element_size=2).split  # the fused add keeps its split rows


def test_mixed_dtype_rows_of_32768_take_their_own_tiles():
    """Rows of 32768 where x and y differ in size: RMSNorm's fp32 x with a 2-byte y holds the
    whole row on 32 warps (not re-read; fp32 y keeps the re-read), LayerNorm's bf16 x with an fp32 y the whole
    row too, not the three reads a bf16 y takes (config.forward.LAYER_NORM_CENTERED)."""
    pick = lambda size, out, ln: cfg.tile_config(32768, False, False, multiprocessors=132, layer_norm=ln,  # noqa: E731
                                                 element_size=size, out_element_size=out)
    assert pick(4, 2, False) == cfg.TileConfig(1, 32768, True, 32)
    assert pick(4, 4, False) == cfg.TileConfig(1, 32768, True, 32, reload=True)
    assert pick(2, 4, True) == cfg.TileConfig(1, 32768, True, 32)
    assert pick(2, 2, True) == cfg.TileConfig(1, 8192, False, 16, centered_pass=True)


def test_fused_forwards_with_a_4_byte_residual_take_their_own_whole_rows():
    """2-byte x with a 4-byte residual (the residual stream kept in fp32): the fused add
    and the fused LayerNorm hold their whole rows of 8192 and 32768 (not re-read), the fused LayerNorm's rows of
    16384 and 32768 on 4 and 8 warps; a 2-byte residual keeps its tiles (holding them measured slower on the H200),
    as do the fused add's rows of 16384 (re-read)."""
    def pick(n, layer_norm, residual_size):
        return cfg.tile_config(n, False, False, multiprocessors=132, residual=True, layer_norm=layer_norm,
                               element_size=2, residual_element_size=residual_size)

    for layer_norm in (False, True):
        for n in (8192, 32768):
            held, narrow = pick(n, layer_norm, 4), pick(n, layer_norm, 2)
            assert held.one_tile and held.block_n == n and not held.reload, (n, layer_norm, held)
            # a 2-byte residual re-reads them (but the fused LayerNorm's rows of 32768, held on 32 warps)
            assert narrow.reload == (not (layer_norm and n == 32768)), (n, layer_norm, narrow)
    warps = {(False, 8192): 16, (False, 16384): 16, (False, 32768): 32, (True, 8192): 8, (True, 16384): 4,
             (True, 32768): 8}
    for (layer_norm, n), expected in warps.items():
        assert pick(n, layer_norm, 4).num_warps == expected, (layer_norm, n, pick(n, layer_norm, 4))
    assert pick(16384, False, 4).reload and pick(32768, True, 2).num_warps == 32


def test_register_cap_wants_a_two_byte_y():
    """RMSNorm's whole 2-byte rows of 16384 / 32768 run under ptxas' 32-register cap only with a 2-byte
    y: a 4-byte y spills under it (H200, bf16 x, fp32 y, 4096×16384: 269.5 µs capped against 104.6
    uncapped), so rows of 16384 keep the uncapped whole row and those of 32768 walk 16384-column tiles on
    16 warps, of one weight head or several."""
    for n in (16384, 20000, 32768):
        for out_size, cap in ((0, 32), (2, 32), (4, 0)):
            config = cfg.tile_config(n, False, False, multiprocessors=132, element_size=2, out_element_size=out_size)
            if n > 16384 and out_size == 4:
                assert config == cfg.TileConfig(1, 16384, False, 16), config
                assert cfg.tile_config(n, False, False, heads=8, multiprocessors=132, element_size=2,
                                       out_element_size=4) == config
            else:
                assert config.one_tile and config.reload and config.max_registers == cap, (n, out_size, config)


def test_recomputing_split_parts_join_stats_by_family_and_elements():
    """config.joins_stats (the statistics' sums reduced in one tree with Σ(g·h) / Σg): LayerNorm's split
    parts always, RMSNorm's where a thread holds ≤ 16 elements — every heuristic split tile of the
    backward at bf16 / fp32 — and no tile that does not split."""
    for n, size, layer_norm in itertools.product((16384, 65536, 131072, 262144), (2, 4), (False, True)):
        config = cfg.tile_config(n, True, False, multiprocessors=132, layer_norm=layer_norm, element_size=size)
        per_thread = config.block_m * config.block_n // (32 * config.num_warps)
        assert cfg.joins_stats(config, layer_norm) == (config.split and (layer_norm or per_thread <= 16)), (n, config)
    assert not cfg.joins_stats(cfg.TileConfig(1, 4096, True, 4, programs_per_sm=2, split=True), False)  # 32 a thread
    assert cfg.joins_stats(cfg.TileConfig(1, 4096, True, 8, programs_per_sm=2, split=True), False)
    assert not cfg.joins_stats(cfg.TileConfig(2, 2048, True, 4), True)  # not split


def test_backward_drops_column_mask_for_full_two_byte_tiles():
    """config.even_cols: the backward's column mask goes (EVEN_COLS) only where every
    column of a one-tile config lies inside the row and the input is 2-byte — float32's split parts ran
    slower without it — never on the column path."""
    assert cfg.even_cols(cfg.TileConfig(1, 2048, True, 4, split=True), 16384, 2)
    assert cfg.even_cols(cfg.TileConfig(2, 4096, True, 8), 4096, 2)
    assert not cfg.even_cols(cfg.TileConfig(1, 2048, True, 4, split=True), 16384, 4)  # float32
    assert not cfg.even_cols(cfg.TileConfig(1, 2048, True, 4, split=True), 16000, 2)  # last part ragged
    assert not cfg.even_cols(cfg.TileConfig(2, 4096, True, 8), 3000, 2)
    assert not cfg.even_cols(cfg.TileConfig(1, 4096, False, 8), 65536, 2)  # column tiles keep their masks
    heuristic = {(n, size): cfg.even_cols(cfg.tile_config(n, True, False, multiprocessors=132, element_size=size), n, size)
                 for n in (1000, 2048, 16384, 65536, 100000) for size in (2, 4)}  # the GPU's tiles
    assert {key for key, even in heuristic.items() if even} == {(2048, 2), (16384, 2), (65536, 2)}


def test_finisher_strips_widen_where_the_partial_rows_are_few():
    """config.finish_config on a GPU: every partial row in one step (up to 512), on 16-column strips
    where G > 128 or the row is narrower than 8192, as before; where the split parts' few groups leave
    G small, strips of grid._FINISH_VALUES values on 2 warps while the row keeps 256 of them (8 × 512 at
    G = 8, N = 131072, not 8 × 16: 5.95 → 2.02 µs on the H200)."""
    tile = lambda rows, n: (lambda c: (c.block_m, c.block_n, c.num_warps))(cfg.finish_config(False, rows, n))
    assert tile(528, 4096) == (512, 16, 4) and tile(132, 4096) == (256, 16, 4)  # the old strips
    assert tile(66, 16384) == (128, 32, 2) and tile(33, 32768) == (64, 64, 2) and tile(16, 65536) == (16, 256, 2)
    assert tile(8, 131072) == (8, 512, 2) and tile(4, 262144) == (4, 1024, 2) and tile(8, 65536) == (8, 256, 2)
    assert tile(1, 8192) == (1, 32, 2) and tile(1, 8191) == (1, 16, 1)  # 256 strips a row at least
    assert tile(64, 2048) == (64, 16, 1) and tile(8, 100) == (8, 16, 1) and tile(1, 1) == (1, 16, 1)
    assert tile(1000, 4096) == (512, 16, 4)  # two steps past 512 rows
    assert cfg.finish_config(True, 8, 131072) == cfg.TileConfig(block_m=8, block_n=8192, one_tile=False)


@pytest.mark.parametrize("rows,n,grads", [(5, 8200, 2), (3, 16400, 1), (600, 300, 1)])
def test_finisher_gpu_tiles_sum_every_column(rows, n, grads, device):
    """The finisher with the GPU's tile for (G, N) (wide strips, a ragged last one; two steps at
    G = 600) sums each gradient's G partial rows: every column written, equal to torch's sum."""
    from normkit.kernels import sum_partials_kernel
    finish = cfg.finish_config(False, rows, n)
    partial = torch.randn(grads, rows, n, dtype=torch.float32, generator=torch.Generator().manual_seed(rows)).to(device)
    outs = [torch.full((n,), float("nan"), device=device) for _ in range(grads)]
    sum_partials_kernel[(cfg.cdiv(n, finish.block_n), grads)](partial, outs[0], outs[-1], rows, n, rows * n,
                                                              BLOCK_G=finish.block_m, BLOCK_N=finish.block_n,
                                                              num_warps=finish.num_warps)
    for k, out in enumerate(outs):
        torch.testing.assert_close(out, partial[k].double().sum(0).float(), rtol=1e-5, atol=1e-5)


def test_layer_norm_forward_split_follows_x_and_y():
    """LayerNorm's forward rows wider than 32768 of one weight head split where every part fits one an
    SM, whatever y's size: without a residual in 16 KB parts of x on 4 warps under a 128-register cap,
    four an SM (4-byte x holding its part's weight and bias), the fused LayerNorm's in the fused add's
    staged 4 KB parts on 4 warps, eight an SM (else 8 KB parts on 8 warps, four an SM). Otherwise staged
    16 KB column tiles, or for bf16 rows of 65536 the three-read tiles (docs/design.md#split-rows)."""
    staged = {2: cfg.TileConfig(1, 8192, False, 16, column_stages=3), 4: cfg.TileConfig(1, 4096, False, 16, column_stages=3)}
    for n, size, out_size, residual, heads, sms in itertools.product(
            (40000, 65536, 100000, 131072, 262144), (2, 4), (2, 4), (False, True), (1, 8), (16, 132)):
        config = cfg.tile_config(n, False, False, heads=heads, multiprocessors=sms, residual=residual, layer_norm=True,
                                 element_size=size, out_element_size=out_size)
        block_n = (4096 if residual else 16384) // size
        split = heads == 1 and cfg.cdiv(n, block_n) <= sms and (residual or n > 32768)
        if split and residual:  # staged 4 KB parts holding the previous row block
            expected = cfg.TileConfig(1, block_n, True, 4, programs_per_sm=8, split=True, async_stages=3)
        elif residual and heads == 1 and cfg.cdiv(n, 8192 // size) <= sms:  # 8 KB parts re-reading it
            expected = cfg.TileConfig(1, 8192 // size, True, 8, programs_per_sm=4, split=True, reload=True)
        elif split:  # 4-byte x holds its part's weight and bias
            expected = cfg.TileConfig(1, block_n, True, 4, programs_per_sm=4, split=True, max_registers=128,
                                      reload=True, hold_weight=size == 4)
        elif size == 2 and not residual and n <= 65536:  # bf16 rows of 65536, several heads: three reads
            expected = cfg.TileConfig(1, 16384, False, 32, centered_pass=True, max_registers=32)
        else:
            expected = staged[size]
        assert config == expected, (n, size, out_size, residual, heads, sms, config)


def test_wide_rows_take_their_family_s_tiles():
    """The GPU heuristic for rows wider than 32768, every family. Forward, rows of one weight head: the
    fused add's and the fused LayerNorm's split in staged 4 KB parts, eight an SM (8-byte rows, and parts
    that do not all fit, in 8 KB parts re-reading the previous row block), LayerNorm's in 16 KB parts,
    RMSNorm's of 256 KB and more in 16 KB parts holding their weight (fp32's only at 262144), four an SM;
    otherwise RMSNorm's bf16 rows of 65536 whole on 32 warps, LayerNorm's bf16 ones in the three-read
    tiles, the rest column tiles. Backward of rows that are not vector-aligned (the prefetching parts;
    aligned ones stage their loads: test_backward_split_parts_stage_their_loads): the first candidate
    part below whose parts × heads all fit one an SM, else column tiles (docs/design.md#split-rows)."""
    for n, residual, layer_norm, size, heads, sms in itertools.product(
            (32769, 65536, 131072, 262144), (False, True), (False, True), (2, 4, 8), (1, 8), (0, 132)):
        fwd = cfg.tile_config(n, False, False, heads=heads, multiprocessors=sms, residual=residual,
                              layer_norm=layer_norm, element_size=size)
        if (layer_norm and not residual and heads == 1 and sms
              and (size, cfg.next_power_of_2(n)) in ((2, 65536), (2, 131072), (2, 262144), (4, 65536), (4, 131072),
                                                     (4, 262144))):
            expected = cfg.TileConfig(1, 16384 // size, True, 4, programs_per_sm=4, split=True, max_registers=128,
                                      reload=True, hold_weight=size == 4)
        elif layer_norm and size == 2 and not residual and cfg.next_power_of_2(n) == 65536:  # three reads, capped
            expected = cfg.TileConfig(1, 16384, False, 32, centered_pass=True, max_registers=32)
        elif residual and size <= 4 and heads == 1 and sms and cfg.cdiv(n, 4096 // size) <= sms:  # staged 4 KB parts
            expected = cfg.TileConfig(1, 4096 // size, True, 4, programs_per_sm=8, split=True, async_stages=3)
        elif residual and heads == 1 and sms and cfg.cdiv(n, 8192 // size) <= sms:  # 8 KB parts
            expected = cfg.TileConfig(1, 8192 // size, True, 8, programs_per_sm=4, split=True, reload=True)
        elif layer_norm:  # 16 KB tiles
            expected = cfg.TileConfig(1, 16384 // size, False, 16, column_stages=3)
        elif size == 4 and heads == 1 and sms and cfg.next_power_of_2(n) in (65536, 131072, 262144):  # 16 KB parts
            # (rows of 262144 holding their weight)
            expected = cfg.TileConfig(1, 4096, True, 8, programs_per_sm=4, split=True, reload=True,
                                      hold_weight=cfg.next_power_of_2(n) == 262144)
        elif size == 2 and not residual and heads == 1 and sms and cfg.next_power_of_2(n) in (131072, 262144):
            # 16 KB parts, holding their weight
            expected = cfg.TileConfig(1, 8192, True, 4, programs_per_sm=4, split=True, reload=True, hold_weight=True)
        elif size == 2 and not residual and cfg.next_power_of_2(n) == 65536:  # whole, re-read
            expected = cfg.TileConfig(1, 65536, True, 32, reload=True)
        else:
            expected = cfg.TileConfig(1, 16384, False, 32)
        assert fwd == expected, (n, residual, layer_norm, size, heads, sms, fwd)
        if not sms:
            continue
        bwd = cfg.tile_config(n, True, False, heads=heads, multiprocessors=sms, residual=residual,
                              layer_norm=layer_norm, element_size=size, vector_aligned=False)
        whole = cfg.next_power_of_2(n)
        if size > 2:  # fp32: 8 KB of x a part on 4 warps, three an SM, then (fp64 only) 16 KB on 16 warps
            held = whole <= (0 if residual else 16384 if layer_norm else 65536)  # two an SM, else three
            options = ([(1, 2048, 4, 2, 0, False) if held else (1, 2048, 4, 3, 0, True)] if size == 4 else []) + [
                (1, 16384 // size, 16, 1, 0, False)]
        else:  # two programs an SM first, then one on 8 warps (rows, part, warps, programs an SM, cap, reload)
            sixteen = {65536: [(1, 2048, 4, 4, 128, False)], 131072: [(1, 4096, 8, 2, 128, False)],
                       262144: [] if residual else [(1, 2048, 4, 4, 128, False)]}.get(whole, [])
            options = ([(2, 2048, 8, 2, 128, False) if whole == 32768 and not residual else (2, 2048, 4, 2, 0, False),
                        (2, 4096, 8, 1, 0, False)] if layer_norm
                       else sixteen + ([] if residual and whole > 65536 else [(1, 4096, 4, 2, 0, False)]))
            options.append((1, 8192, 8, 1, 0, False))
        part = next((o for o in options if cfg.cdiv(n, o[1]) * heads <= sms), None)
        assert (bwd.block_m, bwd.block_n, bwd.num_warps, bwd.programs_per_sm, bwd.max_registers, bwd.reload,
                bwd.split) == ((*part, True) if part else (2, 4096, 16, 2, 0, False, False)), (
            n, residual, layer_norm, size, heads, bwd)
        assert bwd.prefetch == bool(part)


def test_backward_rows_up_to_16384_split_in_pairs():
    """The backward's rows of 8192 < N ≤ 16384 on a GPU: 2-byte rows in parts on 4 warps —
    LayerNorm's 2 × 2048, two programs an SM, RMSNorm's 1 × 4096, two an SM, the fused add's 1 × 2048
    capped at 128 registers, four an SM; 4-byte rows in 1 × 2048 on 4 warps, the fused add's three an SM
    re-reading the previous row block after the exchange (reload; H200, fp32 4096×16384: 301.4 µs against
    309.1 on 8 warps two an SM, 292.0 against 303.2 holding it), RMSNorm's and LayerNorm's two an SM
    holding it (221.0 / 224.3 µs against 226.2 / 231.4 reloading); 8-byte rows in 1 × 2048 (16 KB) on 16
    warps, one an SM. Where the parts of every head do not fit one an SM, the next candidate or the whole
    row. These are the prefetching parts of rows that are not vector-aligned; aligned rows stage their
    loads where a staged part fits (test_backward_split_parts_stage_their_loads)."""
    def pick(n, size, residual, layer_norm=False, heads=1):
        t = cfg.tile_config(n, True, False, heads=heads, multiprocessors=132, residual=residual,
                            layer_norm=layer_norm, element_size=size, vector_aligned=False)
        return (t.block_m, t.block_n, t.num_warps, t.programs_per_sm, t.max_registers, t.split, t.reload)
    for n, residual, layer_norm in itertools.product((8193, 12000, 16384), (False, True), (False, True)):
        assert pick(n, 2, residual, layer_norm) == ((2, 2048, 4, 2, 0, True, False) if layer_norm
                                                    else (1, 2048, 4, 4, 128, True, False) if residual
                                                    else (1, 4096, 4, 2, 0, True, False))
        assert pick(n, 4, residual, layer_norm) == ((1, 2048, 4, 3, 0, True, True) if residual
                                                    else (1, 2048, 4, 2, 0, True, False))
        assert pick(n, 8, residual, layer_norm) == (1, 2048, 16, 1, 0, True, False)
    # 8 parts × 16 heads = 128 ≤ 132 SMs; 8 × 17 do not fit: 2-byte rows take 2 × 4096 parts (4 × 17 = 68),
    # RMSNorm's keep their 1 × 4096
    assert pick(16384, 4, False, heads=16) == (1, 2048, 4, 2, 0, True, False)
    assert pick(16384, 4, True, heads=16) == (1, 2048, 4, 3, 0, True, True)
    assert pick(16384, 4, False, heads=17) == (1, 4096, 16, 1, 0, True, False)
    assert pick(16384, 2, False, True, heads=17) == (2, 4096, 8, 1, 0, True, False)
    assert pick(16384, 2, True, heads=17) == (2, 4096, 8, 1, 0, True, False)  # 8 × 17 parts of 2048
    assert pick(16384, 2, False, heads=17) == (1, 4096, 4, 2, 0, True, False)  # 4 × 17 of 4096 fit
    assert not pick(16384, 4, False, heads=64)[-1]  # 4 × 64 parts do not fit: the whole row


def test_backward_split_parts_stage_their_loads():
    """With vector-aligned rows the backward's split parts stage their loads in shared memory (3 or 4
    deep), with saved statistics and mostly with recomputed ones too: 2-byte rows mostly in 1 × 2048 on
    4 warps capped at 128 registers, four an SM, 4-byte rows in 1 × 1024 on 4 warps, four an SM, or
    LayerNorm's 1 × 2048, three an SM, four deep; each family's exceptions are spelled out below. Rows
    that are not vector-aligned, or staged parts that do not all fit one an SM, take the prefetching
    parts (docs/design.md#split-rows)."""
    def pick(n, size, residual, layer_norm, **kw):
        t = cfg.tile_config(n, True, False, multiprocessors=132, residual=residual, layer_norm=layer_norm,
                            element_size=size, **kw)
        return (t.block_m, t.block_n, t.num_warps, t.programs_per_sm, t.max_registers, t.async_stages, t.prefetch)
    staged_seen = recomputed_seen = 0
    for n, residual, layer_norm, size in itertools.product(
            (12000, 16384, 32768, 32769, 65536, 131072, 262144), (False, True), (False, True), (2, 4, 8)):
        whole = cfg.next_power_of_2(n)
        prefetching = pick(n, size, residual, layer_norm, vector_aligned=False)
        assert prefetching[-2:] == (0, True), prefetching
        assert pick(n, size, residual, layer_norm, vector_aligned=False, recompute=True) == prefetching
        expected = None
        if size == 2 and layer_norm and not residual:
            expected = (1, 2048, 4, 4, 128, 3) if whole == 16384 else (1, 4096, 4, 2, 0, 3)
        elif size == 2 and layer_norm:  # the fused LayerNorm: four deep at 32768 / 65536, 1 × 4096 at 131072
            expected = (1, 4096, 4, 2, 0, 3) if whole == 131072 else (1, 2048, 4, 4, 128, 4 if whole in (32768, 65536) else 3)
        elif size == 4 and layer_norm:  # four deep; LayerNorm's 131072 in 1 × 4096 on 8
            expected = (1, 4096, 8, 1, 0, 4) if whole == 131072 and not residual else (1, 2048, 4, 3, 0, 4)
        elif size == 2 and not layer_norm:
            expected = (1, 4096, 4, 2, 0, 3) if whole == 131072 and not residual else (1, 2048, 4, 4, 128, 3)
        elif size == 4 and not layer_norm:
            expected = (1, 2048, 8, 2, 0, 3) if whole == 65536 and not residual else (1, 1024, 4, 4, 0, 3)
        if expected and cfg.cdiv(n, expected[1]) > 132:  # fp32 262144 in 1 × 1024: 256 parts
            expected = None
        staged_seen += expected is not None
        assert pick(n, size, residual, layer_norm) == (expected + (False,) if expected else prefetching), (
            n, residual, layer_norm, size)
        recomputing = None
        if size == 2 and layer_norm:
            recomputing = {16384: (1, 4096, 4, 2, 0, 3), 262144: (1, 8192, 8, 1, 0, 3)}.get(whole, (1, 4096, 4, 2, 0, 3))
        elif size == 2 and not layer_norm:
            recomputing = expected
        elif size == 4 and not (layer_norm and not residual and whole == 262144):
            wide = layer_norm and whole >= 131072  # LayerNorm's: 1 × 4096 on 8 warps, one an SM
            recomputing = (1, 4096, 8, 1, 0, 3) if wide else (1, 2048, 4, 3, 0, 4)
        if recomputing and cfg.cdiv(n, recomputing[1]) > 132:
            recomputing = None
        recomputed_seen += recomputing is not None
        assert pick(n, size, residual, layer_norm, recompute=True) == (
            recomputing + (False,) if recomputing else prefetching), (n, residual, layer_norm, size)
    # RMSNorm and the fused add bf16, LayerNorm bf16, the fused LayerNorm bf16, RMSNorm and the fused add fp32
    # (not 262144), LayerNorm and the fused LayerNorm fp32
    assert staged_seen == 14 + 7 + 7 + 12 + 14
    # RMSNorm and the fused add bf16, LayerNorm and the fused LayerNorm bf16, all four families fp32 (not
    # LayerNorm's 262144)
    assert recomputed_seen == 14 + 7 + 7 + 27


def test_forward_rows_of_32768_by_bytes():
    """Rows of 32768: the fused add's fp32 / fp64 rows (128 / 256 KB) split — in staged 4 KB
    parts holding the previous row block as its bf16 rows past 32768 do, 8-byte ones in
    8 KB parts (one head, every part on its own SM) —, its bf16 rows stay
    whole; LayerNorm's bf16 rows without a residual take the 8192-column tiles read three times,
    with a residual the whole row. Rows of 16384: the fused add splits only 8-byte ones."""
    def pick(n, residual, layer_norm, size, heads=1, sms=132):
        return cfg.tile_config(n, False, False, heads=heads, multiprocessors=sms, residual=residual,
                               layer_norm=layer_norm, element_size=size)
    for n in (16385, 32768):
        assert pick(n, True, False, 4) == cfg.TileConfig(1, 1024, True, 4, programs_per_sm=8, split=True,
                                                         async_stages=3)  # staged 4 KB parts
        assert pick(n, True, False, 8) == cfg.TileConfig(1, 1024, True, 8, programs_per_sm=4, split=True, reload=True)
        assert not pick(n, True, False, 2).split and pick(n, True, False, 2).one_tile
        assert not pick(n, True, False, 4, heads=8).split  # per-head weights: no split forward
        assert not pick(n, True, False, 4, sms=8).split  # 16 parts, 8 SMs: the whole row
        assert not pick(n, False, False, 4).split and not pick(n, True, True, 4).split
        assert pick(n, False, True, 2) == cfg.TileConfig(1, 8192, False, 16, centered_pass=True)
        assert pick(n, True, True, 2).one_tile and not pick(n, True, True, 2).centered_pass
    for size in (2, 4):
        assert not pick(16384, True, False, size).split
    assert pick(16384, True, False, 8).split


@pytest.mark.parametrize("offset", [0.0, 1e3])
def test_layer_norm_centered_pass_matches_float64(device, offset):
    """LayerNorm's column tiles read three times (centered_pass: per-lane Σh, then per-lane
    Σ(h − mean)², then y) against float64, with a residual, a bias and large means, ragged tiles
    (N = 2·BLOCK_N + 5), statistics stored; as accurate as Chan's merge of every tile. RMSNorm
    refuses the flag."""
    m, n = 5, 2 * 1024 + 5
    g = torch.Generator().manual_seed(7)
    x = (offset + torch.randn(m, n, generator=g, dtype=torch.float64)).float().to(device)
    res = torch.randn(m, n, generator=g).to(device)
    w, b = (1 + 0.1 * torch.randn(n, generator=g)).to(device), (0.1 * torch.randn(n, generator=g)).to(device)
    h64 = x.double().cpu() + res.double().cpu()
    mean64 = h64.mean(1)
    var64 = ((h64 - mean64[:, None]) ** 2).mean(1)
    y64 = (h64 - mean64[:, None]) / torch.sqrt(var64[:, None] + 1e-5) * w.double().cpu() + b.double().cpu()
    errors = []
    for centered in (False, True):
        y, h = torch.full_like(x, float("nan")), torch.full_like(x, float("nan"))
        mean, rstd = torch.empty(m, device=device), torch.empty(m, device=device)
        ops.launch_fwd(x, y, weight=w, bias=b, residual=res, residual_out=h, mean=mean, rstd=rstd, eps=1e-5,
                       is_rms_norm=False, config=cfg.TileConfig(1, 1024, False, 4, centered_pass=centered))
        assert torch.allclose(mean.double().cpu(), mean64, rtol=1e-6, atol=1e-6 * max(offset, 1.0))
        assert torch.allclose(rstd.double().cpu(), 1 / torch.sqrt(var64 + 1e-5), rtol=1e-5)
        errors.append(((y.double().cpu() - y64).norm() / y64.norm()).item())
    assert errors[1] <= max(2 * errors[0], 1e-6), errors
    with pytest.raises(ValueError, match="centered_pass computes LayerNorm's centred variance"):
        ops.launch_fwd(x, torch.empty_like(x), eps=1e-6, config=cfg.TileConfig(1, 1024, False, 4, centered_pass=True))
    with pytest.raises(ValueError, match="centered_pass is a second pass over column tiles"):
        cfg.TileConfig(1, 1024, True, centered_pass=True)


def test_reload_and_register_cap_are_checked():
    with pytest.raises(ValueError, match="reload re-reads a whole row held in one tile: it needs one_tile=True"):
        cfg.TileConfig(1, 1024, False, reload=True)
    with pytest.raises(ValueError, match="hold_weight holds a split part's columns of the weight: it needs split=True"):
        cfg.TileConfig(1, 1024, True, hold_weight=True)
    with pytest.raises(ValueError, match="max_registers is 0 .no cap. or ptxas' register cap, got -1"):
        cfg.TileConfig(1, 1024, True, max_registers=-1)


def test_forced_whole_row_config_narrower_than_the_row_is_refused(device):
    """A whole-row tile (one_tile, not split) reaches block_n columns and nothing loops over the rest:
    forced narrower than N it left columns unwritten (tools/tune.py timed 2 × 4096 at N = 8192 and
    reported a mismatch). Both launchers refuse it, naming block_n and N; split parts and
    column tiles of that width still run."""
    m, n = 3, 96
    x, w, _ = make_inputs(m, n, torch.float32, device, seed=5)
    dy = torch.randn(m, n).to(device)
    narrow = cfg.TileConfig(1, 64, True)
    with pytest.raises(ValueError, match=r"needs block_n >= N: got block_n=64 for N=96 \(use split=True or one_tile=False\)"):
        ops.launch_fwd(x, torch.empty_like(x), weight=w, eps=1e-6, config=narrow)
    with pytest.raises(ValueError, match=r"needs block_n >= N: got block_n=64 for N=96"):
        ops.launch_bwd(x, dy, torch.empty_like(x), weight=w, dweight=torch.empty_like(w),
                       rstd=torch.ones(m, device=device), eps=1e-6, config=narrow)
    y = torch.full_like(x, float("nan"))
    ops.launch_fwd(x, y, weight=w, eps=1e-6, config=cfg.TileConfig(1, 64, False))  # column tiles loop
    assert_matches(y, ref_fwd(x, w, 1e-6)[0], torch.float32, "y (column tiles)")
    for name, bad in (("block_n", dict(block_n=96)), ("block_m", dict(block_m=3)), ("block_n", dict(block_n=0))):
        with pytest.raises(ValueError, match=f"{name} is a power of two"):
            cfg.TileConfig(**{"block_m": 1, "block_n": 64, "one_tile": True, **bad})


def test_low_level_backward_refuses_a_weight_without_dweight(device):
    """ops.launch_bwd's HAS_WEIGHT is one flag for the weight's read and dweight's partials: a weight
    without dweight ran the weightless kernel, dx silently off by the weight. Both mismatches are
    refused before any launch, naming them."""
    m, n = 3, 40
    x, w, _ = make_inputs(m, n, torch.float32, device, seed=7)
    dy = torch.randn(m, n).to(device)
    dx = torch.full_like(x, float("nan"))
    with pytest.raises(ValueError, match=r"dweight must be given exactly when weight is, got weight \(40,\) and dweight None"):
        ops.launch_bwd(x, dy, dx, weight=w, eps=1e-6)
    with pytest.raises(ValueError, match=r"got weight None and dweight \(40,\)"):
        ops.launch_bwd(x, dy, dx, dweight=torch.empty_like(w), eps=1e-6)
    assert torch.isnan(dx).all()
    dweight = torch.empty_like(w)
    ops.launch_bwd(x, dy, dx, weight=w, dweight=dweight, eps=1e-6)
    rdx, rdw = ref_bwd(x, w, dy, 1e-6)[:2]
    assert_matches(dx, rdx, torch.float32, "dx")
    assert_matches(dweight, rdw, torch.float32, "dweight")


def test_forward_column_stages_change_no_value(device):
    """Column tiles with the statistics pass staged in shared memory (column_stages, cp.async on a
    GPU; the interpreter ignores num_stages) write the same bits as without, every family."""
    m, n = 5, 3000
    x, w, _ = make_inputs(m, n, torch.float32, device, seed=3)
    res = torch.randn(m, n, dtype=torch.float32).to(device)
    b = torch.randn(n, dtype=torch.float32).to(device)
    for rms, residual in ((True, None), (True, res), (False, None)):
        runs = []
        for stages in (0, 2, 3):
            y, h = torch.full_like(x, float("nan")), torch.full_like(x, float("nan"))
            mean, rstd = torch.empty(m, device=device), torch.empty(m, device=device)
            ops.launch_fwd(x, y, weight=w, bias=None if rms else b, residual=residual,
                           residual_out=None if residual is None else h, mean=None if rms else mean, rstd=rstd,
                           eps=1e-5, is_rms_norm=rms, config=cfg.TileConfig(2, 1024, False, 4, column_stages=stages))
            runs.append((y, rstd))
        assert all(torch.equal(y, runs[0][0]) and torch.equal(r, runs[0][1]) for y, r in runs[1:]), (rms, residual)
    with pytest.raises(ValueError, match="column_stages is 0 or a depth of 2 or more"):
        cfg.TileConfig(2, 1024, True, column_stages=2)
