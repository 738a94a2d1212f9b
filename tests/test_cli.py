"""The command line (`python -m normkit`, the `normkit` script): commands, help, errors, dispatch."""

import argparse
import os
import pathlib
import re
import subprocess
import sys

import pytest
import torch

import normkit
import normkit.bench
import normkit.challenge
import normkit.demo
import normkit.report
from normkit import __main__ as cli
from normkit.bench import cli as bench_cli

ROOT = pathlib.Path(__file__).resolve().parents[1]
COMMANDS = ("verify", "bench", "demo", "challenge")
OWN_PARSERS = {  # the commands whose options normkit defines here (challenge has its own tests)
    "top level": cli.parser(), "verify": normkit.report.parser(), "bench": bench_cli.parser(),
    "demo (CPU defaults)": normkit.demo.parser(on_gpu=False), "demo (GPU defaults)": normkit.demo.parser(on_gpu=True),
}


def _run(argv, capsys):
    """(exit status, stdout, stderr) of cli.main(argv); argparse's exits count as statuses."""
    try:
        status = cli.main(argv)
    except SystemExit as exit_info:
        status = exit_info.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def calls(monkeypatch):
    """Each command's entry replaced by a recorder: [(command, argv), ...]."""
    recorded = []
    modules = {"verify": normkit.report, "bench": normkit.bench, "demo": normkit.demo, "challenge": normkit.challenge}
    for name, module in modules.items():
        monkeypatch.setattr(module, "main", lambda argv, name=name: recorded.append((name, argv)) or 0)
    return recorded


