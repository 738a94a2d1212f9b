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
