"""The benchmark's pure helpers and its behaviour without a GPU."""

import argparse
import json
import math

import pytest
import torch

from normkit import reference
from normkit.bench import cli, families, output, peers, timing
from normkit.bench.families import FAMILIES
from normkit.bench.inputs import float64_errors, make_inputs

ON_GPU = torch.cuda.is_available()


# ----------------------------------------------------------------------------- bytes and bandwidth
def test_min_bytes():
    assert timing.min_bytes("fwd", 16384, 4096, 2) == 2 * 16384 * 4096 * 2
    assert timing.min_bytes("bwd", 16384, 4096, 4) == 3 * 16384 * 4096 * 4
    with pytest.raises(KeyError):
        timing.min_bytes("both", 1, 1, 2)


def test_min_bytes_per_family():
    # The fused residual add moves 4·M·N·s both ways; LayerNorm like RMSNorm.
    assert timing.min_bytes("fwd", 16384, 4096, 2, "fused_add") == 4 * 16384 * 4096 * 2
    assert timing.min_bytes("bwd", 16384, 4096, 2, "fused_add") == 4 * 16384 * 4096 * 2
    assert timing.min_bytes("fwd", 16384, 4096, 4, "layer_norm") == 2 * 16384 * 4096 * 4
    assert timing.min_bytes("bwd", 16384, 4096, 2, "layer_norm") == 3 * 16384 * 4096 * 2
    for kind in ("fwd", "bwd"):  # the fused LayerNorm as the fused add
        assert timing.min_bytes(kind, 16384, 4096, 2, "fused_layer_norm") == 4 * 16384 * 4096 * 2
    assert timing.min_bytes("bwd", 8, 8, 2, "rms") == timing.min_bytes("bwd", 8, 8, 2)
    assert set(timing.PASS_TENSORS) == set(output.FAMILY_TITLES) == set(FAMILIES)
    with pytest.raises(KeyError):
        timing.min_bytes("fwd", 1, 1, 2, "group_norm")
    # H200 peer measurements: bf16 16384×4096 backward, fused add quack 144 µs = 88 %, LayerNorm 135 µs = 70 %.
    for family, seconds, pct in (("fused_add", 144e-6, 87.7), ("layer_norm", 135e-6, 70.2)):
        nbytes = timing.min_bytes("bwd", 16384, 4096, 2, family)
        assert timing.percent_of_copy(nbytes, seconds, 4249e9) == pytest.approx(pct, abs=0.2)


def test_min_bytes_of_the_gated_norm_and_of_wider_outputs():
    # gated: x and gate read, y written; x, gate and dy read, dx and dgate written
    assert timing.min_bytes("fwd", 8192, 8192, 2, "gated") == 3 * 8192 * 8192 * 2
    assert timing.min_bytes("bwd", 8192, 8192, 2, "gated") == 5 * 8192 * 8192 * 2
    # a forward's y of out_element_size bytes, a fused forward's residual and residual_out of
    # residual_element_size; the backward writes dx in x's width, so both leave it as it is
    mn = 4096 * 1024
    assert timing.min_bytes("fwd", 4096, 1024, 2, "gated", out_element_size=4) == (2 * 2 + 4) * mn
    assert timing.min_bytes("fwd", 4096, 1024, 2, "rms", 4, 4) == (2 + 4) * mn
    for family in ("fused_add", "fused_layer_norm"):  # x, residual → y, residual_out
        assert timing.min_bytes("fwd", 4096, 1024, 2, family, 0, 4) == (2 + 4 + 2 + 4) * mn
        assert timing.min_bytes("fwd", 4096, 1024, 2, family, 4, 4) == (2 + 4 + 4 + 4) * mn
        assert timing.min_bytes("bwd", 4096, 1024, 2, family, 4, 4) == timing.min_bytes("bwd", 4096, 1024, 2, family)


def test_percent_of_copy_matches_published_peer_figures():
    # H200 peer measurements: bf16 16384×4096 backward, quack 121 µs = 79 % of 4249 GB/s (µs are rounded).
    pct = timing.percent_of_copy(timing.min_bytes("bwd", 16384, 4096, 2), 121e-6, 4249e9)
    assert pct == pytest.approx(78.3, abs=0.2)
    assert timing.percent_of_copy(1000, 1e-6, 1e9) == pytest.approx(100.0)
    assert timing.percent_of_copy(1000, None, 1e9) is None
    assert timing.percent_of_copy(1000, 1e-6, None) is None


