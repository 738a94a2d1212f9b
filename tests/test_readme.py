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


# ----------------------------------------------------------------------------- command lines in the docs
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "README.md"]
COMMAND_LINES = sorted({m.group(0).strip() for doc in DOCS
                        for m in re.finditer(r"python -m normkit(?: [^`#\n(]*)?", doc.read_text())})


def _help_text(argv, capsys):
    from normkit import __main__ as cli

    with pytest.raises(SystemExit) as exit_info:
        cli.main([*argv, "--help"])
    assert exit_info.value.code == 0, argv
    return capsys.readouterr().out


@pytest.mark.parametrize("line", COMMAND_LINES)
def test_documented_command_lines_use_options_the_command_has(line, capsys):
    """Every `python -m normkit ...` in README.md, docs/ and benchmarks/README.md names a command that
    exists and options that its --help lists (a renamed or removed option fails here)."""
    words = line.split()[3:]
    if words and words[0] in ("COMMAND", "[COMMAND]", "help"):
        return
    command = words[0] if words and not words[0].startswith("-") else "verify"
    target = [command]
    if command == "challenge" and len(words) > 1 and not words[1].startswith("-") and words[1] != "...":
        target.append(words[1])
    if command == "bench" and "--model" in words:
        target += ["--model", "llama"]
    text = _help_text(target, capsys)
    for option in (w.split("=")[0] for w in words if w.startswith("-")):
        assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text), f"{line!r}: {option} not in {target} --help"


def _documented_signatures():
    """{name: [(parameter,) or (parameter, default), and '*' where keyword-only starts]} of README's
    "Signatures:" list."""
    import ast

    block = README.split("Signatures:\n", 1)[1].split("\n\n", 1)[0]
    found = {}
    for name, params in re.findall(r"^`(\w+)\((.*?)\)(?: -> [^`]*)?`", block, flags=re.M):
        found[name] = [p if p == "*" else (p,) if "=" not in p else (p.split("=")[0], ast.literal_eval(p.split("=")[1]))
                       for p in params.split(", ")]
    return found


def test_readme_signatures_are_the_functions_signatures():
    import inspect

    import normkit

    documented = _documented_signatures()
    assert set(documented) == {"rms_norm", "layer_norm", "rms_norm_fwd", "rms_norm_bwd", "layer_norm_fwd",
                               "layer_norm_bwd"}
    for name, params in documented.items():
        actual = []
        for p in inspect.signature(getattr(normkit, name)).parameters.values():
            if p.kind is p.KEYWORD_ONLY and "*" not in actual:
                actual.append("*")
            actual.append((p.name,) if p.default is p.empty else (p.name, p.default))
        assert params == actual, f"README's {name}{params} is not normkit.{name}{actual}"


def test_every_public_name_is_documented_with_a_docstring_and_type_hints():
    """normkit.__all__ is what the README's API section and quickstart name, each with a docstring;
    the functions' docstrings give shapes and dtypes, and their parameters carry type hints."""
    import inspect

    import normkit

    for name in normkit.__all__:
        obj = getattr(normkit, name)
        assert f"normkit.{name}" in README or f"`{name}(" in README, f"normkit.{name} is not in README.md"
        assert (inspect.getdoc(obj) or "").strip(), f"normkit.{name} has no docstring"
        if inspect.isfunction(obj):
            hints = inspect.signature(obj).parameters.values()
            assert all(p.annotation is not p.empty for p in hints), f"normkit.{name} lacks type hints"
    for name in ("rms_norm", "layer_norm"):
        doc = inspect.getdoc(getattr(normkit, name))
        assert "(..., N)" in doc and "bfloat16" in doc, f"normkit.{name}'s docstring gives no shapes or dtypes"


def test_readme_layout_names_every_module():
    layout = README.split("## Layout", 1)[1].split("## ", 1)[0]
    named = set(re.findall(r"(\w+)(?:\.py|/)", layout))
    package = ROOT / "normkit"
    modules = {p.stem for p in package.glob("*.py") if p.stem not in ("__init__", "__main__")}
    modules |= {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert modules <= named, f"README's Layout does not name {sorted(modules - named)}"
