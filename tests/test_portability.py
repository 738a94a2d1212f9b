"""Beyond the H200 (docs/design.md#heuristics): inline PTX only in kernels/ptx.py and only where a launch allows
it."""

import pathlib
import re

import pytest
import torch

from normkit import _runtime

ROOT = pathlib.Path(__file__).resolve().parents[1]
GATED = ROOT / "normkit" / "kernels" / "ptx.py"


def test_inline_assembly_lives_only_in_the_gated_module():
    """Every inline_asm_elementwise and every use of Triton's CUDA-only extras (griddepcontrol) is in
    kernels/ptx.py, behind the constexprs the launch sets on NVIDIA GPUs only."""
    found = []
    for path in sorted((ROOT / "normkit").rglob("*.py")):
        text = path.read_text()
        for pattern in ("inline_asm", "language.extra.cuda", "gdc_wait", "gdc_launch_dependents"):
            if pattern in text and path != GATED:
                found.append(f"{path.relative_to(ROOT)}: {pattern}")
    assert not found, found
    assert "inline_asm_elementwise" in GATED.read_text()  # (the scan looks at the right files)


def test_the_gated_module_takes_triton_wherever_ptx_is_off():
    """In ptx.py every inline asm sits in a branch of a constexpr (PTX, or the caller's BF16_PAIRS / USE_PDL /
    LAUNCH_DEPENDENTS): each function holding one has a portable branch or is reached only through such a flag."""
    text = GATED.read_text()
    functions = re.split(r"\n@triton\.jit\n", text)[1:]
    with_asm = [f.split("(")[0].replace("def ", "") for f in functions if "inline_asm_elementwise" in f]
    assert sorted(with_asm) == ["await_four_words", "await_two_words", "await_word", "load_row_stat",
                                "pairs_to_float32"]
    for function in functions:
        name = function.split("(")[0].replace("def ", "")
        if name in with_asm and name != "pairs_to_float32":  # (convert.upcast's BF16_PAIRS chooses it)
            assert "PTX: tl.constexpr" in function and "    if PTX:" in function and "    else:" in function, name


def test_the_portable_switch_is_checked(monkeypatch):
    _runtime.portable.cache_clear()
    try:
        monkeypatch.setenv("NORMKIT_PORTABLE", "yes")
        with pytest.raises(ValueError, match="NORMKIT_PORTABLE must be one of"):
            _runtime.portable()
        _runtime.portable.cache_clear()
        monkeypatch.setenv("NORMKIT_PORTABLE", "1")
        assert _runtime.portable() and not _runtime.inline_ptx(torch.device("cuda", 0))
    finally:
        _runtime.portable.cache_clear()
    assert not _runtime.inline_ptx(torch.device("cpu"))  # the interpreter never takes PTX