def test_input_sets_rotate_only_when_data_fits_in_l2():
    l2 = 50 * 2**20
    assert timing.input_sets_needed(timing.min_bytes("bwd", 131072, 8192, 2), l2) == 1
    assert timing.input_sets_needed(32 * 2**20, l2) == math.ceil(4 * l2 / (32 * 2**20)) == 7
    assert timing.input_sets_needed(32 * 2**20, 4 * 2**20) == 1  # a small L2: one set is cold enough
    assert timing.input_sets_needed(1, l2) == 16
    assert timing.input_sets_needed(0, l2) == 1
    assert timing.input_sets_needed(32 * 2**20) == timing.input_sets_needed(32 * 2**20, timing.l2_bytes())


def test_l2_size_comes_from_the_device(monkeypatch):
    from types import SimpleNamespace

    assert timing.l2_bytes(torch.device("cpu")) == timing.FALLBACK_L2_BYTES
    if not ON_GPU:
        assert timing.l2_bytes() == timing.FALLBACK_L2_BYTES
    properties = {7: SimpleNamespace(L2_cache_size=60 * 2**20), 8: SimpleNamespace()}  # 8: an older torch
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: properties[index])
    timing._cuda_l2_bytes.cache_clear()
    try:
        assert timing.l2_bytes("cuda:7") == 60 * 2**20
        assert timing.l2_bytes(torch.device("cuda", 8)) == timing.FALLBACK_L2_BYTES
    finally:
        timing._cuda_l2_bytes.cache_clear()


def test_spread_is_p20_median_p80():
    times = [float(t) for t in range(1, 12)]  # 1 … 11: p20 = 3, median = 6, p80 = 9
    assert timing.spread(times) == pytest.approx((3.0, 6.0, 9.0))
    assert timing.spread([5.0, 1.0, 3.0, 2.0, 4.0]) == pytest.approx((1.8, 3.0, 4.2))  # order-free
    assert timing.spread([2.5]) == (2.5, 2.5, 2.5)
    with pytest.raises(ValueError, match="times"):
        timing.spread([])


def test_wall_time_counts_calls():
    calls = []
    seconds = timing.wall_time(lambda: calls.append(1), torch.device("cpu"), min_seconds=0.0,
                               min_calls=5)
    assert seconds > 0 and len(calls) == 7  # two warm-up calls, five timed


