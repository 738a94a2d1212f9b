"""Split rows (backward, wide rows on a GPU): the parts of a row in different programs exchange
their partial sums. Compared with the float64 autograd reference of tests/feature_cases.py.

The exchange needs all programs resident at once, so it runs on CUDA only; under Triton's
interpreter (programs run one after another) the launcher refuses a split config.
"""

import pytest
import torch

from normkit import config as cfg
from normkit import launchers, ops
from normkit._runtime import interpret, multiprocessor_count
from feature_cases import _reference
from utils import assert_matches

cuda_only = pytest.mark.skipif(not torch.cuda.is_available(), reason="split rows need a CUDA GPU")


def _split(block_n, block_m=1, warps=4, **flags):
    return cfg.TileConfig(block_m, block_n, True, num_warps=warps, programs_per_sm=1, split=True, **flags)


def _inputs(m, n, dtype, *, heads=1, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m * heads, n, generator=g, dtype=torch.float64) * 2 + 0.5
    dy = 0.5 * x + torch.randn(m * heads, n, generator=g, dtype=torch.float64)
    w = 1 + 0.5 * torch.randn(heads, n, generator=g, dtype=torch.float64)
    b = 0.1 * torch.randn(heads, n, generator=g, dtype=torch.float64)
    dres = torch.randn(m * heads, n, generator=g, dtype=torch.float64)
    if heads == 1:
        w, b = w[0], b[0]
    cast = lambda t: t.to(device="cuda", dtype=dtype)  # noqa: E731
    return cast(x), cast(w), cast(b), cast(dy), cast(dres)


