"""README.md cannot rot: every ```python block runs as written (on CPU through Triton's interpreter
here; the blocks pick CUDA when there is one), a `print(...)  # text` line prints that text, and the
README's test command is the one .ci/run runs."""

import contextlib
import io
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.S)


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 4, "README.md lost its quickstart / API examples"


@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_python_block_runs_as_written(index):
    source = BLOCKS[index]
    if "transformers" in source:
        pytest.importorskip("transformers")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, f"README.md python block {index}", "exec"), {"__name__": "__readme__"})
    printed = out.getvalue().splitlines()
    expected = [m.group(1).strip() for m in re.finditer(r"^print\(.*\)\s+#\s*(.+)$", source, flags=re.M)]
    for line in expected:
        assert line in printed, f"README block {index} says it prints {line!r}; it printed {printed}"


def test_readme_commands_are_what_ci_runs():
    bash = re.findall(r"```bash\n(.*?)```", README, flags=re.S)
    main_job, tests = bash[0].strip(), bash[1].strip()
    assert main_job.endswith("python -m normkit"), main_job
    assert tests in (ROOT / ".ci" / "run").read_text(), "README's test command is not the one .ci/run runs"
