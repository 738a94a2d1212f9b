"""Test setup: without a GPU, run normkit's Triton kernels on CPU tensors through the interpreter.

TRITON_INTERPRET must be set before triton is imported, so this happens before normkit is.
Tests use the `device` fixture: "cuda" on a GPU machine, "cpu" (interpreter) elsewhere.
"""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@pytest.fixture
def device() -> str:
    return DEVICE


def pytest_terminal_summary(terminalreporter):
    """Which launch configurations the property tests ran (tests/test_properties.py)."""
    import sys

    properties = sys.modules.get("tests.test_properties") or sys.modules.get("test_properties")
    if properties is not None and properties.CONFIGS_HIT:
        terminalreporter.section("normkit launch configurations run")
        for line in properties.coverage_summary():
            terminalreporter.write_line(line)


@pytest.fixture
def plans_on():
    """Launch plans on for the test (whatever NORMKIT_FAST_LAUNCH says), the mode restored after."""
    from normkit import launch

    mode = launch.get_mode()
    launch.set_mode("on")
    yield
    launch.set_mode(mode)


@pytest.fixture(autouse=True)
def _fresh_launch_plans():
    """Each test starts without cached launch plans (normkit/plan.py): a test that spies on the full
    launch path, or forces a configuration, sees it taken on its first call."""
    from normkit import ops

    ops.clear_plans()
    yield
