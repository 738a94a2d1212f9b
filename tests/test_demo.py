"""`python -m normkit demo`: a smoke run on a tiny configuration, and its synthetic data."""

import json
import os
import subprocess
import sys

import pytest
import torch

from normkit import demo
from normkit.__main__ import main as cli

TINY = ["--steps", "3", "--hidden", "32", "--layers", "1", "--heads", "2", "--seq", "16", "--batch", "2",
        "--every", "2"]


def test_demo_trains_both_runs_and_writes_json_and_plot(tmp_path, capsys):
    json_path, plot_path = tmp_path / "demo.json", tmp_path / "demo.png"
    assert cli(["demo", *TINY, "--json", str(json_path), "--plot", str(plot_path)]) == 0
    printed = capsys.readouterr().out
    expected = ("its Triton kernels" if torch.cuda.is_available() else
                "normkit runs its Triton kernels in Triton's interpreter")  # tests/conftest.py turns it on
    assert expected in printed.splitlines()[0]
    assert "max |difference| over 3 steps" in printed and "normkit.patch replaced 3 RMSNorm modules" in printed
    result = json.loads(json_path.read_text())
    assert len(result["loss_torch"]) == len(result["loss_normkit"]) == 3
    assert result["patched_modules"] == 3  # one block's two norms and the final one
    assert result["max_abs_difference"] < 1e-4  # float32: the same training up to summation order
    assert (result["step_ms"] is None) == (not torch.cuda.is_available())
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed" in printed
    else:
        assert plot_path.read_bytes()[:4] == b"\x89PNG"


def test_demo_rejects_a_head_size_that_does_not_divide():
    assert cli(["demo", "--hidden", "30", "--heads", "4"]) == 2


def test_token_stream_follows_its_markov_chain():
    """Every token is one of its predecessor's 4 successors: structure the model can learn."""
    stream = demo.token_stream(vocab=32, length=2000, seed=3)
    successors = {}
    for a, b in zip(stream[:-1].tolist(), stream[1:].tolist()):
        successors.setdefault(a, set()).add(b)
    assert max(len(s) for s in successors.values()) <= len(demo.SUCCESSOR_PROBABILITIES)
    assert torch.equal(stream, demo.token_stream(vocab=32, length=2000, seed=3))


def test_both_runs_see_the_same_batches():
    config = demo.DemoConfig(steps=4, seq=8, batch=3)
    first, second = demo.batches(config), demo.batches(config)
    assert len(first) == 4 and first[0].shape == (3, 9)
    assert all(torch.equal(a, b) for a, b in zip(first, second))


def test_demo_in_bf16_stays_close():
    config = demo.DemoConfig(hidden=32, layers=1, heads=2, seq=16, batch=2, steps=3, dtype="bf16")
    result = demo.run(config, torch.device("cuda" if torch.cuda.is_available() else "cpu"))
    assert result["max_abs_difference"] < 0.05  # bf16 training: same curve up to rounding


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU setup")
def test_demo_without_triton_says_it_runs_the_plain_pytorch_path():
    """In a venv without triton the demo must not claim to run Triton's interpreter."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    code = ("import sys; sys.modules['triton'] = None  # find_spec('triton') now answers None\n"
            f"from normkit.__main__ import main; sys.exit(main(['demo', *{TINY!r}]))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert "normkit runs its plain-PyTorch path, not the Triton kernels" in first
    assert "interpreter" not in out.stdout
    assert "normkit.patch replaced 3 RMSNorm modules" in out.stdout
