"""The development tools the device runs depend on still run: tools/launch_tile.py (the target a
profiler attaches to) launches a forced tile and checks its dx (or y) against the heuristic's, here
through the interpreter on a tiny problem; a malformed --tile is refused with a message; the
sweep's and ptx_stats' tile specs parse into the TileConfig they name; the sweep's candidates and
heuristic row for a gated norm are the library's. (The benchmark tables'
script is tested in tests/test_benchmarks.py.)"""

import dataclasses
import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _tool(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("family", ["rms", "fused_add", "layer_norm"])
def test_launch_tile_runs_a_forced_joined_tile(family, capsys):
    rc = _tool("launch_tile").main(["--family", family, "--shape", "9x300", "--tile", "2,512,4,1", "--joined",
                              "--launches", "1"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "joined_sums=True" in out and "max |dx - heuristic's|" in out


@pytest.mark.parametrize("family", ["rms", "fused_add", "layer_norm"])
def test_launch_tile_runs_a_forced_forward_tile(family, capsys):
    rc = _tool("launch_tile").main(["--kind", "fwd", "--family", family, "--shape", "9x300", "--config",
                                    "1x128:4:col", "--launches", "1"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "fwd" in out and "block_n=128, one_tile=False" in out and "max |y - heuristic's|" in out


def test_launch_tile_refuses_a_backward_tile_for_the_forward_and_two_tiles(capsys):
    assert _tool("launch_tile").main(["--kind", "fwd", "--shape", "9x300", "--tile", "2,512,4,1"]) == 2
    assert "--tile is a backward tile; the forward takes --config, got --tile '2,512,4,1'" in capsys.readouterr().err
    assert _tool("launch_tile").main(["--shape", "9x300", "--tile", "2,512,4,1", "--config", "2x512:4"]) == 2
    assert "give one, got '2,512,4,1' and '2x512:4'" in capsys.readouterr().err


def test_launch_tile_refuses_a_malformed_tile(capsys):
    assert _tool("launch_tile").main(["--shape", "9x300", "--tile", "2,512"]) == 2
    assert "expected block_m,block_n,num_warps,programs_per_sm (four integers), got '2,512'" in capsys.readouterr().err


def test_tune_checks_its_dtypes_before_it_needs_a_gpu(capsys):
    """tools/tune.py: --out-dtype is the forward's only, --residual-dtype the fused add's forward's (RMSNorm's or
    LayerNorm's with --residual, which is LayerNorm's only), --recompute the backward's, --heuristic-only
    alone (not with --config / --grids),
    and every dtype is one of its names — each refused with argparse's message (exit status 2),
    before any CUDA call."""
    tune = _tool("tune")
    with pytest.raises(SystemExit) as stop:
        tune.main(["--kind", "bwd", "--out-dtype", "fp32"])
    assert stop.value.code == 2
    assert "--out-dtype is the forward's (the backward writes dx in x's dtype), got --kind bwd" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        tune.main(["--kind", "fwd", "--family", "rms", "--residual-dtype", "fp32"])
    assert stop.value.code == 2
    assert ("--residual-dtype is a fused forward's (--family fused_add, or layer_norm --residual), got --kind fwd "
            "--family rms" in capsys.readouterr().err)
    for argv, message in ((["--kind", "fwd", "--family", "rms", "--residual"],
                           "--residual is LayerNorm's (RMSNorm's fused add is --family fused_add), got --family rms"),
                          (["--kind", "fwd", "--family", "layer_norm", "--recompute"],
                           "--recompute is the backward's (the forward computes the statistics), got --kind fwd"),
                          (["--kind", "bwd", "--family", "layer_norm", "--residual", "--residual-dtype", "fp32"],
                           "--residual-dtype is a fused forward's (--family fused_add, or layer_norm --residual), "
                           "got --kind bwd --family layer_norm --residual"),
                          (["--heuristic-only", "--config", "1x2048:4"],
                           "--heuristic-only times the heuristic's tile alone; --config / --grids choose what else "
                           "to time, got --config"),
                          (["--heuristic-only", "--grids", "balanced"],
                           "--heuristic-only times the heuristic's tile alone; --config / --grids choose what else "
                           "to time, got --grids")):
        with pytest.raises(SystemExit) as stop:
            tune.main(argv)
        assert stop.value.code == 2
        assert message in capsys.readouterr().err
    for flag in ("--dtype", "--out-dtype", "--weight-dtype", "--residual-dtype"):
        with pytest.raises(SystemExit) as stop:
            tune.main(["--kind", "fwd", flag, "float32"])
        assert stop.value.code == 2
        assert f"argument {flag}: invalid choice: 'float32'" in capsys.readouterr().err


def test_tune_refuses_split_rows_for_a_gated_norm(capsys):
    """tools/tune.py --family gated: a gated norm never splits rows, so --split only (nothing else would be
    timed) and a --config of split parts are refused with argparse's message (exit status 2) before any CUDA
    call; RMSNorm takes both."""
    tune = _tool("tune")
    for argv, given in ((["--split", "only"], "--split only"),
                        (["--config", "1x4096:8", "--config", "1x4096:4:split"],
                         "--config TileConfig(block_m=1, block_n=4096, one_tile=True, num_warps=4")):
        assert tune.parse_args(argv).family == "rms"
        with pytest.raises(SystemExit) as stop:
            tune.main(["--family", "gated", *argv])
        assert stop.value.code == 2
        assert ("a gated norm runs whole rows or column tiles, never split rows, got --family gated with "
                + given) in capsys.readouterr().err
    assert tune.parse_args(["--family", "gated", "--config", "2x4096:16:col:p2"]).family == "gated"


def test_tune_sweeps_no_split_rows_for_a_gated_norm():
    """tools/tune.py's backward candidates for --family gated (--split's default "also"): RMSNorm's without
    its split parts (and their prefetching), the heuristic's tile first; --block-m / --warps still filter."""
    from normkit import config as cfg

    tune = _tool("tune")
    default = cfg.TileConfig(2, 4096, False, 16, 2)
    rms = tune.configs_to_time(tune.parse_args(["--kind", "bwd"]), 16384, default)
    gated = tune.configs_to_time(tune.parse_args(["--kind", "bwd", "--family", "gated"]), 16384, default)
    assert rms[0] == gated[0] == (default, 2)
    assert any(c.split for c, _ in rms) and any(c.prefetch for c, _ in gated)
    assert gated == [(c, pp) for c, pp in rms if not c.split]
    some = tune.configs_to_time(tune.parse_args(["--family", "gated", "--block-m", "2", "--warps", "16"]), 16384,
                                default)[1:]
    assert some and all(c.block_m == 2 and c.num_warps == 16 and not c.split for c, _ in some)
    assert tune.configs_to_time(tune.parse_args(["--family", "gated", "--heuristic-only"]), 16384,
                                default) == [(default, 2)]


def test_tune_times_the_tile_the_launchers_pick_for_a_gate(monkeypatch):
    """tools/tune.py's heuristic row is the tile launch_fwd / launch_bwd pick for the call
    (`arguments.fwd_tile` / `bwd_tile`; the interpreter's own tile patched away, as on a GPU of 132 SMs):
    with a gate no split rows either way, the backward's whole rows on half the rows, rows of 16384 on the
    gated backward's column tiles."""
    import torch

    from normkit import arguments, variant

    monkeypatch.setattr(arguments, "interpret", lambda: False)
    tune = _tool("tune")

    def pick(kind, n, gated, m=64):
        x = torch.randn(m, n, dtype=torch.bfloat16)
        w, gate = torch.ones(n, dtype=torch.bfloat16), torch.randn_like(x) if gated else None
        if kind == "fwd":
            call = dict(x=x, out=torch.empty_like(x), weight=w, gate=gate, rstd=torch.empty(m), eps=1e-6)
        else:
            call = dict(x=x, dy=torch.randn_like(x), dx=torch.empty_like(x), weight=w, dweight=torch.empty_like(w),
                        rstd=torch.empty(m), gate=gate, dgate=None if gate is None else torch.empty_like(x), eps=1e-6)
        return tune.heuristic_tile(kind, call, 132)

    assert pick("fwd", 131072, False, m=4).split and not pick("fwd", 131072, True, m=4).split
    assert pick("bwd", 16384, False).split and pick("bwd", 16384, True) == variant.GATED_ROW_BACKWARD
    ungated = pick("bwd", 1024, False)
    assert ungated.one_tile and ungated.block_m >= 2
    assert pick("bwd", 1024, True) == dataclasses.replace(ungated, block_m=ungated.block_m // 2)


def test_ptx_stats_refuses_flags_of_the_other_kind(capsys):
    """tools/ptx_stats.py: --out-dtype / --residual-dtype are the forward's (the latter the fused add's),
    --recompute the backward's — refused with argparse's message (exit status 2) rather than ignored."""
    ptx_stats = _tool("ptx_stats")
    for argv, message in ((["--kind", "bwd", "--out-dtype", "fp32"],
                           "--out-dtype and --residual-dtype are the forward's (--kind fwd), got --kind bwd"),
                          (["--kind", "fwd", "--families", "rms,layer_norm", "--residual-dtype", "fp32"],
                           "--residual-dtype is the fused add's (its residual's dtype), got --families rms,layer_norm"),
                          (["--kind", "fwd", "--recompute"],
                           "--recompute is the backward's (the forward computes the statistics), got --kind fwd")):
        with pytest.raises(SystemExit) as stop:
            ptx_stats.main(argv)
        assert stop.value.code == 2
        assert message in capsys.readouterr().err


def test_tile_specs_of_the_sweep_and_ptx_stats():
    from normkit import config as cfg

    parse = _tool("tune").parse_config
    assert parse("1x8192:16") == cfg.TileConfig(1, 8192, True, 16)
    assert parse("1x8192:16:col") == cfg.TileConfig(1, 8192, False, 16)
    assert parse("1x32768:32:reload:r32") == cfg.TileConfig(1, 32768, True, 32, reload=True, max_registers=32)
    assert parse("1x8192:16:col:s3") == cfg.TileConfig(1, 8192, False, 16, column_stages=3)
    assert parse("2x2048:8:split:pf:p2") == cfg.TileConfig(2, 2048, True, 8, split=True, prefetch=True,
                                                         programs_per_sm=2)
    assert parse("1x2048:4:split:pf:p3:reload") == cfg.TileConfig(1, 2048, True, 4, split=True, prefetch=True,
                                                                programs_per_sm=3, reload=True)
    with pytest.raises(ValueError, match="reload re-reads a whole row held in one tile"):
        parse("1x8192:16:col:reload")
    with pytest.raises(ValueError, match=r"--config flags are .* got \['reloda'\]"):
        parse("1x8192:16:reloda")  # a misspelt flag must not time another tile silently
    with pytest.raises(ValueError, match="--config expects BLOCK_MxBLOCK_N:WARPS"):
        parse("1x8192")
    tile = _tool("ptx_stats").parse_tile
    assert tile("1x2048w4pj") == cfg.TileConfig(1, 2048, True, 4, prefetch=True, joined_sums=True)
    assert tile("1x8192w16c") == cfg.TileConfig(1, 8192, False, 16)
    assert tile("16x128w1s3") == cfg.TileConfig(16, 128, True, 1, async_stages=3)
    assert tile("1x8192w8pS") == cfg.TileConfig(1, 8192, True, 8, prefetch=True, split=True)
    assert tile("1x4096w4pSr") == cfg.TileConfig(1, 4096, True, 4, prefetch=True, split=True, reload=True)
    assert parse("1x8192:16:col:two:r32") == cfg.TileConfig(1, 8192, False, 16, centered_pass=True, max_registers=32)
    assert parse("1x4096:4:split:reload:hold") == cfg.TileConfig(1, 4096, True, 4, split=True, reload=True,
                                                                hold_weight=True)


def test_split_sweep_asks_for_two_programs_an_sm_on_few_warps():
    """tools/tune.py's split candidates (backward) include every part the heuristic picks at 32768 (two
    programs an SM, LayerNorm's capped at 128 registers, the staged parts) and never ask for two of a part
    on more than 8 warps (three on 4); each unstaged part with and without reload."""
    from normkit import config as cfg

    all_candidates = _tool("tune").split_candidates(32768)
    picked = {cfg.tile_config(32768, True, False, multiprocessors=132, layer_norm=ln, element_size=size,
                              recompute=recompute, vector_aligned=aligned)
              for ln in (False, True) for size in (2, 4) for recompute in (False, True) for aligned in (False, True)}
    assert picked <= {dataclasses.replace(c, prefetch=not c.async_stages) for c in all_candidates}, picked
    assert any(c.async_stages for c in picked) and any(c.prefetch for c in picked)
    # the parts that stage their loads: 4 or 8 warps, 3 or 4 stages, four an SM on 4 warps capped at 128
    # (three an SM: LayerNorm's fp32 parts)
    staged = [c for c in all_candidates if c.async_stages]
    assert {(c.num_warps, c.programs_per_sm) for c in staged} == {(4, 2), (4, 3), (4, 4), (8, 1), (8, 2)}
    assert {c.async_stages for c in staged} == {3, 4} and not any(c.reload or c.prefetch for c in staged)
    assert {c.max_registers for c in staged if c.num_warps == 4 and c.programs_per_sm == 4} == {0, 128}
    candidates = [c for c in all_candidates if not c.async_stages]
    assert all(c.programs_per_sm == 1 for c in candidates if c.num_warps > 8)
    assert {c.programs_per_sm for c in candidates if c.num_warps == 8} == {1, 2}
    assert {c.programs_per_sm for c in candidates if c.num_warps == 4} == {1, 2, 3}
    # two of 8 warps fit at 128 registers (the heuristic's LayerNorm parts at 32768), three of 4 at
    # 170; uncapped too; one an SM and two of 4 warps are never capped (255 fit)
    assert {c.max_registers for c in candidates if c.num_warps == 8 and c.programs_per_sm == 2} == {0, 128}
    assert {c.max_registers for c in candidates if c.num_warps == 4 and c.programs_per_sm == 3} == {0, 170}
    assert all(c.max_registers == 0 for c in candidates if c.programs_per_sm * c.num_warps <= 8)
    assert {c.reload for c in candidates} == {False, True}
    assert all(c.split and c.block_n < 32768 for c in all_candidates)


def test_ptx_stats_finds_the_row_loop_in_sass():
    """--sass: nvdisasm's text parsed into (address, opcode, branch target, source line); the row
    loop is the widest backward branch (the poll loop inside it is narrower); the report counts its
    instructions a thread an iteration and per element."""
    stats = _tool("ptx_stats")
    text = """
	//## File "/x/normkit/kernels/backward.py", line 245
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_1:
	//## File "/x/normkit/kernels/backward.py", line 253
        /*0010*/                   PRMT R2, R3, 0x7632, R2 ;
        /*0020*/                   FMUL R4, R2, R5 ;
.L_x_2:
	//## File "/x/normkit/kernels/stats.py", line 146
        /*0030*/                   LDG.E.64.STRONG.GPU R6, desc[UR4][R8.64] ;
        /*0040*/               @P0 BRA `(.L_x_2) ;
	//## File "/x/normkit/kernels/backward.py", line 140
        /*0050*/                   FFMA R4, R2, R5, R4 ;
        /*0060*/              @!P1 BRA `(.L_x_1) ;
        /*0070*/                   EXIT ;
"""
    instructions, labels = stats.parse_sass(text)
    assert labels == {".L_x_1": 0x10, ".L_x_2": 0x30}
    assert instructions[1] == (0x10, "PRMT", None, "backward.py:253")
    assert instructions[4] == (0x40, "BRA", ".L_x_2", "stats.py:146")
    loop = stats.largest_loop(instructions, labels)
    assert [i[0] for i in loop] == [0x10, 0x20, 0x30, 0x40, 0x50, 0x60]
    report = stats.loop_report(loop, elements_per_thread=2)
    assert "6 instructions a thread an iteration, 3.0 an element (2 a thread)" in report
    assert "BRA 2" in report and "backward.py:253 2" in report
    assert stats.largest_loop(instructions[:2], labels) == []  # no backward branch: no loop


@pytest.mark.parametrize("families", ["rms,bogus", "layernorm", ","])
def test_sanitize_sweep_refuses_unknown_families(families, capsys):
    """tools/sanitize_sweep.py --families takes only the names tests/forced_runs.py runs (an unknown one
    ran, without saying so, as a LayerNorm without bias): argparse's message naming them, exit status 2,
    before any CUDA call."""
    sweep = _tool("sanitize_sweep")
    with pytest.raises(SystemExit) as stop:
        sweep.main(["--families", families])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "--families takes a comma list of rms, fused_add, layer_norm, fused_layer_norm" in err and repr(families) in err


def test_inductor_code_refuses_a_negative_launch_count(capsys):
    with pytest.raises(SystemExit) as stop:
        _tool("inductor_code").main(["--launches", "-1"])
    assert stop.value.code == 2
    assert "--launches is a count of launches (0: time them instead), got -1" in capsys.readouterr().err
