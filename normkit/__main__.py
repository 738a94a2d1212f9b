"""`python -m normkit [report|bench|challenge|demo] …` — the command line.

With no sub-command it runs the main job, the verification report (`normkit.report`): on a GPU
the kernels against a float64 reference plus a timing table; on a CPU the same verification
through Triton's interpreter on small shapes. `demo` trains a tiny LLaMA-style decoder with
torch's RMSNorm and again after `normkit.patch` and prints both loss curves.
"""

import os
import sys


def _prefer_interpreter_without_gpu() -> None:
    # Must happen before anything imports triton: on a machine with no GPU the kernels can only
    # run through Triton's interpreter, on CPU tensors.
    import torch

    if not torch.cuda.is_available():
        if not os.environ.get("TRITON_INTERPRET"):  # unset or empty
            os.environ["TRITON_INTERPRET"] = "1"


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _prefer_interpreter_without_gpu()
    command = argv.pop(0) if argv and not argv[0].startswith("-") else "report"
    if command == "report":
        from .report import main as run
    elif command == "bench":
        from .bench import main as run
    elif command == "challenge":
        from .challenge import main as run
    elif command == "demo":
        from .demo import main as run
    elif command in ("help", "-h", "--help"):
        print(__doc__.strip())
        return 0
    else:
        print(f"normkit: unknown command {command!r}; expected report, bench, challenge or demo", file=sys.stderr)
        return 2
    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