# ----------------------------------------------------------------------------- help
def test_help_lists_the_four_commands_one_line_each(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    status, out, _ = _run(["--help"], capsys)
    assert status == 0
    lines = out.splitlines()
    for name in COMMANDS:
        summary = cli.COMMANDS[name][1].replace("%%", "%")
        line = [line for line in lines if line.strip().startswith(name + " ")]
        assert len(line) == 1 and line[0].split(None, 1)[1] == summary, (name, out)
    assert "alias: report" in out and "runs verify" in out


def test_version(capsys):
    status, out, _ = _run(["--version"], capsys)
    assert status == 0 and out.strip() == f"normkit {normkit.__version__}"


@pytest.mark.parametrize("name", sorted(OWN_PARSERS))
def test_every_option_has_help(name):
    parser = OWN_PARSERS[name]
    actions = list(parser._actions)
    for action in parser._actions:  # the command list: one pseudo-action per command
        if isinstance(action, argparse._SubParsersAction):
            actions += action._choices_actions
    assert len(actions) > 1
    for action in actions:
        assert action.help and action.help.strip(), f"{name}: {action.option_strings or action.dest} has no help"


def test_every_challenge_argument_has_help():
    from normkit.challenge import cli as challenge_cli

    subparsers = [a for a in challenge_cli._parser()._actions if isinstance(a, argparse._SubParsersAction)][0]
    for name, sub in subparsers.choices.items():
        for action in sub._actions:
            assert action.help and action.help.strip(), f"challenge {name}: {action.option_strings or action.dest}"


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_answers_its_own_help(command, capsys):
    status, out, _ = _run([command, "--help"], capsys)
    assert status == 0 and out.startswith(f"usage: python -m normkit {command}")


def test_verify_full_help_names_the_subset_and_the_workers(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "100")
    status, out, _ = _run(["verify", "--full", "--help"], capsys)
    assert status == 0 and out.startswith("usage: python -m normkit verify")
    assert "--full" in out and "every case of the grid" in out and "representative subset" in out
    assert "--jobs N" in out and "0: none" in out
    status, out, _ = _run(["bench", "--help"], capsys)
    assert status == 0 and "--eager" in out and "--calls K" in out and "--repeats R" in out


def test_help_command_answers_as_dash_dash_help(capsys):
    assert _run(["help"], capsys)[:2] == _run(["--help"], capsys)[:2]
    for argv in (["bench"], ["report"], ["challenge", "show"]):
        status, out, _ = _run(["help", *argv], capsys)
        assert status == 0 and out == _run([*argv, "--help"], capsys)[1] and out.startswith("usage: ")


def test_top_level_help_shows_examples(capsys):
    status, out, _ = _run(["--help"], capsys)
    examples = out.split("examples:\n")[1].splitlines()
    assert status == 0 and len(examples) >= 4
    for line in examples:  # each example's command line is one the dispatcher takes
        assert line.startswith("  python -m normkit"), line
        words = line.split()[3:4]
        assert not words or words[0] == "help" or cli._command(words[0]) in COMMANDS


def test_report_is_an_alias_of_verify(capsys):
    assert _run(["report", "--help"], capsys)[1].startswith("usage: python -m normkit verify")


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize("argv, message", [
    (["nope"], "python -m normkit: error: argument command: invalid choice: 'nope' "
               "(choose from 'verify', 'bench', 'demo', 'challenge')"),
    (["verfy"], "invalid choice: 'verfy' (choose from 'verify', 'bench', 'demo', 'challenge'); "
                "did you mean 'verify'?"),
    (["benhc", "--eager"], "did you mean 'bench'?"),
    (["help", "nope"], "invalid choice: 'nope'"),
    (["verify", "--nope"], "python -m normkit verify: error: unrecognized arguments: --nope"),
    (["--nope"], "python -m normkit verify: error: unrecognized arguments: --nope"),  # the default command's
    (["bench", "--shapes", "3y4"], "python -m normkit bench: error: argument --shapes: shape must look like"),
    (["demo", "--steps", "many"], "python -m normkit demo: error: argument --steps: --steps must be a whole number ≥ 1, got 'many'"),
    (["verify", "--jobs", "-1"], "python -m normkit verify: error: argument --jobs: --jobs must be a whole number"),
    (["--full", "--jobs", "x"], "python -m normkit verify: error: argument --jobs: --jobs must be a whole number"),
    (["bench", "--eager", "--calls", "0"], "python -m normkit bench: error: argument --calls: --calls must be a whole"),
    (["bench", "--repeats", "3"], "python -m normkit bench: error: --calls and --repeats size the --eager loop"),
])
def test_bad_commands_and_options_end_in_one_error_line(argv, message, capsys):
    status, out, err = _run(argv, capsys)
    assert status == 2 and out == ""
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and message in errors[0], err
    assert err.startswith("usage: ") and "Traceback" not in err


# ----------------------------------------------------------------------------- dispatch
def test_no_command_runs_verify(calls, capsys):
    assert cli.main([]) == 0
    assert cli.main(["--quick", "--json", "x.json"]) == 0
    assert cli.main(["verify", "--quick"]) == 0
    assert cli.main(["report", "--no-bench"]) == 0
    assert cli.main(["--full", "--jobs", "4"]) == 0
    assert calls == [("verify", []), ("verify", ["--quick", "--json", "x.json"]), ("verify", ["--quick"]),
                     ("verify", ["--no-bench"]), ("verify", ["--full", "--jobs", "4"])]


def test_commands_get_the_rest_of_the_line(calls):
    for argv in (["bench", "--dry-run"], ["bench", "--eager"], ["demo", "--steps", "3"], ["challenge", "list"],
                 ["challenge"]):
        assert cli.main(argv) == 0
    assert calls == [("bench", ["--dry-run"]), ("bench", ["--eager"]), ("demo", ["--steps", "3"]),
                     ("challenge", ["list"]), ("challenge", [])]


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter is only chosen without a GPU")
def test_a_command_turns_the_interpreter_on_without_a_gpu(calls, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert cli.main(["bench"]) == 0
    assert os.environ["TRITON_INTERPRET"] == "1"
    monkeypatch.setenv("TRITON_INTERPRET", "0")  # the user's choice stands
    assert cli.main(["bench"]) == 0
    assert os.environ["TRITON_INTERPRET"] == "0"


def test_the_console_script_is_this_main():
    scripts = (ROOT / "pyproject.toml").read_text().split("[project.scripts]")[1].split("\n[")[0]
    assert re.search(r'^normkit = "normkit\.__main__:main"$', scripts, re.MULTILINE), scripts


def test_python_dash_m_normkit_help_runs():
    out = subprocess.run([sys.executable, "-m", "normkit", "--help"], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert out.returncode == 0 and all(name in out.stdout for name in COMMANDS), out.stderr
