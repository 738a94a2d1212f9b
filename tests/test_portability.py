"""Beyond the H200 (docs/design.md#heuristics): inline PTX only in kernels/ptx.py and only where a launch allows
it, the Device record read from torch's properties, the generic ladder's picks within every target's limits, a
clear error on a device normkit has no tile for, and every target's picks compiled for it (tools/compile_check.py
--targets, in a subprocess without TRITON_INTERPRET)."""

import dataclasses
import itertools
import os
import pathlib
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch
import triton
import triton.language as tl

from normkit import _runtime
from normkit import config as cfg
from normkit.kernels import ptx
from tests.config_cases import device_picks

ROOT = pathlib.Path(__file__).resolve().parents[1]
GATED = ROOT / "normkit" / "kernels" / "ptx.py"
TARGETS = "sm80,sm89,sm90,sm100,gfx942,gfx950"


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
    assert sorted(with_asm) == ["await_four_words", "await_two_words", "await_word", "launch_dependents",
                                "load_row_stat", "pairs_to_float32", "wait_for_primary"]
    for function in functions:
        name = function.split("(")[0].replace("def ", "")
        # (convert.upcast's BF16_PAIRS chooses pairs_to_float32; the kernels' LAUNCH_DEPENDENTS / USE_PDL the rest)
        if name in with_asm and name not in ("pairs_to_float32", "launch_dependents", "wait_for_primary"):
            assert "PTX: tl.constexpr" in function and "    if PTX:" in function and "    else:" in function, name


def _props(**overrides):
    """torch.cuda.get_device_properties of an A100, with `overrides`."""
    fields = dict(multi_processor_count=108, shared_memory_per_block_optin=166912,
                  shared_memory_per_multiprocessor=167936, regs_per_multiprocessor=65536,
                  max_threads_per_multi_processor=2048, warp_size=32, L2_cache_size=40 << 20,
                  max_threads_per_block=1024, major=8, minor=0)
    return SimpleNamespace(**{**fields, **overrides})


def test_the_device_record_comes_from_torchs_properties():
    a100 = cfg.device.from_properties(_props(), hip=False)
    assert a100 == cfg.KNOWN_DEVICES["sm80"] and a100.ladder == "generic" and a100.vendor == "nvidia"
    h100 = cfg.device.from_properties(_props(major=9, multi_processor_count=132), hip=False)
    assert h100.arch == "sm90" and h100.ladder == "sm90"
    assert cfg.device.forced(h100, "generic").ladder == "generic"
    mi300 = cfg.device.from_properties(_props(gcnArchName="gfx942:sramecc+:xnack-", warp_size=64,
                                              shared_memory_per_block_optin=65536), hip=True)
    assert (mi300.arch, mi300.vendor, mi300.ladder, mi300.max_warps) == ("gfx942", "amd", "generic", 16)
    with pytest.raises(ValueError, match="NORMKIT_ARCH names a table set"):
        cfg.device.forced(h100, "sm80")


def test_environment_switches_are_checked(monkeypatch):
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
    monkeypatch.setenv("NORMKIT_ARCH", "sm100")
    with pytest.raises(ValueError, match="NORMKIT_ARCH must be one of"):
        _runtime._environment("NORMKIT_ARCH", ("", "sm90", "generic"))
    assert not _runtime.inline_ptx(torch.device("cpu"))  # the interpreter never takes PTX


