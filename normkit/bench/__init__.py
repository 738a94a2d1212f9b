"""Benchmarks: normkit against its peers (`python -m normkit bench`).

  timing.py   minimum bytes, % of copy bandwidth, CUDA-graph GPU time, eager wall time
  inputs.py   fresh random inputs, errors against the float64 reference (shared with the report)
  peers.py    the RMSNorm implementations compared: normkit, native, compile, liger, quack
  families.py RMSNorm, fused residual add + RMSNorm, LayerNorm: their inputs, errors and peers
  output.py   progress bar, text and markdown tables, plot
  cli.py      the command line: grid, measurement loop, JSON
  model.py    --model: training steps of a Hugging Face model, stock vs patched (model_cli.py: its
              options, table and files; model_profile.py: --profile's kernel groups)
"""


def main(argv=None) -> int:
    from .cli import main as run

    return run(argv)


__all__ = ["main"]
