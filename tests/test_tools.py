"""The development tools the device runs depend on still run: tools/launch_tile.py (the target a
profiler attaches to) launches a forced tile and checks its dx against the heuristic's, here
through the interpreter on a tiny problem; a malformed --tile is refused with a message."""

import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _launch_tile():
    spec = importlib.util.spec_from_file_location("launch_tile", ROOT / "tools" / "launch_tile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("family", ["rms", "fused_add", "layer_norm"])
def test_launch_tile_runs_a_forced_joined_tile(family, capsys):
    rc = _launch_tile().main(["--family", family, "--shape", "9x300", "--tile", "2,512,4,1", "--joined",
                              "--launches", "1"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "joined_sums=True" in out and "max |dx - heuristic's|" in out


def test_launch_tile_refuses_a_malformed_tile(capsys):
    assert _launch_tile().main(["--shape", "9x300", "--tile", "2,512"]) == 2
    assert "expected block_m,block_n,num_warps,programs_per_sm (four integers), got '2,512'" in capsys.readouterr().err