@pytest.mark.parametrize("name", ["sm80", "sm89", "sm100", "gfx942", "gfx950"])
@pytest.mark.parametrize("backward", [False, True])
def test_every_generic_pick_fits_its_device(name, backward):
    """The generic ladder (every target but sm_90): each pick within the device's threads a program, within its
    shared memory and a conservative 48 KB (NVIDIA) / 64 KB (AMD LDS) by config.shared_bytes' bound, no staged
    loads and no register caps, and split rows only on NVIDIA GPUs where every part of every head of the widest
    row that picks it gets a multiprocessor."""
    device = cfg.KNOWN_DEVICES[name]
    assert device.ladder == "generic"
    picks = device_picks(device, backward)
    assert picks
    budget = min(device.shared_per_block, 48 << 10 if device.vendor == "nvidia" else 64 << 10)
    for config, scenario, lo, hi in picks:
        size = scenario["element_size"]
        problem = cfg.Problem(hi, heads=scenario["heads"], residual=scenario["residual"],
                              layer_norm=scenario["layer_norm"], x_bytes=size,
                              y_bytes=scenario.get("out_element_size") or size,
                              residual_bytes=scenario.get("residual_element_size") or size)
        where = (config, scenario, lo, hi)
        assert config.num_warps * device.warp_size <= device.threads_per_block, where
        assert cfg.shared_bytes(config, problem, backward, device.warp_size) <= budget, where
        assert not (config.async_stages or config.column_stages or config.max_registers), where
        if config.split:
            assert device.vendor == "nvidia", where
            assert cfg.cdiv(hi, config.block_n) * scenario["heads"] <= device.multiprocessors, where
            assert config.num_warps * device.warp_size <= device.threads_per_multiprocessor, where


def test_the_sm90_tables_are_the_h200s():
    """On sm_90 the record reads the H200's tables: the same picks as without a device (tests/test_config.py)."""
    h200, pick = cfg.KNOWN_DEVICES["sm90"], getattr(cfg.tile_config, "__wrapped__", cfg.tile_config)
    for n in (128, 1000, 4096, 16384, 32768, 100000, 262144):
        for backward in (False, True):
            assert pick(n, backward, False, device=h200) == pick(n, backward, False, multiprocessors=132), n


def test_a_device_without_a_tile_gets_a_clear_error():
    """A GPU with too little shared memory for a row's narrowest tile: a ValueError that names the device and
    what is missing, before anything is compiled; narrower rows still get a tile (fewer rows a tile). The sm_90
    tables forced onto a GPU they do not fit (NORMKIT_ARCH=sm90 on an MI300X) fall back to the generic ladder."""
    tiny = dataclasses.replace(cfg.KNOWN_DEVICES["sm80"], arch="sm70", shared_per_block=2048)
    pick = getattr(cfg.tile_config, "__wrapped__", cfg.tile_config)
    assert pick(128, True, False, device=tiny).block_m * 128 * 4 <= 2048
    with pytest.raises(ValueError, match=r"no tile for rows of 4096 on sm70: .* shared memory .* offers 2048"):
        pick(4096, True, False, device=tiny)
    forced = cfg.device.forced(cfg.KNOWN_DEVICES["gfx942"], "sm90")
    staged = pick(4096, True, False, device=cfg.KNOWN_DEVICES["sm90"])
    assert staged.async_stages and not pick(4096, True, False, device=forced).async_stages
    assert not any(pick(n, True, False, device=forced).split for n in (16384, 65536, 262144))  # NVIDIA's only
    narrow = dataclasses.replace(cfg.KNOWN_DEVICES["gfx942"], threads_per_block=256)
    assert pick(16384, False, False, device=narrow).num_warps * 64 <= 256


def _compiler_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_every_target_compiles_its_representative_picks():
    """tools/compile_check.py --targets for all six GPUs (the subset; --full compiles every pick): each target
    compiles, fits its limits and, on AMD (and NVIDIA's portable path), carries no inline assembly."""
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "compile_check.py"), "--targets", TARGETS],
                         env=_compiler_env(), capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-3000:]
    summary = out.stdout.split("summary (target, tables, compiled):")[1].split("\n")
    assert [line.split()[0] for line in summary if line.strip()] == TARGETS.split(","), out.stdout
    assert "FAIL" not in out.stdout and out.stdout.count(" portable: ") >= 4, out.stdout