@cuda_only
@pytest.mark.parametrize("rms", [True, False], ids=["rms", "ln"])
@pytest.mark.parametrize("saved", [True, False], ids=["saved", "recompute"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("m,n,config", [
    (7, 1000, _split(128)),  # 8 parts, the last one partial
    (300, 4097, _split(1024, block_m=2)),  # 5 parts (not a power of two), the last has 1 column
    (33, 40000, None),  # the GPU heuristic's own split config
    (7, 1000, _split(128, reload=True)),  # the previous block read again after the exchange
    (300, 4097, _split(1024, block_m=2, reload=True, prefetch=True)),
    # loads staged in shared memory (async_stages), the wait spinning in PTX: 8 parts, ~19 row blocks
    # a group through the exchange's ring; then rows that are not vector-aligned (the pipeliner leaves
    # their loads as written), four stages
    (300, 4096, _split(512, async_stages=3)),
    (300, 4097, _split(1024, block_m=2, async_stages=4)),
])
def test_split_backward_matches_float64(rms, saved, dtype, m, n, config):
    x, w, b, dy, dres = _inputs(m, n, dtype)
    eps = 1e-5
    mean = rstd = None
    if saved:
        stats_mean = torch.empty(m, device="cuda", dtype=torch.float64 if dtype == torch.float64 else torch.float32)
        stats_rstd = torch.empty_like(stats_mean)
        ops.launch_fwd(x, torch.empty_like(x), weight=w, bias=b, mean=None if rms else stats_mean,
                       rstd=stats_rstd, eps=eps, is_rms_norm=rms)
        mean, rstd = (None if rms else stats_mean), stats_rstd
    if config is None:
        assert ops_config(n).split, "the heuristic should split rows this wide"
    dx = torch.full_like(x, float("nan"))
    dw = torch.full_like(w, float("nan"))
    db = torch.full_like(b, float("nan"))
    ops.launch_bwd(x, dy, dx, weight=w, dweight=dw, dbias=db, dresidual_out=dres, mean=mean, rstd=rstd,
                   eps=eps, is_rms_norm=rms, config=config)
    _, _, _, (rdx, rdw, rdb, _) = _reference(x, w, b, None, dy, rms=rms, eps=eps)
    assert_matches(dx, rdx + dres.double().cpu(), dtype, "dx")
    assert_matches(dw, rdw, dtype, "dweight")
    assert_matches(db, rdb, dtype, "dbias")


def ops_config(n):
    return cfg.tile_config(n, True, False, multiprocessors=launchers.multiprocessor_count(torch.device("cuda")))


@cuda_only
@pytest.mark.parametrize("rms", [True, False], ids=["rms", "ln"])
@pytest.mark.parametrize("flags", [{}, {"reload": True}, {"async_stages": 3}], ids=["held", "reload", "staged"])
def test_split_per_head(rms, flags):
    """Per-head weights on split parts: each head's rows (row · HEADS + head) read, and with reload
    read again (staged: through shared memory), at the same addresses."""
    heads, m, n = 4, 50, 700
    x, w, b, dy, _ = _inputs(m, n, torch.float32, heads=heads)
    dx, dw, db = torch.empty_like(x), torch.empty_like(w), torch.empty_like(b)
    ops.launch_bwd(x, dy, dx, weight=w, dweight=dw, dbias=db, eps=1e-6, is_rms_norm=rms,
                   config=_split(256, **flags))
    xs, dys = x.view(m, heads, n), dy.view(m, heads, n)
    _, _, _, (rdx, rdw, rdb, _) = _reference(xs, w, b, None, dys, rms=rms, eps=1e-6)
    assert_matches(dx, rdx.view(m * heads, n), torch.float32, "dx")
    assert_matches(dw, rdw, torch.float32, "dweight")
    assert_matches(db, rdb, torch.float32, "dbias")


@cuda_only
@pytest.mark.parametrize("n", [32768, 65536 + 3, 262144])
def test_split_is_bitwise_deterministic_and_matches_whole_path(n):
    """The heuristic's split config: 10 runs bitwise equal; the recomputed path agrees."""
    m = 64
    x, w, _, dy, _ = _inputs(m, n, torch.bfloat16, seed=n)
    runs = []
    for _ in range(10):
        dx, dw = torch.empty_like(x), torch.empty_like(w)
        ops.launch_bwd(x, dy, dx, weight=w, dweight=dw, eps=1e-6)
        runs.append((dx, dw))
    for dx, dw in runs[1:]:
        assert torch.equal(dx, runs[0][0]) and torch.equal(dw, runs[0][1])
    _, _, _, (rdx, rdw, _, _) = _reference(x, w, None, None, dy, rms=True, eps=1e-6)
    assert_matches(runs[0][0], rdx, torch.bfloat16, "dx")
    assert_matches(runs[0][1], rdw, torch.bfloat16, "dweight")


@cuda_only
@pytest.mark.parametrize("family", ["rms", "fused_add", "ln", "fused_ln"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("m,n,config", [
    (7, 1000, _split(128)),  # 8 parts, the last one partial
    (300, 4097, _split(1024, block_m=2)),  # 5 parts (not a power of two), the last has 1 column
    (33, 40000, _split(8192, warps=8)),  # 5 parts of 8192
    (300, 4096, _split(512, async_stages=3)),  # staged loads (async_stages), the wait spinning in PTX
    (33, 40000, _split(2048, async_stages=3)),
    (33, 40001, _split(2048, async_stages=3)),  # rows not vector-aligned: the pipeliner's loads as written
    # the previous row block read again for y (reload, what the heuristics ask) rather than held
    (7, 1000, _split(128, reload=True)),
    (300, 4097, _split(1024, block_m=2, reload=True)),
    (300, 4096, _split(512, async_stages=3, reload=True)),
    # the part's weight and bias loaded once and held across its row blocks (hold_weight):
    # a partial last part, two rows a block, staged loads
    (7, 1000, _split(128, reload=True, hold_weight=True)),
    (300, 4097, _split(1024, block_m=2, reload=True, hold_weight=True)),
    (300, 4096, _split(512, async_stages=3, hold_weight=True)),
])
def test_split_forward_matches_float64(family, dtype, m, n, config):
    """The forward's split rows (forward._split_rows): y, residual_out, mean and rstd against
    float64, outputs pre-filled with NaN (every element written); block t − 1's h held in registers
    across the exchange, or (reload) read again; the weight and bias read every row block or held."""
    from normkit import reference

    rms = family in ("rms", "fused_add")
    x, w, b, _, res = _inputs(m, n, dtype, seed=n)
    residual = res if family.startswith("fused") else None
    stats = torch.float64 if dtype == torch.float64 else torch.float32
    y, res_out = torch.full_like(x, float("nan")), torch.full_like(x, float("nan"))
    mean, rstd = torch.full((m,), float("nan"), device="cuda", dtype=stats), torch.full((m,), float("nan"),
                                                                                        device="cuda", dtype=stats)
    ops.launch_fwd(x, y, weight=w, bias=None if rms else b, residual=residual,
                   residual_out=None if residual is None else res_out, mean=None if rms else mean, rstd=rstd,
                   eps=1e-5, is_rms_norm=rms, config=config)
    cpu = lambda t: None if t is None else t.double().cpu()  # noqa: E731
    ry, rh, rmean, rrstd = reference.norm_fwd(cpu(x), cpu(w), None if rms else cpu(b), cpu(residual), eps=1e-5,
                                              is_rms_norm=rms)
    assert_matches(y, ry, dtype, "y")
    assert_matches(rstd, rrstd, stats, "rstd")
    if not rms:
        assert_matches(mean, rmean, stats, "mean")
    if residual is not None:
        assert_matches(res_out, rh, dtype, "residual_out")


@cuda_only
@pytest.mark.parametrize("n", [20000, 40000, 100000, 200000])
@pytest.mark.parametrize("dtype,out_dtype", [(torch.bfloat16, torch.bfloat16), (torch.bfloat16, torch.float32),
                                             (torch.float16, torch.float16), (torch.float16, torch.float32), (torch.float32, torch.float32),
                                             (torch.float32, torch.bfloat16)], ids=str)
def test_rms_forward_heuristic_matches_float64_for_each_y(n, dtype, out_dtype):
    """RMSNorm's forward through the GPU heuristic where y's size picks the tile
    (config.forward.RMS_SPLIT / RMS_SPLIT_FP32, RELOAD_CAP: split parts of 16 KB of the wider of x and y,
    whole rows capped only for a 2-byte y): y and rstd against float64, y pre-filled with NaN."""
    from normkit import reference

    x, w, _, _, _ = _inputs(33, n, dtype, seed=n)
    y = torch.full(x.shape, float("nan"), device="cuda", dtype=out_dtype)
    rstd = torch.full((33,), float("nan"), device="cuda", dtype=torch.float32)
    ops.launch_fwd(x, y, weight=w, rstd=rstd, eps=1e-5, is_rms_norm=True)
    config = cfg.tile_config(n, False, False, multiprocessors=multiprocessor_count(x.device),
                             element_size=x.element_size(), out_element_size=y.element_size())
    ry, _, _, rrstd = reference.norm_fwd(x.double().cpu(), w.double().cpu(), None, None, eps=1e-5, is_rms_norm=True)
    assert_matches(y, ry, out_dtype if out_dtype.itemsize < dtype.itemsize else dtype, f"y ({config})")
    assert_matches(rstd, rrstd, torch.float32, "rstd")


@cuda_only
@pytest.mark.parametrize("n", [20000, 40000, 65536, 100000, 200000])
@pytest.mark.parametrize("dtype,out_dtype,residual_dtype", [
    (torch.bfloat16, torch.bfloat16, None), (torch.bfloat16, torch.float32, None), (torch.float32, torch.float32, None),
    (torch.float32, torch.bfloat16, None), (torch.bfloat16, torch.bfloat16, torch.bfloat16),
    (torch.bfloat16, torch.bfloat16, torch.float32), (torch.float32, torch.float32, torch.float32)], ids=str)
def test_layer_norm_forward_heuristic_matches_float64_for_each_y(n, dtype, out_dtype, residual_dtype):
    """LayerNorm's forward through the GPU heuristic on rows wider than 32768 (config.forward.LAYER_NORM_SPLIT:
    16 KB parts of x by x's and y's sizes; with a residual the fused add's 8 KB parts, FUSED_SPLIT;
    else the staged or three-read column tiles): y, residual_out, mean and rstd against float64, outputs
    pre-filled with NaN."""
    from normkit import reference

    m = 33
    x, w, b, _, _ = _inputs(m, n, dtype, seed=n)
    residual = None if residual_dtype is None else torch.randn(m, n, device="cuda").to(residual_dtype)
    y = torch.full(x.shape, float("nan"), device="cuda", dtype=out_dtype)
    res_out = None if residual is None else torch.full(x.shape, float("nan"), device="cuda", dtype=residual_dtype)
    mean, rstd = (torch.full((m,), float("nan"), device="cuda", dtype=torch.float32) for _ in range(2))
    ops.launch_fwd(x, y, weight=w, bias=b, residual=residual, residual_out=res_out, mean=mean, rstd=rstd, eps=1e-5,
                   is_rms_norm=False)
    config = cfg.tile_config(n, False, False, multiprocessors=multiprocessor_count(x.device), residual=residual is not None,
                             layer_norm=True, element_size=x.element_size(), out_element_size=y.element_size())
    cpu = lambda t: None if t is None else t.double().cpu()  # noqa: E731
    ry, rh, rmean, rrstd = reference.norm_fwd(cpu(x), cpu(w), cpu(b), cpu(residual), eps=1e-5, is_rms_norm=False)
    assert_matches(y, ry, out_dtype if out_dtype.itemsize < dtype.itemsize else dtype, f"y ({config})")
    assert_matches(mean, rmean, torch.float32, "mean")
    assert_matches(rstd, rrstd, torch.float32, "rstd")
    if residual is not None:
        assert_matches(res_out, rh, residual_dtype, "residual_out")  # the fp32 sum rounded once


@cuda_only
@pytest.mark.parametrize("n", [32768, 40000, 65536, 100000, 200000])
@pytest.mark.parametrize("dtype,residual_dtype", [
    (torch.bfloat16, torch.bfloat16), (torch.bfloat16, torch.float32), (torch.float32, torch.float32),
    (torch.float16, torch.float16), (torch.float64, torch.float64)], ids=str)
def test_fused_add_forward_heuristic_matches_float64(n, dtype, residual_dtype):
    """The fused add's forward through the GPU heuristic on rows it splits (config.forward.FUSED_SPLIT_STAGED:
    staged parts of 4 KB of the wider of x and the residual, holding the previous row block across the
    exchange; 8-byte rows in 8 KB parts re-reading it): y, residual_out and rstd against float64, outputs
    pre-filled with NaN."""
    from normkit import reference

    m = 33
    x, w, _, _, _ = _inputs(m, n, dtype, seed=n)
    residual = torch.randn(m, n, device="cuda").to(residual_dtype)
    y = torch.full(x.shape, float("nan"), device="cuda", dtype=dtype)
    res_out = torch.full(x.shape, float("nan"), device="cuda", dtype=residual_dtype)
    stats = torch.float64 if dtype == torch.float64 else torch.float32
    rstd = torch.full((m,), float("nan"), device="cuda", dtype=stats)
    ops.launch_fwd(x, y, weight=w, residual=residual, residual_out=res_out, rstd=rstd, eps=1e-5, is_rms_norm=True)
    config = cfg.tile_config(n, False, False, multiprocessors=multiprocessor_count(x.device), residual=True,
                             element_size=x.element_size(), residual_element_size=residual.element_size())
    if n * x.element_size() > 65536 and cfg.cdiv(n, 8192 // x.element_size()) <= multiprocessor_count(x.device):
        assert config.split, config  # (fp64 rows of 200000: 196 parts of 8 KB, more than an H200's SMs)
    cpu = lambda t: t.double().cpu()  # noqa: E731
    ry, rh, _, rrstd = reference.norm_fwd(cpu(x), cpu(w), None, cpu(residual), eps=1e-5, is_rms_norm=True)
    assert_matches(y, ry, dtype, f"y ({config})")
    assert_matches(rstd, rrstd, stats, "rstd")
    assert_matches(res_out, rh, residual_dtype, "residual_out")  # the fp32 sum rounded once


def test_interpreter_refuses_split_configs(device):
    if not interpret():
        pytest.skip("only the interpreter refuses split configs")
    x = torch.randn(4, 300)
    with pytest.raises(ValueError, match="interpreter"):
        ops.launch_bwd(x, x.clone(), torch.empty_like(x), eps=1e-6, config=_split(128))


def test_split_needs_resident_programs(device):
    """More parts × heads than resident programs: refused, never launched to deadlock; the heuristics
    take column tiles where a split would not fit (several weight heads, few SMs). The forward splits only
    rows of one head and refuses split configs with per-head weights (docs/design.md#split-rows)."""
    with pytest.raises(ValueError, match="resident"):
        cfg.backward_grid(_split(128), 100, 4, n=1000, heads=1)
    assert cfg.backward_grid(_split(128), 100, 132, n=1000, heads=1) == 16
    # and the heuristics fall back to column tiles when a split would not fit
    assert not cfg.tile_config(262144, True, False, heads=8, multiprocessors=132).split
    assert cfg.tile_config(262144, True, False, heads=1, multiprocessors=132).split
    assert cfg.tile_config(262144, False, False, multiprocessors=132).split  # RMSNorm's forward: 32 parts
    assert not cfg.tile_config(262144, False, False, multiprocessors=16).split  # on 16 SMs: column tiles
    assert not cfg.tile_config(262144, False, False, heads=8, multiprocessors=132).split
    assert cfg.tile_config(262144, False, False, multiprocessors=132, residual=True).split  # the fused add's splits
    assert not cfg.tile_config(262144, False, False, heads=8, multiprocessors=132, residual=True).split
    with pytest.raises(ValueError, match="needs one_tile=True"):
        cfg.TileConfig(1, 128, False, split=True)
    x = torch.randn(4, 300, device=device)
    with pytest.raises(ValueError, match="split rows take neither prefetch nor per-head weights"):
        ops.launch_fwd(x, torch.empty_like(x), weight=torch.ones(2, 150, device=device).view(2, 150), eps=1e-6,
                       config=_split(128))

