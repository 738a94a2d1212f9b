"""The kernels compile for the GPU (sm_90) even where tests use the interpreter.

Triton's compiler and its bundled ptxas run without a GPU, so CI (CPU only) still catches kernel
code that the interpreter accepts but the GPU compiler rejects. `tools/compile_check.py` compiles a
set of flag combinations covering every constexpr flag, all three tilings (whole rows, column
tiles, split rows) and all four dtypes.
"""

import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _compiler_env() -> dict:
    """This environment without TRITON_INTERPRET (the kernels must be JIT functions to compile), the
    checkout first on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _ptx_stats(kind: str, *args: str):
    """tools/ptx_stats.py --kind KIND ARGS (sm_90, ptxas): its whole output and its tile lines."""
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "ptx_stats.py"), "--kind", kind, *args],
                         env=_compiler_env(), capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout, [line for line in out.stdout.splitlines() if line.startswith(kind)]


def _stat(line: str, what: str) -> int:
    """The count before `what` in a tools/ptx_stats.py line (e.g. "2 bar.sync", "64 B shared")."""
    match = re.search(r"(\d+) " + re.escape(what), line)
    assert match, (what, line)
    return int(match.group(1))


def test_every_kernel_family_compiles_for_sm90():
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "compile_check.py")], env=_compiler_env(),
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    # 5 dtype/flag sets × (fwd + bwd saved/recomputed) = 15; the 3 whole-row sets also with the
    # split-row, prefetching and split + prefetching backward (saved/recomputed) = 18; mixed dtypes with
    # None pointers, column tiles and whole rows (3 backward + 1 forward each) = 8; the finisher; the
    # finisher and a backward with programmatic dependent launch = 2; the whole-row sets' one-row tile
    # with joined row sums (saved/recomputed) = 6, and with loads staged in shared memory = 6; their
    # forward re-reading the row for y = 3; split parts staging their loads, the wait spinning in PTX
    # (backward saved/recomputed, forward re-reading the previous row block) = 9, the forward's holding
    # it = 3; the gate on 3 dtypes × (4 forward + 5 backward tiles × saved/recomputed) = 42, with a
    # float32 gate beside bf16 x and in float64 = 4
    assert out.stdout.count("ok    ") == 121 and out.stdout.count(" gated ") == 46 and "FAIL" not in out.stdout, \
        out.stdout
    assert out.stdout.count(" reload ") == 6 and out.stdout.count(" centered-pass ") == 1, out.stdout
    assert out.stdout.count(" async-stages ") == 6, out.stdout
    assert out.stdout.count(" pdl") == 2 and out.stdout.count(" joined-sums ") == 6, out.stdout
    # (split: 12 backward, 3 forward, and the 12 staged)
    assert out.stdout.count(" split ") == 27 and out.stdout.count(" split prefetch ") == 6, out.stdout
    assert out.stdout.count(" split staged ") == 12 and out.stdout.count(" staged held ") == 3, out.stdout
    assert out.stdout.count(" prefetch ") == 12 + 6, out.stdout  # (6 gated)


def test_heuristic_tiles_as_launched_do_not_spill():
    """tools/ptx_stats.py compiles the heuristic's tiles as a launch specialises them (vectorised
    loads): LayerNorm's and RMSNorm's backward at N = 2048 / 4096 / 8192 (LayerNorm's 1 × 8192 spilled
    4 B until its row sums were joined) and their forwards keep every
    value in registers (ptxas, sm_90). A kernel change that makes them spill fails here."""
    for kind in ("bwd", "fwd"):
        stdout, lines = _ptx_stats(kind, "--families", "layer_norm,rms", "--widths", "2048,4096,8192")
        assert len(lines) == 6, stdout
        assert all(" 0 B spilled" in line for line in lines), stdout


def test_ptx_stats_sass_reports_the_row_loop():
    """--sass disassembles the compiled tile (nvdisasm from Triton's wheel) and reports its row
    loop: a count a thread an iteration and per element, with the loop's FMULs and source lines."""
    stdout, _ = _ptx_stats("bwd", "--families", "rms", "--widths", "1024", "--sass")
    loop = next(line for line in stdout.splitlines() if "row loop:" in line)
    count, per_element = int(loop.split()[2]), float(loop.split(", ")[1].split()[0])
    assert count > 100 and 1 < per_element < 100, stdout
    assert "FMUL" in stdout and "backward.py:" in stdout, stdout


def test_wide_row_tiles_spill_little():
    """The heuristic's tiles for wide rows (split parts, column tiles, the fused add's split forward),
    every family, bf16 and fp32, as launched (ptxas, sm_90): at most 128 B spilled a thread. The bf16
    split parts of 1 × 8192 spill 16-20 B (measured fast); fp32 rows once took those same parts and
    spilled 2.8-3.4 KB — 13-17 ms for 4096×65536 where 1.0-1.25 ms was due (H200)."""
    for kind, widths in (("bwd", "12000,32768,65536"), ("fwd", "65536")):
        for dtype in ("bf16", "fp32"):
            stdout, lines = _ptx_stats(kind, "--widths", widths, "--dtype", dtype)
            assert len(lines) == 3 * len(widths.split(",")), stdout
            spilled = [_stat(line, "B spilled") for line in lines]
            assert max(spilled) <= 128, stdout


def test_ptx_stats_compiles_the_forward_as_launched():
    """tools/ptx_stats.py passes the forward's tile flags as ops.launch_fwd does — LayerNorm's
    three-read column tiles (CENTERED_PASS) at 32768, its split parts at 65536 (under their 128-register
    cap, unspilled) — and y's dtype (--out-dtype): RMSNorm's
    whole 2-byte row of 16384 runs under the 32-register cap with a 2-byte y and uncapped with a 4-byte
    one, without spilling (a 4-byte y spilled 206 B under the cap: config.forward.RELOAD_CAP); and the
    residual's dtype (--residual-dtype: a residual kept in fp32 beside bf16 x)."""
    lines = {}
    for family, widths, y in (("layer_norm", "32768,65536", []), ("rms", "16384", []),
                              ("rms", "16384", ["--out-dtype", "fp32"]),
                              ("fused_add", "4096", ["--residual-dtype", "fp32"])):
        lines[family, bool(y)] = _ptx_stats("fwd", "--families", family, "--widths", widths, *y)[1]
    three_read, split = lines["layer_norm", False]
    assert " N=32768 " in three_read and " three-read" in three_read and " 0 B spilled" in three_read, three_read
    assert " N=65536 " in split and " split" in split and " cap 128: 128 registers" in split, split
    assert " 0 B spilled" in split, split
    (two_byte,), (four_byte,) = lines["rms", False], lines["rms", True]
    assert " cap 32:" in two_byte and " y " not in two_byte, two_byte
    assert " y fp32 " in four_byte and " cap " not in four_byte and " 0 B spilled" in four_byte, four_byte
    (residual,) = lines["fused_add", True]
    assert "bf16 residual fp32 N=4096 " in residual and " 0 B spilled" in residual, residual


def test_mixed_dtype_forward_takes_one_layout():
    """kernels/forward.py's _lanes: where x's and y's element sizes
    differ (bf16 x, fp32 y) every load and store of the forward takes the layout of the widest one's
    16-byte vectors, so no tile converts layouts through shared memory between them (before: 4-16 KB of
    shared memory and 8 more bar.sync a tile: RMSNorm's whole row of 16384 10 bar.sync, its split parts
    11). An fp32 residual beside bf16 x and y takes it in the split parts (the fused add's rows of
    65536); the whole rows keep converting it (the 4-element runs lost there: 216 against 199 µs).
    Those parts stage their loads in shared memory (cp.async): there the fp32
    residual adds no barrier to the bf16 residual's parts and nothing spills."""
    lines = []
    for family, widths, extra in (("rms", "16384,131072", ["--out-dtype", "fp32"]),
                                  ("layer_norm", "16384", ["--out-dtype", "fp32"])):
        lines += _ptx_stats("fwd", "--families", family, "--widths", widths, *extra)[1]
    assert len(lines) == 3, lines
    for line in lines:
        assert _stat(line, "B shared") <= 128 and _stat(line, "B spilled") == 0, line
        assert _stat(line, "bar.sync") <= (5 if "layer_norm" in line else 3), line
    (mixed,) = _ptx_stats("fwd", "--families", "fused_add", "--widths", "65536", "--residual-dtype", "fp32")[1]
    (same,) = _ptx_stats("fwd", "--families", "fused_add", "--widths", "65536")[1]
    assert " split async 3 stages" in mixed and " split async 3 stages" in same, (mixed, same)
    assert _stat(mixed, "bar.sync") == _stat(same, "bar.sync") and _stat(mixed, "B spilled") == 0, (mixed, same)


def test_recomputing_split_parts_join_their_statistics_sum():
    """The recomputing backward's split parts reduce Σh (LayerNorm) / Σh²
    (RMSNorm) in the tree of Σ(g·h) / Σg — three bar.sync fewer a row block — where
    `config.joins_stats` says so: LayerNorm's parts, RMSNorm's whose threads hold ≤ 16 elements (not a
    1 × 4096 part on 4 warps — the prefetching one at 16384 lost 7 % joined, and the staged one at
    131072); JOIN_STATS=0 gives the separate reduction back."""
    joined = _ptx_stats("bwd", "--families", "layer_norm,rms", "--widths", "16384,131072", "--recompute")[1]
    apart = _ptx_stats("bwd", "--families", "layer_norm,rms", "--widths", "16384,131072", "--recompute",
                       "--flags", "JOIN_STATS=0")[1]
    assert len(joined) == len(apart) == 4, (joined, apart)
    kept_apart = 0
    for line, before in zip(joined, apart):
        rows, width, warps = map(int, re.search(r"(\d+) x (\d+) on +(\d+) warps", line).groups())
        fewer = 0 if "rms" in line and rows * width > 16 * 32 * warps else 3
        kept_apart += fewer == 0
        assert _stat(line, "bar.sync") == _stat(before, "bar.sync") - fewer, (line, before)
    assert kept_apart == 1, joined  # RMSNorm's 1 × 4096 on 4 warps at 131072


def test_forward_l2_hints_as_compiled():
    """The forward's L2 policies reach the PTX (sm_90): RMSNorm's column tiles keep the statistics
    pass's reads (evict_last) and drop the output pass's (evict_first); LayerNorm's column tiles
    keep the default; a whole row re-read for y (RELOAD) asks for both; one kept in registers
    (STREAM) only evict_first."""
    script = (
        "import sys; sys.path.insert(0, 'tools')\n"
        "import triton.language as tl, compile_check as cc\n"
        "from normkit.kernels import norm_fwd_kernel\n"
        "for rms, one, reload, stream in ((1, 0, 0, 0), (0, 0, 0, 0), (1, 1, 1, 0), (0, 1, 1, 0), (1, 1, 0, 1)):\n"
        "    ptx = cc.compile_ptx(norm_fwd_kernel, 'bf16', dict(cc.FWD_POINTERS), dict(BLOCK_M=1, BLOCK_N=4096,\n"
        "        ONE_TILE=bool(one), IS_RMS_NORM=bool(rms), HAS_WEIGHT=True, HAS_BIAS=False, HAS_RESIDUAL=False,\n"
        "        STORE_RESIDUAL_OUT=False, STORE_STATS=True, COMPUTE_DTYPE=tl.float32, X_HAT_DTYPE=tl.float32,\n"
        "        RELOAD=bool(reload), STREAM=bool(stream)), 8)\n"
        "    print(rms, one, reload, stream, 'evict_last' in ptx, 'evict_first' in ptx)\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=_compiler_env(), capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.split("\n")[:5] == ["1 0 0 0 True True", "0 0 0 0 False False", "1 1 1 0 True True",
                                          "0 1 1 0 True True", "1 1 0 1 False True"], out.stdout


_OLDER_GPUS = """
import sys
sys.path.insert(0, "tools")
import triton
import compile_check as cc
import ptx_stats as ps
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from normkit.kernels import norm_bwd_kernel, norm_fwd_kernel

for arch in (75, 80):
    for kind, kernel, pointers in (("bwd", norm_bwd_kernel, cc.BWD_POINTERS),
                                   ("fwd", norm_fwd_kernel, cc.FWD_POINTERS)):
        constexprs = ps.constexprs(kind, "fused_add", ps.parse_tile("1x2048w4Ss3"), "bf16")
        constexprs = {**{p.name: p.default for p in kernel.params if p.is_constexpr and p.has_default}, **constexprs}
        signature = cc._signature(kernel, "bf16", dict(pointers), constexprs)
        constexprs, attrs = cc.launch_specialisation(kernel, signature, constexprs)
        signature = cc._signature(kernel, "bf16", dict(pointers), constexprs)
        ptx = triton.compile(ASTSource(kernel, signature, constexprs, attrs), target=GPUTarget("cuda", arch, 32),
                             options={"num_warps": 4}).asm["ptx"]
        print(arch, kind, ptx.count("nanosleep.u32"), ptx.count("cp.async.cg") + ptx.count("cp.async.ca"))
"""


def test_staged_split_parts_compile_for_older_gpus():
    """The staged split parts (the wait spinning in inline PTX: ld.relaxed.gpu and
    nanosleep, sm_70+) build for sm_75 — no cp.async there, so the loop runs its loads as written,
    still spinning — and for sm_80 (staged); the fused add's backward and forward parts."""
    out = subprocess.run([sys.executable, "-c", _OLDER_GPUS], cwd=ROOT, env=_compiler_env(), capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = {(arch, kind): (int(spins), int(copies))
            for arch, kind, spins, copies in map(str.split, out.stdout.strip().split("\n"))}
    assert set(rows) == {(a, k) for a in ("75", "80") for k in ("bwd", "fwd")}, out.stdout
    for (arch, kind), (spins, copies) in rows.items():
        assert spins > 0, (arch, kind, out.stdout)
        assert (copies > 0) == (arch == "80"), (arch, kind, out.stdout)


def test_split_exchange_sends_and_awaits_only_what_is_read():
    """The split parts' exchange a row block (tools/ptx_stats.py, sm_90): the backward sends Σ(g·h) and,
    for LayerNorm, Σg, and a part awaits LayerNorm's two words in ONE spin wait (both loads in
    flight: one L2 round trip); the forward sends only its statistics (RMSNorm's Σh²,
    LayerNorm's mean and M2), none of the backward's sums (it once sent them as zeros)."""
    expected = {("bwd", "layer_norm"): (2, 1, 2), ("bwd", "rms"): (1, 1, 1), ("bwd", "fused_add"): (1, 1, 1),
                ("fwd", "fused_add"): (1, 1, 1), ("fwd", "rms"): (1, 1, 1), ("fwd", "layer_norm"): (2, 1, 2)}
    for kind in ("bwd", "fwd"):
        stdout, lines = _ptx_stats(kind, "--families", "layer_norm,rms,fused_add", "--widths", "131072")
        assert len(lines) == 3, stdout
        for line in lines:
            family = line.split()[1]
            exchange = re.search(r"exchange: (\d+) atomic words sent, (\d+) spin waits reading (\d+)", line)
            assert exchange, line  # (every family splits rows of 131072, both ways)
            assert tuple(map(int, exchange.groups())) == expected[kind, family], line



def test_split_parts_wait_by_spinning_for_everything_at_once():
    """No split part waits in a poll loop (a count of late words reduced across lanes, read again while
    any is late: each of a warp's lane groups counted its own replica of the slot and could decide alone,
    splitting the warp inside shfl.sync — a hang seen on an H200; docs/design.md#tried-and-rejected).
    Every part spins in PTX, and in ONE wait for
    all the words it reads (tools/ptx_stats.py, sm_90): the forward's (RMSNorm's Σh², LayerNorm's M2 and
    mean), the backward's with saved statistics (Σ(g·h), LayerNorm's Σg) and recomputing them (those with
    the statistics: RMSNorm 2 words, LayerNorm 4) — the parts that do not stage their loads as well
    (bf16 x with an fp32 y, fp32 rows of 262144)."""
    runs = {("fwd", "--families", "rms", "--widths", "65536", "--out-dtype", "fp32"): {"rms": 1},
            ("fwd", "--families", "rms,layer_norm", "--widths", "131072,262144"): {"rms": 1, "layer_norm": 2},
            ("fwd", "--families", "rms,layer_norm", "--widths", "131072", "--dtype", "fp32"):
                {"rms": 1, "layer_norm": 2},
            ("bwd", "--families", "rms,fused_add", "--widths", "262144", "--dtype", "fp32"): {"rms": 1, "fused_add": 1},
            ("bwd", "--recompute", "--families", "rms,layer_norm,fused_add", "--widths", "16384,131072"):
                {"rms": 2, "layer_norm": 4, "fused_add": 2},
            ("bwd", "--recompute", "--families", "rms,layer_norm", "--widths", "131072", "--dtype", "fp32"):
                {"rms": 2, "layer_norm": 4}}
    for (kind, *args), words in runs.items():
        stdout, lines = _ptx_stats(kind, *args)
        assert lines, stdout
        for line in lines:
            exchange = re.search(r" split.*exchange: \d+ atomic words sent, (\d+) spin waits reading (\d+)", line)
            assert exchange, line  # (every one of these splits its rows)
            assert (int(exchange.group(1)), int(exchange.group(2))) == (1, words[line.split()[1]]), line


_STAT_LOADS = """
import sys
sys.path.insert(0, "tools")
import compile_check as cc
import ptx_stats as ps
from normkit.kernels import norm_bwd_kernel

for family, recompute in (("rms", False), ("fused_add", False), ("layer_norm", False), ("rms", True)):
    constexprs = ps.constexprs("bwd", family, ps.parse_tile("1x2048w4Ss3"), "bf16")
    if recompute:
        constexprs.update(RECOMPUTE_STATS=True, RSTD=None, MEAN=None)
    ptx = cc.compile_ptx(norm_bwd_kernel, "bf16", dict(cc.BWD_POINTERS), constexprs, 4, True)
    print(family, recompute, "ld.global.nc.f32" in ptx)
"""


def test_rms_split_parts_load_rstd_outside_the_pipeliner():
    """sm_90 PTX: RMSNorm's and the fused add's staged split parts read the saved rstd
    with ptx.load_row_stat (a predicated ld.global.nc.f32), not through the pipeliner's shared-memory
    stages and their bar.sync; LayerNorm's (whose mean and rstd so lost 5-16 %, H200) keep the
    tl.load, and recomputing parts load no statistic."""
    out = subprocess.run([sys.executable, "-c", _STAT_LOADS], cwd=ROOT, env=_compiler_env(), capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.split("\n")[:4] == ["rms False True", "fused_add False True", "layer_norm False False",
                                          "rms True False"], out.stdout
