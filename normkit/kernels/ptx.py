"""Every piece of inline PTX in normkit, each beside the portable Triton it stands in for (docs/design.md#heuristics).

A kernel reaches PTX only through this module, and only where its launch says the target is an NVIDIA GPU: the
`PTX` constexpr (the split parts' spin wait and statistic load), `BF16_PAIRS` (register-pair upcasts) and the
programmatic-dependent-launch flags (`LAUNCH_DEPENDENTS`, `USE_PDL`). The launchers set them from
`_runtime.inline_ptx` — True on CUDA devices of an NVIDIA build of torch, False under ROCm, in the interpreter
and with NORMKIT_PORTABLE=1 — so AMD GPUs and tests of the portable path compile Triton alone.
tests/test_portability.py checks that no other module holds inline assembly.
"""

import triton
import triton.language as tl

# ---- the split parts' spin wait (stats.await_row_sums; docs/design.md#split-rows) ----

def _spin_ptx(words: int) -> str:
    """The PTX of the spin wait (`await_word`, `await_two_words`, `await_four_words`) for `words`
    words a lane, every load in flight each round: outputs $0 … $(words − 1), their addresses next,
    then the tag and the enabled flag."""
    tag, enabled = 2 * words, 2 * words + 1
    lines = [".reg .pred p;", ".reg .b32 lo, hi;", *(f"mov.b64 ${i}, 0;" for i in range(words)),
             f"setp.eq.s32 p, ${enabled}, 0;", "@p bra DONE;", "SPIN:",
             *(f"ld.relaxed.gpu.global.b64 ${i}, [${words + i}];" for i in range(words))]
    for i in range(words):
        lines += [f"mov.b64 {{lo, hi}}, ${i};",
                  f"setp.ne.s32 p, hi, ${tag};" if i == 0 else f"setp.ne.or.s32 p, hi, ${tag}, p;"]
    lines += ["@!p bra DONE;", "nanosleep.u32 64;", "bra SPIN;", "DONE:"]
    # one line, no backslash: torch 2.11's Inductor pastes a traced kernel's globals into a non-raw string
    # literal, where a "\\n" escape became a newline inside the string (the generated module failed to load)
    return "{ " + " ".join(lines + ["}"])


_SPIN_ONE = tl.constexpr(_spin_ptx(1))
_SPIN_TWO = tl.constexpr(_spin_ptx(2))
_SPIN_FOUR = tl.constexpr(_spin_ptx(4))


@triton.jit
def await_word(ptr, tag, enabled, PTX: tl.constexpr):
    """The 64-bit word at ptr once its high half is `tag` (0 where `enabled` is 0).

    PTX: each lane spins on relaxed loads on its own: the kernel's IR has no loop (Triton's pipeliner can
    still stage the row loop) and no block-wide count of late words (labels in a PTX block are local to it, so
    each copy has its own). 64 ns of nanosleep (sm_70+) between reads: 0-200 ns timed alike on an H200, 600 ns
    up to 6 % slower. Portable: the words as they are, once `await_count` saw every partner announce them."""
    if PTX:
        word = tl.inline_asm_elementwise(_SPIN_ONE, "=l,l,r,r", [ptr, tag, enabled], dtype=tl.int64,
                                         is_pure=False, pack=1)
    else:
        word = _read(ptr, enabled)
    return word


@triton.jit
def await_two_words(ptr, other, tag, enabled, PTX: tl.constexpr):
    """`await_word` for the words at ptr and at other at once (the pair of each lane): both loads in
    flight each round, so one L2 round trip, not two in a row, once both have arrived — LayerNorm's
    Σ(g·h) and Σg (backward), its M2 and mean (forward), the recomputing RMSNorm's Σ(g·h) and Σh², a
    float64's two halves."""
    if PTX:
        a, b = tl.inline_asm_elementwise(_SPIN_TWO, "=l,=l,l,l,r,r", [ptr, other, tag, enabled],
                                         dtype=(tl.int64, tl.int64), is_pure=False, pack=1)
    else:
        a = _read(ptr, enabled)
        b = _read(other, enabled)
    return a, b


@triton.jit
def await_four_words(a, b, c, d, tag, enabled, PTX: tl.constexpr):
    """`await_two_words` for four words a lane (one L2 round trip once all have arrived) — the
    recomputing LayerNorm backward's Σ(g·h), Σg, M2 and mean, or a float64's two pairs of halves."""
    if PTX:
        word_a, word_b, word_c, word_d = tl.inline_asm_elementwise(
            _SPIN_FOUR, "=l,=l,=l,=l,l,l,l,l,r,r", [a, b, c, d, tag, enabled],
            dtype=(tl.int64, tl.int64, tl.int64, tl.int64), is_pure=False, pack=1)
    else:
        word_a = _read(a, enabled)
        word_b = _read(b, enabled)
        word_c = _read(c, enabled)
        word_d = _read(d, enabled)
    return word_a, word_b, word_c, word_d