# ----------------------------------------------------------------------------- parsing
def test_parse_shapes_dtypes_impls():
    assert cli.parse_shapes("4096x2048, 16384×4096,") == [(4096, 2048), (16384, 4096)]
    for bad in ("4096", "4096x", "0x5", "axb", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            cli.parse_shapes(bad)
    assert cli.parse_dtypes("bf16,FP32") == [torch.bfloat16, torch.float32]
    with pytest.raises(argparse.ArgumentTypeError):
        cli.parse_dtypes("int8")
    assert cli.parse_impls("normkit,quack") == ["normkit", "quack"]
    with pytest.raises(argparse.ArgumentTypeError):
        cli.parse_impls("apex")


def test_grid():
    assert len(cli.DEFAULT_GRID) == 15 and cli.DEFAULT_GRID[0] == (torch.float32, 16384, 4096)
    assert (torch.bfloat16, 2048, 131072) in cli.DEFAULT_GRID
    assert cli.build_grid([(8, 16)], None) == [(torch.bfloat16, 8, 16)]
    assert cli.build_grid([(8, 16)], [torch.float32, torch.float16]) == [
        (torch.float32, 8, 16), (torch.float16, 8, 16)]
    assert cli.build_grid(None, [torch.float16]) == [(torch.float16, 16384, 4096)]


def test_parse_families():
    assert cli.parse_families("all") == ["rms", "fused_add", "layer_norm", "fused_layer_norm", "gated"]
    assert cli.parse_families(" Fused_Add, rms,fused_add") == ["fused_add", "rms"]
    assert cli.parse_families("layer_norm,all") == list(FAMILIES)
    for bad in ("group_norm", "", ",", "fused-add"):
        with pytest.raises(argparse.ArgumentTypeError):
            cli.parse_families(bad)
    assert cli.parser().parse_args([]).family == ["rms"]
    assert cli.parser().parse_args(["--family", "all"]).family == list(FAMILIES)


def test_help_lists_the_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--family" in out and "rms,fused_add,layer_norm,fused_layer_norm,gated," in out and "% copy" in out


def test_grids_per_family():
    grids = cli.build_grids(cli.parse_families("all"), None, None)
    fp32_wide = [(torch.float32, 4096, 16384), (torch.float32, 4096, 65536)]  # every family's
    assert list(grids) == ["rms", "fused_add", "layer_norm", "fused_layer_norm", "gated"]
    assert grids["rms"] == [*cli.DEFAULT_GRID, *fp32_wide]
    bf16 = torch.bfloat16
    wide = [(bf16, 4096, 16384), (bf16, 8192, 32768), (bf16, 4096, 65536), (bf16, 2048, 131072)]
    assert all(case in cli.DEFAULT_GRID for case in wide)  # the same wide rows as RMSNorm's
    assert grids["fused_add"] == [(bf16, 16384, 2048), (bf16, 16384, 4096), (bf16, 16384, 8192),
                                  (bf16, 4096, 2048), *wide, *fp32_wide]
    assert grids["layer_norm"] == [(bf16, 16384, 1024), (bf16, 16384, 4096), (bf16, 16384, 8192),
                                   (bf16, 4096, 2048), *wide, (torch.float32, 16384, 4096), *fp32_wide]
    assert grids["fused_layer_norm"] == [(bf16, 16384, 4096), (bf16, 16384, 8192), *wide, *fp32_wide]
    assert all(m * n * dtype.itemsize >= 64 * 2**20 for dtype, m, n in grids["gated"])  # the issue's ≥ 64 MB
    fp32 = cli.build_grids(["fused_add", "layer_norm"], None, [torch.float32])
    assert fp32 == {"fused_add": fp32_wide, "layer_norm": [(torch.float32, 16384, 4096), *fp32_wide]}
    shapes = cli.build_grids(["layer_norm", "rms"], [(8, 16)], None)
    assert shapes == {"layer_norm": [(bf16, 8, 16)], "rms": [(bf16, 8, 16)]}
    assert cli.build_grids(["fused_add"], None, None, dry_run=True) == {"fused_add": cli.DRY_RUN_GRID}


# ----------------------------------------------------------------------------- rendering
def _row(impl, fwd, bwd, **extra):
    row = {"impl": impl, "dtype": "torch.bfloat16", "m": 4096, "n": 2048, "fwd_s": fwd,
           "bwd_s": bwd, "fwd_pct": 50.0, "bwd_pct": 75.0, "fwd_method": "graph",
           "bwd_method": "graph", "wall_fwd_s": 1e-5, "wall_fwd_bwd_s": 8e-5,
           "err_y": 1e-3, "err_dx": 2e-3, "err_dweight": 3e-3}
    row.update(extra)
    return row


def test_geomean_speedup_over_the_best_peer():
    # shape A: best peer 40 vs ours 20 (2×); shape B: best peer 10 vs ours 20 (0.5×); shape C: no
    # peer time (a peer failed) and shape D: we failed — both left out. Geomean of 2 and 0.5 = 1.
    results = [_row("normkit", 1e-5, 20e-6), _row("native", 1e-5, 60e-6), _row("compile", 1e-5, 40e-6),
               _row("normkit", 1e-5, 20e-6, n=4096), _row("compile", 1e-5, 10e-6, n=4096),
               _row("normkit", 1e-5, 20e-6, n=8192), {"impl": "liger", "dtype": "torch.bfloat16", "m": 4096,
                                                       "n": 8192, "error": "RuntimeError: too wide"},
               {"impl": "normkit", "dtype": "torch.bfloat16", "m": 4096, "n": 16384, "error": "x"},
               _row("native", 1e-5, 9e-6, n=16384)]
    speedup, shapes = output.geomean_speedup(results, "bwd")
    assert shapes == 2 and abs(speedup - 1.0) < 1e-12
    assert output.geomean_speedup(results[:1], "bwd") is None
    markdown = output.render_markdown(results, {"device": "NVIDIA H200"})
    assert "Geomean backward speedup of normkit over the best measured peer: **1.00×** (2 shapes)" in markdown


def test_markdown_rendering():
    results = [_row("normkit", 9e-6, 30e-6), _row("compile", 10e-6, 29e-6, bwd_method="do_bench"),
               {"impl": "liger", "dtype": "torch.bfloat16", "m": 4096, "n": 2048,
                "error": "RuntimeError: N too large"}]
    env = {"device": "NVIDIA H200", "torch": "2.11", "triton": "3.6", "copy_gbps": 4249.0}
    text = output.render_markdown(results, env)
    assert "NVIDIA H200" in text and "4249 GB/s" in text and "triton 3.6" in text
    assert "| dtype M×N | normkit | compile | liger | best, % copy |" in text
    assert "| bf16 4096×2048 | 30 | 29† | fails | compile 29, 75 % |" in text  # backward
    assert "| bf16 4096×2048 | 9 | 10 | fails | normkit 9, 50 % |" in text  # forward
    assert "| bf16 4096×2048 | 10 / 80 | 10 / 80 | — |" in text  # eager
    assert output.markdown_table(["a", "b"], [[1, 2]]) == "| a | b |\n|---|---|\n| 1 | 2 |"


def test_text_table_and_rows():
    rows = output.bench_rows([_row("normkit", 9e-6, 1.5e-3),
                              {"impl": "liger", "dtype": "torch.float32", "m": 1, "n": 2,
                               "error": "RuntimeError: boom"}])
    assert rows[0][:5] == ["bf16 4096×2048", "normkit", "9", "50 %", "1500"]
    spread = output.bench_rows([_row("normkit", 9e-6, 30e-6, fwd_p20_s=8.5e-6, fwd_p80_s=9.5e-6)])[0]
    assert spread[2] == "9 (8.5–9.5)" and spread[4] == "30"
    assert output.fmt_us(30.44e-6) == "30.4" and output.fmt_us(None) == "—"
    assert rows[0][-1] == "3.0e-03"
    assert rows[1][2] == "fails: RuntimeError: boom"
    table = output.text_table(output.BENCH_HEADERS, rows).splitlines()
    assert len(table) == 4 and len({len(table[0]), len(table[1])}) == 1


def test_csv_has_every_column_and_blanks_where_a_row_lacks_one():
    import csv
    import io

    rows = [_row("normkit", 9e-6, 30e-6, family="rms", fwd_p20_s=8.5e-6, fwd_p80_s=9.5e-6),
            {"family": "rms", "impl": "liger", "dtype": "torch.bfloat16", "m": 4096, "n": 2048,
             "error": "RuntimeError: boom, with a comma"}]
    text = io.StringIO()
    output.write_csv(rows, text)
    parsed = list(csv.DictReader(io.StringIO(text.getvalue())))
    header = text.getvalue().splitlines()[0].split(",")
    assert header[:5] == ["family", "impl", "dtype", "m", "n"]
    assert {"fwd_s", "fwd_p20_s", "fwd_p80_s", "bwd_s", "error"} <= set(header)
    assert float(parsed[0]["fwd_s"]) == 9e-6 and float(parsed[0]["fwd_p80_s"]) == 9.5e-6
    assert parsed[0]["error"] == "" and parsed[1]["fwd_s"] == ""
    assert parsed[1]["error"] == "RuntimeError: boom, with a comma"


def test_families_get_sections_and_all_their_errors():
    fused = _row("normkit", 20e-6, 40e-6, family="fused_add", err_dresidual=9e-3)
    ln = _row("native", 10e-6, 30e-6, family="layer_norm", err_dbias=8e-3)
    results = [_row("normkit", 9e-6, 30e-6, family="rms"), fused, ln]
    assert output.bench_rows([fused])[0][-1] == "9.0e-03"
    assert output.bench_rows([ln])[0][-1] == "8.0e-03"
    text = output.bench_tables(results)
    assert [line for line in text.splitlines() if line and line[0].isupper()] == [
        "RMSNorm", "Fused residual add + RMSNorm (prenorm)", "LayerNorm (weight and bias)"]
    markdown = output.render_markdown(results, {"device": "NVIDIA H200", "copy_gbps": 4249.0})
    sections = markdown.split("\n## ")[1:]
    assert [s.splitlines()[0] for s in sections] == [
        "RMSNorm", "Fused residual add + RMSNorm (prenorm)", "LayerNorm (weight and bias)"]
    assert "### Backward (3·M·N·s bytes)" in sections[0]
    assert "### Backward (4·M·N·s bytes)" in sections[1] and "### Forward (4·M·N·s" in sections[1]
    assert "| dtype M×N | normkit | best, % copy |" in sections[1]
    assert "| bf16 4096×2048 | 40 | normkit 40, 75 % |" in sections[1]
    assert "| dtype M×N | native | best, % copy |" in sections[2]


def test_plot_is_optional(tmp_path):
    path = tmp_path / "p.png"
    problem = output.plot([_row("normkit", 9e-6, 30e-6)], str(path))
    assert (problem is None and path.stat().st_size > 0) or "matplotlib" in problem


# ----------------------------------------------------------------------------- accuracy
def test_float64_errors():
    x, weight, dy = make_inputs((5, 33), torch.float32, "cpu", seed=1)
    from normkit import reference

    y, rstd = reference.rms_norm_fwd(x.double(), weight.double(), 1e-6)
    dx, dweight = reference.rms_norm_bwd(x.double(), weight.double(), dy.double(), None, 1e-6)
    bad = y.clone()
    bad[0, 0] = math.nan
    errors = float64_errors(x, weight, dy, 1e-6, {
        "y": ("y", y), "rstd": ("rstd", rstd), "dx": ("dx", dx), "dweight": ("dweight", dweight),
        "y+1%": ("y", y * 1.01), "nan": ("y", bad)})
    assert errors["y"] == errors["rstd"] == errors["dx"] == errors["dweight"] == 0.0
    assert errors["y+1%"] == pytest.approx(0.01)
    assert math.isnan(errors["nan"])


def test_float64_errors_of_per_head_offset_and_llama_casting():
    """Per-head parameters (H, N), weight_offset and x_hat_dtype reach the reference: its own outputs
    score 0, a 1 % error scores 0.01, and outputs of the plain norm do not pass for them."""
    gen = torch.Generator().manual_seed(5)
    x, dy = torch.randn(4, 3, 40, generator=gen), torch.randn(4, 3, 40, generator=gen)
    weight, bias = 1 + 0.25 * torch.randn(3, 40, generator=gen), 0.1 * torch.randn(3, 40, generator=gen)
    for options in ({"weight_offset": 1.0}, {"x_hat_dtype": torch.bfloat16}, {"is_rms_norm": False}):
        is_rms = options.get("is_rms_norm", True)
        extra = {k: v for k, v in options.items() if k != "is_rms_norm"}
        y, _, mean, rstd = reference.norm_fwd(x.double(), weight.double(), bias.double(), eps=1e-6,
                                              is_rms_norm=is_rms, **extra)
        dx, dweight, dbias = reference.norm_bwd(x.double(), weight.double(), dy.double(), mean, rstd, eps=1e-6,
                                                is_rms_norm=is_rms, bias_dtype=torch.float64, **extra)
        outputs = {"y": ("y", y), "rstd": ("rstd", rstd.reshape(-1)), "dx": ("dx", dx.reshape(-1, 40)),
                   "dweight": ("dweight", dweight), "dbias": ("dbias", dbias),
                   "dweight+1%": ("dweight", 1.01 * dweight)}
        errors = float64_errors(x, weight, dy, 1e-6, outputs, bias=bias, **options)
        assert errors.pop("dweight+1%") == pytest.approx(0.01), options
        assert all(e < 1e-15 for e in errors.values()), (options, errors)
        plain = float64_errors(x, weight, dy, 1e-6, outputs, bias=bias, is_rms_norm=is_rms)
        if "weight_offset" in options:
            assert plain["y"] > 0.1 and plain["dx"] > 0.1
        elif "x_hat_dtype" in options:  # x̂ rounded to bf16: about bf16's rounding, 2^-9
            assert 1e-4 < plain["y"] < 1e-2 and plain["dweight"] > 1e-4


def test_strided_inputs_and_dx_scale_for_single_columns():
    x, weight, dy = make_inputs((4, 6), torch.float16, "cpu", layout="strided")
    assert x.stride() == (12, 2) and dy.stride() == (12, 2) and weight.dtype == torch.float16
    x, weight, dy = make_inputs((3, 1), torch.float32, "cpu")
    # N = 1: dx = rstd·g·(1 − x̂²) ≈ rstd·g·eps/x² is almost all cancellation; an error of
    # 1e-7·rstd·|g| must count as ~1e-7, not as 1e-7 / (eps/x²).
    from normkit import reference

    dx, _ = reference.rms_norm_bwd(x.double(), weight.double(), dy.double(), None, 1e-6)
    noise = 1e-7 * (dy.double() * weight.double() / x.double().abs())
    errors = float64_errors(x, weight, dy, 1e-6, {"dx": ("dx", dx + noise)})
    assert errors["dx"] == pytest.approx(1e-7, rel=1e-2)


def test_family_errors_name_every_output_and_gradient():
    eps = 1e-6
    for name, family in FAMILIES.items():
        sample = families.make_sample(family, (torch.float32, 6, 40), "cpu", seed=3)
        named = dict(zip(family.inputs + family.grads, sample.inputs + sample.grads))
        assert named["x"].shape == (6, 40) and named["weight"].shape == (40,)
        if "residual" in named:  # fresh tensors, not copies of x or dy
            assert not torch.equal(named["residual"], named["x"])
            assert not torch.equal(named["dresidual_out"], named["dy"])
        double = {k: t.double() for k, t in named.items()}
        y, h, mean, rstd = reference.norm_fwd(
            double["x"], double["weight"], double.get("bias"), double.get("residual"), eps=eps,
            is_rms_norm=family.is_rms_norm, gate=double.get("gate"))
        dh, dweight, dbias, *dgate = reference.norm_bwd(
            h, double["weight"], double["dy"], mean, rstd, double.get("dresidual_out"), eps=eps,
            is_rms_norm=family.is_rms_norm, bias_dtype=torch.float64 if "bias" in named else None,
            gate=double.get("gate"))
        outputs = {"y": y, "residual_out": h}
        grads = {"dx": dh, "dresidual": dh, "dweight": dweight, "dbias": dbias, "dgate": dgate[0] if dgate else None}
        input_grads = [grads["d" + k] for k in family.inputs]
        exact = families.errors(family, sample, [outputs[k] for k in family.outputs], input_grads,
                                eps)
        expected = {"rms": {"y", "dx", "dweight"},
                    "fused_add": {"y", "residual_out", "dx", "dresidual", "dweight"},
                    "layer_norm": {"y", "dx", "dweight", "dbias"},
                    "fused_layer_norm": {"y", "residual_out", "dx", "dresidual", "dweight", "dbias"},
                    "gated": {"y", "dx", "dweight", "dgate"}}[name]
        assert set(exact) == expected and all(v == 0.0 for v in exact.values()), name
        off = families.errors(family, sample, [outputs[k] for k in family.outputs],
                              [1.01 * g for g in input_grads], eps)
        assert off["dweight"] == pytest.approx(0.01) and off["y"] == 0.0, name
        assert off.get("dbias", 0.01) == pytest.approx(0.01), name


def test_composites_match_the_reference():
    x, weight, dy = make_inputs((5, 48), torch.float32, "cpu", seed=2)
    gen = torch.Generator().manual_seed(0)
    residual, bias = torch.randn(5, 48, generator=gen), torch.randn(48, generator=gen)
    y, h = families.fused_add_composite(x, residual, weight, 1e-6)
    y_ref, h_ref, _, _ = reference.norm_fwd(x, weight, None, residual, eps=1e-6)
    torch.testing.assert_close(y, y_ref)
    torch.testing.assert_close(h, h_ref)
    torch.testing.assert_close(
        families.layer_norm_composite(x, weight, bias, 1e-5),
        torch.nn.functional.layer_norm(x, (48,), weight, bias, 1e-5))
    y, h = families.fused_layer_norm_composite(x, residual, weight, bias, 1e-5)
    y_ref, h_ref, _, _ = reference.norm_fwd(x, weight, bias, residual, eps=1e-5, is_rms_norm=False)
    torch.testing.assert_close(y, y_ref)
    torch.testing.assert_close(h, h_ref)
    y, h = families.fused_layer_norm_composite(x.bfloat16(), residual, weight.bfloat16(), bias.bfloat16(), 1e-5)
    assert y.dtype == torch.bfloat16 and h.dtype == torch.float32
    y, h = families.fused_add_composite(x.bfloat16(), residual, weight.bfloat16(), 1e-6)
    assert y.dtype == torch.bfloat16 and h.dtype == torch.float32


def test_liger_extra_args_follow_the_signature():
    class FusedAdd:  # Liger 0.8.5's LigerFusedAddRMSNormFunction, plus a later argument
        @staticmethod
        def forward(ctx, X, R, W, eps, offset=1.0, casting_mode="gemma", in_place=True,
                    row_mode=None):
            pass

    class LayerNorm:
        @staticmethod
        def forward(ctx, X, W, B, eps):
            pass

    class Required:
        @staticmethod
        def forward(ctx, X, W, eps, mode):
            pass

    assert peers.liger_extra_args(FusedAdd, 4) == [0.0, "llama", False, None]
    assert peers.liger_extra_args(LayerNorm, 4) == []
    assert peers.liger_extra_args(Required, 3) == []


def test_a_family_without_a_peer_skips_it(capsys):
    with pytest.raises(LookupError):
        FAMILIES["layer_norm"].load("quack")
    assert [i.name for i in cli.load_impls(["quack", "native"], "layer_norm")] == ["native"]
    assert "skipping quack (layer_norm): LookupError" in capsys.readouterr().err


# ----------------------------------------------------------------------------- the command line
@pytest.mark.skipif(ON_GPU, reason="the CPU behaviour")
def test_cli_without_gpu_measures_nothing_and_fails(capsys):
    assert cli.main([]) == 1
    assert "needs a CUDA GPU" in capsys.readouterr().err


def test_cli_dry_run(capsys, tmp_path):
    import csv

    path, csv_path = tmp_path / "bench.json", tmp_path / "bench.csv"
    assert cli.main(["--dry-run", "--shapes", "8x96", "--dtypes", "fp32", "--markdown",
                     "--json", str(path), "--csv", str(csv_path)]) == 0
    out = capsys.readouterr().out
    assert "DRY RUN" in out and "not a GPU measurement" in out and "| fp32 8×96 |" in out
    assert "relative error vs float64" in out and "wall µs per call" in out  # the legend
    data = json.loads(path.read_text())
    with open(csv_path, newline="") as f:
        csv_rows = list(csv.DictReader(f))
    assert [(r["impl"], r["m"], r["n"]) for r in csv_rows] == [("normkit", "8", "96"), ("native", "8", "96")]
    assert [float(r["wall_fwd_s"]) for r in csv_rows] == [r["wall_fwd_s"] for r in data["results"]]
    assert data["environment"]["dry_run"] is True
    assert [r["impl"] for r in data["results"]] == ["normkit", "native"]
    for r in data["results"]:
        assert r["wall_fwd_s"] > 0 and r["wall_fwd_bwd_s"] > 0 and "fwd_s" not in r
        assert max(r["err_y"], r["err_dx"], r["err_dweight"]) < 1e-5


def test_cli_reports_a_failing_impl(monkeypatch, capsys):
    from normkit.bench import peers

    def broken(*args, **kwargs):
        raise RuntimeError("no such kernel")

    impl = peers.load("normkit")
    monkeypatch.setattr(peers, "load", lambda name: peers.Impl(name, broken, impl.backward))
    assert cli.main(["--dry-run", "--shapes", "2x8", "--impls", "normkit"]) == 1
    captured = capsys.readouterr()
    assert "fails: RuntimeError: no such kernel" in captured.out
    assert "normkit failed" in captured.err


@pytest.mark.parametrize("family", ["fused_add", "layer_norm", "fused_layer_norm"])
def test_cli_dry_run_per_family(family, capsys, tmp_path):
    path = tmp_path / "bench.json"
    assert cli.main(["--dry-run", "--family", family, "--shapes", "4x64", "--dtypes", "fp32",
                     "--markdown", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert output.FAMILY_TITLES[family] in out and "| fp32 4×64 |" in out
    data = json.loads(path.read_text())
    assert data["environment"]["families"] == [family]
    assert [(r["family"], r["impl"]) for r in data["results"]] == [(family, "normkit"),
                                                                    (family, "native")]
    expected = {"fused_add": {"y", "residual_out", "dx", "dresidual", "dweight"},
                "layer_norm": {"y", "dx", "dweight", "dbias"},
                "fused_layer_norm": {"y", "residual_out", "dx", "dresidual", "dweight", "dbias"}}[family]
    for r in data["results"]:
        errors = {k[4:]: v for k, v in r.items() if k.startswith("err_")}
        assert set(errors) == expected and max(errors.values()) < 1e-5, r
        assert r["wall_fwd_s"] > 0 and r["wall_fwd_bwd_s"] > 0 and "fwd_s" not in r


def test_run_takes_a_plain_rms_grid():
    # The report (`normkit.report`) passes a list of cases: RMSNorm rows.
    results, env = cli.run([(torch.float32, 4, 32)], ["native"], torch.device("cpu"), dry_run=True,
                           quiet=True)
    assert env["families"] == ["rms"] and [(r["family"], r["impl"]) for r in results] == [
        ("rms", "native")]
    assert max(results[0]["err_y"], results[0]["err_dx"], results[0]["err_dweight"]) < 1e-5


# ----------------------------------------------------------------------------- bench --eager
def test_loop_times_counts_calls_and_repeats():
    calls = []
    times = timing.loop_times(lambda: calls.append(1), torch.device("cpu"), calls=5, repeats=3, warmup=2)
    assert len(times) == 3 and all(t > 0 for t in times) and len(calls) == 2 + 3 * 5


def _eager_row(impl, scale, **extra):
    row = {"family": "rms", "impl": impl, "dtype": "torch.bfloat16", "m": 8, "n": 4096}
    for i, (key, _) in enumerate(output.EAGER_PASSES):
        base = scale * (i + 1) * 1e-5
        row.update({f"{key}_min_s": base, f"{key}_p20_s": 1.1 * base, f"{key}_s": 1.2 * base,
                    f"{key}_p80_s": 1.3 * base})
    row.update(extra)
    return row


def test_eager_tables_show_minimum_ratio_slowest_and_spread():
    results = [_eager_row("normkit", 3.0), _eager_row("native", 1.0), _eager_row("compile", 2.0),
               {"family": "rms", "impl": "liger", "dtype": "torch.bfloat16", "m": 8, "n": 4096,
                "error": "ImportError: boom"}]
    headers, rows = output.eager_summary(results)
    assert headers == ["dtype M×N", "pass", "normkit", "native", "compile", "liger", "normkit ÷ native", "slowest"]
    assert rows == [["bf16 8×4096", "fwd (no grad)", "30", "10", "20", "fails", "3.00×", "normkit"],
                    ["bf16 8×4096", "fwd", "60", "20", "40", "fails", "3.00×", "normkit"],
                    ["bf16 8×4096", "fwd + bwd", "90", "30", "60", "fails", "3.00×", "normkit"]]
    detail = output.eager_rows(results)
    assert detail[1] == ["bf16 8×4096", "native", "12 (11–13)", "24 (22–26)", "36 (33–39)"]
    assert detail[3][2] == "fails: ImportError: boom"
    text = output.eager_tables(results)
    assert "RMSNorm: minimum µs per call" in text and "RMSNorm: median µs per call (p20–p80)" in text
    _, without_native = output.eager_summary(results[:1])
    assert without_native[0][-2:] == ["—", "—"]  # no baseline, nothing slower to name
    markdown = output.eager_markdown(results, {"device": "NVIDIA H200", "torch": "2.11", "triton": "3.6"})
    assert "| bf16 8×4096 | fwd + bwd | 90 | 30 | 60 | fails | 3.00× | normkit |" in markdown
    assert "NVIDIA H200" in markdown and "Dry run" not in markdown


def test_eager_grid_defaults_and_overrides():
    from normkit.bench import eager

    bf16 = torch.bfloat16
    assert eager.DEFAULT_GRID == [(bf16, 1, 4096), (bf16, 8, 4096), (bf16, 1024, 4096), (bf16, 16384, 4096)]
    grids = cli.build_grids(["rms", "layer_norm"], None, None, default=eager.DEFAULT_GRID)
    assert grids == {"rms": eager.DEFAULT_GRID, "layer_norm": eager.DEFAULT_GRID}
    assert cli.build_grids(["rms"], None, [torch.float32], default=eager.DEFAULT_GRID) == {"rms": []}
    assert cli.build_grids(["rms"], [(2, 64)], [torch.float16], default=eager.DEFAULT_GRID) == {
        "rms": [(torch.float16, 2, 64)]}


@pytest.mark.parametrize("argv, message", [
    (["--eager", "--calls", "0"], "argument --calls: --calls must be a whole number ≥ 1, got '0'"),
    (["--eager", "--repeats", "many"], "argument --repeats: --repeats must be a whole number ≥ 1, got 'many'"),
    (["--calls", "5"], "--calls and --repeats size the --eager loop; add --eager"),
    (["--eager", "--plot", "x.png"], "--plot draws % of copy bandwidth, which --eager does not measure"),
])
def test_eager_options_are_validated(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in err, err


@pytest.mark.skipif(ON_GPU, reason="the CPU behaviour")
def test_eager_without_gpu_measures_nothing_and_fails(capsys):
    assert cli.main(["--eager"]) == 1
    assert "needs a CUDA GPU" in capsys.readouterr().err


def test_eager_dry_run(capsys, tmp_path):
    import csv

    path, csv_path = tmp_path / "eager.json", tmp_path / "eager.csv"
    assert cli.main(["--eager", "--dry-run", "--family", "rms,layer_norm", "--shapes", "4x64", "--dtypes", "fp32",
                     "--calls", "3", "--markdown", "--json", str(path), "--csv", str(csv_path)]) == 0
    out = capsys.readouterr().out
    assert "DRY RUN" in out and "loops of 3 calls back to back" in out and "torch.no_grad()" in out
    assert "RMSNorm: minimum µs per call" in out and "LayerNorm (weight and bias): minimum µs per call" in out
    assert "| fp32 4×64 | fwd + bwd |" in out  # --markdown
    data = json.loads(path.read_text())
    assert data["environment"]["eager"] == {"calls": 3, "repeats": 2, "warmup": 1}
    assert [(r["family"], r["impl"]) for r in data["results"]] == [
        ("rms", "normkit"), ("rms", "native"), ("layer_norm", "normkit"), ("layer_norm", "native")]
    for r in data["results"]:
        for key, _ in output.EAGER_PASSES:
            assert 0 < r[f"{key}_min_s"] <= r[f"{key}_p20_s"] <= r[f"{key}_s"] <= r[f"{key}_p80_s"], r
        assert "fwd_s" not in r and not any(k.startswith("err_") for k in r)
    with open(csv_path, newline="") as f:
        csv_rows = list(csv.DictReader(f))
    assert [float(r["eager_fwd_bwd_s"]) for r in csv_rows] == [r["eager_fwd_bwd_s"] for r in data["results"]]


def test_eager_reports_a_failing_impl(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise RuntimeError("no such kernel")

    monkeypatch.setattr(peers, "load", lambda name: peers.Impl(name, broken, None))
    assert cli.main(["--eager", "--dry-run", "--shapes", "2x8", "--impls", "normkit,native"]) == 1
    captured = capsys.readouterr()
    assert captured.out.count("fails: RuntimeError: no such kernel") == 2
    assert "normkit failed on rms bf16 2×8" in captured.err
