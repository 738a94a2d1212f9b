"""Print every launch configuration normkit's heuristics can pick, and the problems that run each.

The list is what `normkit.config.tile_config` answers for every N in 1 … 262144 (GPU; the backward
for an H200's 132 SMs with 1 and with 8 heads, where wide rows switch between split rows and column
tiles) and 1 … 70000 (interpreter), found by calling it (tests/config_cases.py), not by reading its
constants. tests/test_properties.py runs each of these configurations; docs/reliability.md quotes this
output. No GPU needed:

    PYTHONPATH=$PWD python tools/config_coverage.py [--problems]
"""

import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from tests.config_cases import config_problems, coverage_lines  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", action="store_true",
                        help="also list the forced (M, N) problems tests/test_properties.py runs for each")
    args = parser.parse_args(argv)
    for interpret in (False, True):
        print("\n".join(coverage_lines(interpret)))
    if args.problems:
        print("problems (test_every_gpu_heuristic_config / tools/sanitize_sweep.py):")
        for problem in config_problems(False) + config_problems(True):
            print(f"  {problem.label()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