@triton.jit
def _read(ptr, enabled):
    """The portable wait's read of words its count said are all there (`await_count`): one volatile load each, past
    L1 as the PTX's relaxed loads (0 where not `enabled`). ".cv": Triton 3.6's AMD backend drops the volatile flag
    (triton-lang/triton#11223) but keeps this one (sc0 sc1); NVIDIA's ld.volatile is unchanged by it."""
    return tl.load(ptr, mask=enabled != 0, other=0, volatile=True, cache_modifier=".cv")


@triton.jit
def announce(counter, PTX: tl.constexpr):
    """Portable path only (no-op with PTX): after this program's words of a round, add 1 to the slot's count —
    a block barrier (every thread's words issued before it), then one atomic add with release semantics at GPU
    scope by one thread (a scalar atomic), the pattern of a cooperative grid sync."""
    if not PTX:
        tl.debug_barrier()
        tl.atomic_add(counter, 1, sem="release")


@triton.jit
def await_count(counter, target, PTX: tl.constexpr):
    """Portable path only (no-op with PTX): spin until the slot's count (`announce`) reaches `target`. Each round
    is one scalar atomic read with acquire semantics, whose value Triton hands every thread through shared memory
    behind a barrier: the loop condition is the same in every thread (no warp can split on it), and every
    thread's later loads are ordered after the acquire, so the words are read once, unchecked (`_read`)."""
    if not PTX:
        seen = tl.atomic_add(counter, 0, sem="acquire")
        while seen < target:
            seen = tl.atomic_add(counter, 0, sem="acquire")


@triton.jit
def load_row_stat(ptr, mask, PTX: tl.constexpr):
    """A saved float32 statistic of each row (RMSNorm's split parts' rstd: LayerNorm's mean and rstd so
    read lost 5-16 %), 0.0 where `mask` is off. PTX: `ld.global.nc` in inline asm — no tl.load, so Triton's
    software pipeliner leaves it out of the staged row loop's shared-memory stages (where it cost a bar.sync of
    its own every row block: the staged split parts' largest barrier stall in Nsight Compute's source
    counters). Portable: a plain load."""
    tl.static_assert(ptr.dtype.element_ty == tl.float32, "load_row_stat reads float32 statistics")
    if PTX:
        value = tl.inline_asm_elementwise(
            """{
        .reg .pred p;
        setp.ne.s32 p, $2, 0;
        mov.f32 $0, 0f00000000;
        @p ld.global.nc.f32 $0, [$1];
        }""", "=f,l,r", [ptr, mask.to(tl.int32)], dtype=tl.float32, is_pure=False, pack=1)
    else:
        value = tl.load(ptr, mask=mask, other=0.0)
    return value


# ---- register-pair upcasts (convert.py; the launch asks for them with BF16_PAIRS only where PTX is allowed) ----

@triton.jit
def pairs_to_float32(t, PURE: tl.constexpr):
    """A bf16 or fp16 tile in float32, one 32-bit register of two elements at a time (PTX): bf16 a shift and a
    mask, fp16 two cvt.f32.f16 of the register's halves. PURE lets the compiler move it. The portable form is
    `t.to(tl.float32)` (convert.upcast without BF16_PAIRS), bitwise the same."""
    if t.dtype == tl.bfloat16:
        return tl.inline_asm_elementwise("{ shl.b32 $0, $2, 16; and.b32 $1, $2, 0xffff0000; }", "=r,=r,r", [t],
                                         dtype=tl.float32, is_pure=PURE, pack=2)
    return tl.inline_asm_elementwise(
        "{ .reg .b16 lo, hi; mov.b32 {lo, hi}, $2; cvt.f32.f16 $0, lo; cvt.f32.f16 $1, hi; }", "=r,=r,r", [t],
        dtype=tl.float32, is_pure=PURE, pack=2)


# ---- programmatic dependent launch (sm_90+ griddepcontrol; docs/design.md#finisher) ----

@triton.jit
def launch_dependents():
    """Let the next kernel's programs launch once every program of this one has called this (sm_90+).
    Triton's own `gdc_launch_dependents` is not in Triton 3.2-3.3 and does not compile in 3.4: normkit's own."""
    tl.inline_asm_elementwise("griddepcontrol.launch_dependents; // $0", "=r", [], dtype=tl.int32, is_pure=False,
                              pack=1)


@triton.jit
def wait_for_primary():
    """Wait until the kernel this one depends on has completed and its writes are visible (sm_90+)."""
    tl.inline_asm_elementwise("griddepcontrol.wait; // $0", "=r", [], dtype=tl.int32, is_pure=False, pack=1)