_ASM_CHECK = """
import sys
sys.path.insert(0, "tools")
import dataclasses
import compile_targets as ct
from normkit import config as cfg
split = cfg.tile_config(65536, True, False, device=cfg.KNOWN_DEVICES["sm80"])
# one row a part on AMD, which picks no split parts: Triton 3.6's AMD backend cannot lower the exchange's 64-bit
# atomic exchange for parts of two rows (llvm.amdgcn.raw.ptr.buffer.atomic.exch)
one_row = dataclasses.replace(split, block_m=1)
scenario = dict(backward=True, residual=False, layer_norm=True, element_size=2, heads=1, recompute=True)
for name, ptx, tile in (("sm80", True, split), ("sm80", False, split), ("gfx942", False, one_row)):
    compiled = ct.compile_pick(ct.TARGETS[name], tile, scenario, ptx)
    print(name, ptx, tile.split, "elementwise_inline_asm" in compiled.asm["ttir"])
"""


def test_the_compile_check_sees_inline_assembly():
    """What --targets looks for: the split parts' spin wait is inline asm in the TTIR with PTX, and absent on
    the portable path and on AMD."""
    out = subprocess.run([sys.executable, "-c", _ASM_CHECK], cwd=ROOT, env=_compiler_env(), capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.split("\n")[:3] == ["sm80 True True True", "sm80 False True False",
                                          "gfx942 False True False"], out.stdout


# A portable split backward for sm_90 (the H200 forced onto the generic ladder, NORMKIT_PORTABLE=1) and for gfx942
# (parts of one row: see _ASM_CHECK), LayerNorm recomputing its statistics: four words a lane in one wait. Printed:
# the volatile loads in the TTGIR's scf.while (the count's spin) and outside it, the count's acquire reads in the
# loop and before it, the count's release adds, then the volatile loads in the target's assembly (ld.volatile on
# NVIDIA; on AMD loads with sc0 sc1, past the caches).
_SPIN_CHECK = r"""
import dataclasses, re, sys
sys.path.insert(0, "tools")
import compile_targets as ct
from normkit import config as cfg

def loop_and_rest(ttgir):
    lines = ttgir.split("\n")
    first = next(k for k, line in enumerate(lines) if "scf.while" in line)
    indent = len(lines[first]) - len(lines[first].lstrip())
    last = next(k for k in range(first + 1, len(lines)) if lines[k][:indent + 1].strip()
                and not lines[k].lstrip().startswith(("} do {", "^bb")))
    return "\n".join(lines[first:last + 1]), "\n".join(lines[:first] + lines[last + 1:])

generic = cfg.device.forced(cfg.KNOWN_DEVICES["sm90"], "generic")
split = cfg.tile_config(65536, True, False, device=generic, layer_norm=True, element_size=2, recompute=True)
scenario = dict(backward=True, residual=False, layer_norm=True, element_size=2, heads=1, recompute=True)
for name, tile, asm, load in (("sm90", split, "ptx", r"ld\.volatile"),
                              ("gfx942", dataclasses.replace(split, block_m=1), "amdgcn", r"global_load\w* .*sc0 sc1")):
    assert tile.split
    compiled = ct.compile_pick(ct.TARGETS[name], tile, scenario, ptx=False)
    loop, rest = loop_and_rest(compiled.asm["ttgir"])
    count = lambda pattern, where: len(re.findall(pattern, where))
    print(name, count("isVolatile = true", loop), count("isVolatile = true", rest), count("add, acquire", loop),
          count("add, acquire", rest), count("add, release", rest), count(load, compiled.asm[asm]))
"""


def test_the_portable_wait_reads_each_word_once_a_round():
    """The portable wait compiled for sm_90 and gfx942: a part announces its round with one release add to the
    slot's count (ptx.announce), and waits on one acquire read of the count, before and inside a loop that holds no
    other load (ptx.await_count); each awaited word is then read once, volatile, outside any spin — on gfx942 at
    most twice (Triton rematerialises the loads of three of the words in the layout the merge's reduction takes).
    The wait this replaced spun on the words themselves, reducing a padded copy of each across the block and then
    a late count, every round; on gfx942 Triton dropped the loads' volatility (triton-lang/triton#11223), which
    `.cv` keeps."""
    out = subprocess.run([sys.executable, "-c", _SPIN_CHECK], cwd=ROOT, env=_compiler_env(), capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    for line in out.stdout.split("\n")[:2]:
        name, in_loop, outside, acquire_in_loop, acquire_before, release, asm_loads = line.split()
        assert (int(in_loop), int(acquire_in_loop), int(acquire_before), int(release)) == (0, 1, 1, 1), line
        assert 4 <= int(outside) <= (4 if name == "sm90" else 8), line  # four words a lane
        assert int(asm_loads) == int(outside), line


@triton.jit
def _await_kernel(WORDS, OUT, tag, ROWS: tl.constexpr, COLS: tl.constexpr):
    """Each wait of ptx.py on the portable path, on words already announced; the last row's lanes disabled."""
    SPAN: tl.constexpr = ROWS * COLS
    offsets = tl.arange(0, ROWS)[:, None] * COLS + tl.arange(0, COLS)[None, :]
    words = WORDS + offsets
    tags = tl.zeros([ROWS, COLS], tl.int32) + tag
    enabled = (tl.arange(0, ROWS) < ROWS - 1).to(tl.int32)[:, None]
    tl.store(OUT + offsets, ptx.await_word(words, tags, enabled, False))
    first, second = ptx.await_two_words(words, words + SPAN, tags, enabled, False)
    tl.store(OUT + SPAN + offsets, first)
    tl.store(OUT + 2 * SPAN + offsets, second)
    a, b, c, d = ptx.await_four_words(words, words + SPAN, words + 2 * SPAN, words + 3 * SPAN, tags, enabled, False)
    tl.store(OUT + 3 * SPAN + offsets, a)
    tl.store(OUT + 4 * SPAN + offsets, b)
    tl.store(OUT + 5 * SPAN + offsets, c)
    tl.store(OUT + 6 * SPAN + offsets, d)


def test_the_portable_wait_returns_the_tagged_words(device):
    """await_word, await_two_words and await_four_words without PTX return each enabled lane's word as published
    (tag in the high half, payload in the low) and 0 on disabled lanes, whose words carry an older round's tag."""
    rows, cols, tag = 8, 2, 7
    payload = torch.arange(4 * rows * cols, dtype=torch.int64, device=device).reshape(4, rows, cols) * 1000 + 17
    words = (tag << 32) | payload
    words[:, -1] = (tag - 4) << 32  # the last row: a round the ring left behind
    out = torch.full((7, rows, cols), -1, dtype=torch.int64, device=device)
    _await_kernel[(1,)](words, out, tag, rows, cols)
    expected = words[[0, 0, 1, 0, 1, 2, 3]].clone()
    expected[:, -1] = 0
    assert torch.equal(out, expected), (out, expected)


@triton.jit
def _count_kernel(COUNT, OUT, target, BLOCK: tl.constexpr):
    """Every program announces one round (ptx.announce, portable); program 0 then awaits `target` announcements
    (ptx.await_count) and writes the count it then reads into every lane of OUT."""
    ptx.announce(COUNT, False)
    if tl.program_id(0) == 0:
        ptx.await_count(COUNT, target, False)
        tl.store(OUT + tl.arange(0, BLOCK), tl.zeros([BLOCK], tl.int64) + tl.load(COUNT, volatile=True))


def test_the_portable_count_adds_one_a_program(device):
    """ptx.announce adds exactly 1 to the count a program however many threads it has (a scalar atomic: on a GPU
    one thread of the block; more, and a wait would end before every partner's words), and ptx.await_count
    returns once the count reaches its target: on a GPU program 0 waits for the eleven programs beside it; the
    interpreter, which runs programs one after another, announces eleven first (awaiting nothing), then one that
    awaits all twelve."""
    parts = 12
    count = torch.zeros(1, dtype=torch.int64, device=device)
    out = torch.full((256,), -1, dtype=torch.int64, device=device)
    if device == "cpu":
        _count_kernel[(parts - 1,)](count, torch.empty_like(out), 0, 256)
        _count_kernel[(1,)](count, out, parts, 256)
    else:
        _count_kernel[(parts,)](count, out, parts, 256, num_warps=4)
    assert count.item() == parts
    assert torch.equal(out, torch.full_like(out, parts)), out


def _interpreted_shape(config: cfg.TileConfig) -> tuple:
    """What the interpreter runs of a tile (it has no warps, stages or registers)."""
    return (config.block_m, config.block_n, config.one_tile, config.prefetch, config.joined_sums, config.reload,
            config.split)


def test_generic_tiles_the_sm90_tables_lack_are_right():
    """Every generic pick (sm80, gfx942) whose shape the sm_90 tables never pick — so tests/test_properties.py does
    not run it — forced on a small problem through the interpreter, outputs poisoned, against float64."""
    from tests.config_cases import ConfigProblem, _rows, heuristic_configs
    from tests.forced_runs import run_forced

    known = {_interpreted_shape(c) for backward in (False, True) for c in heuristic_configs(backward)}
    novel = {}
    for name in ("sm80", "gfx942"):
        for backward in (False, True):
            for config, scenario, lo, hi in device_picks(cfg.KNOWN_DEVICES[name], backward):
                if _interpreted_shape(config) not in known and not config.split:
                    novel.setdefault((backward, _interpreted_shape(config)), (config, scenario, lo, hi))
    assert novel  # (the backward's byte-sized whole rows of 4- and 8-byte elements)
    dtypes = {2: torch.bfloat16, 4: torch.float32, 8: torch.float64}
    for (backward, _), (config, scenario, lo, hi) in sorted(novel.items(), key=str):
        for n, family in ((lo, "rms"), (hi, "layer_norm")):
            problem = ConfigProblem(config, backward, _rows(config, backward, 4, n), n, 4)
            run_forced(problem, family, dtypes[scenario["element_size"]], recompute=n == lo)


WIDE_ROWS = (16384, 32768, 65536)


def _generic_devices():
    """Every compile-checked target that reads the generic ladder, and the H200 forced onto it (NORMKIT_ARCH)."""
    return [cfg.device.forced(cfg.KNOWN_DEVICES["sm90"], "generic")] + [
        d for d in cfg.KNOWN_DEVICES.values() if d.ladder == "generic"]


@pytest.mark.parametrize("backward", [False, True], ids=["fwd", "bwd"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
def test_generic_wide_rows_match_float64(backward, dtype):
    """The generic ladder's picks for rows of 16384, 32768 and 65536 on every generic target (whole rows, column
    tiles, split parts), forced on two rows, outputs poisoned, against float64: RMSNorm with saved statistics,
    LayerNorm recomputing them. Split parts run on a GPU only (the interpreter runs programs one after another and the
    launcher refuses them there): under the interpreter they are checked to be NVIDIA's, every part resident."""
    from tests.config_cases import ConfigProblem
    from tests.forced_runs import DEVICE, run_forced

    pick = getattr(cfg.tile_config, "__wrapped__", cfg.tile_config)
    sms = torch.cuda.get_device_properties(0).multi_processor_count if DEVICE == "cuda" else 0
    runs, splits = {}, 0
    for device in _generic_devices():
        for n, family in itertools.product(WIDE_ROWS, ("rms", "layer_norm")):
            config = pick(n, backward, False, device=device, layer_norm=family == "layer_norm",
                          element_size=dtype.itemsize, recompute=family == "layer_norm")
            if config.split:
                splits += 1
                assert device.vendor == "nvidia" and cfg.cdiv(n, config.block_n) <= device.multiprocessors, config
                if cfg.cdiv(n, config.block_n) > sms:
                    continue
            runs.setdefault((n, family, config), device.arch)
    assert splits and any(not config.split for _, _, config in runs)  # (both kinds are picked)
    for (n, family, config), arch in runs.items():
        problem = ConfigProblem(config, backward, 2, n, 4)
        try:
            run_forced(problem, family, dtype, recompute=family == "layer_norm")
        except AssertionError as error:
            raise AssertionError(f"{arch} {family} {problem.label()}: {error}") from error
