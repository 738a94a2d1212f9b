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

# Pads a spin wait's tile of words to this many elements (`_padded`): the most threads a program has on either
# vendor (32 warps of 32, 16 wavefronts of 64), so no thread holds a replica of another's word.
_MAX_THREADS = tl.constexpr(1024)


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
    up to 6 % slower. Portable: `_spin`'s loop."""
    if PTX:
        word = tl.inline_asm_elementwise(_SPIN_ONE, "=l,l,r,r", [ptr, tag, enabled], dtype=tl.int64,
                                         is_pure=False, pack=1)
    else:
        word, _, _, _ = _spin(ptr, ptr, ptr, ptr, tag, enabled, 1)
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
        a, b, _, _ = _spin(ptr, other, ptr, ptr, tag, enabled, 2)
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
        word_a, word_b, word_c, word_d = _spin(a, b, c, d, tag, enabled, 4)
    return word_a, word_b, word_c, word_d


@triton.jit
def _padded(ptr):
    """ptr's (ROWS, COLS) tile broadcast over a third, padding axis up to _MAX_THREADS elements: no thread holds a
    replica of another's element, so a reduction over the padding axis takes every thread's view (`_spin`)."""
    ROWS: tl.constexpr = ptr.shape[0]
    COLS: tl.constexpr = ptr.shape[1]
    PAD: tl.constexpr = _MAX_THREADS // (ROWS * COLS) if ROWS * COLS < _MAX_THREADS else 1  # (no max(): Triton < 3.6)
    return ptr[:, :, None] + tl.zeros([ROWS, COLS, PAD], tl.int32)


@triton.jit
def _read(ptr, on):
    """The words at ptr's padded copies (`_padded`; 0 where not `on`), read by volatile loads past L1, as the
    PTX's relaxed loads. ".cv": Triton 3.6's AMD backend drops the volatile flag (triton-lang/triton#11223) but
    keeps this one (sc0 sc1); NVIDIA's ld.volatile is unchanged by it."""
    return tl.load(_padded(ptr), mask=on[:, :, None], other=0, volatile=True, cache_modifier=".cv")


@triton.jit
def _largest_of_two(a, b, other_a, other_b):
    """`tl.reduce`'s combine for two words' copies: the larger of each."""
    return tl.maximum(a, other_a), tl.maximum(b, other_b)


@triton.jit
def _largest_of_four(a, b, c, d, other_a, other_b, other_c, other_d):
    """`tl.reduce`'s combine for four words' copies: the larger of each."""
    return tl.maximum(a, other_a), tl.maximum(b, other_b), tl.maximum(c, other_c), tl.maximum(d, other_d)


@triton.jit
def _late(word, tag, on):
    """Where `on`, whether a word does not carry `tag` (its high half) yet."""
    return on & ((word >> 32).to(tl.int32) != tag)


@triton.jit
def _spin(a, b, c, d, tag, enabled, WORDS: tl.constexpr):
    """The portable spin wait on WORDS (1, 2 or 4) words a lane: rounds of volatile loads of every word's padded
    copies, each word then the largest of its copies (one reduction: the same value in every thread that holds
    it; tags rise round by round, so the newest copy read), until every word so kept carries the tag (a condition
    reduced from those values: the same in every thread). Those very values are returned: a tagged word is
    written once, whole (`stats._send`), so it is final. One L2 round trip a wait once the words have arrived, as
    the PTX's; no thread returns a copy that was not checked (docs/design.md#split-rows)."""
    on = enabled != 0
    word_a = tl.zeros(a.shape, tl.int64)
    word_b = word_a
    word_c = word_a
    word_d = word_a
    late = 1
    while late > 0:
        if WORDS == 1:
            word_a = tl.max(_read(a, on), axis=2)
            word_b = word_a
        elif WORDS == 2:
            word_a, word_b = tl.reduce((_read(a, on), _read(b, on)), 2, _largest_of_two)
        else:
            word_a, word_b, word_c, word_d = tl.reduce((_read(a, on), _read(b, on), _read(c, on), _read(d, on)), 2,
                                                       _largest_of_four)
        seen = _late(word_a, tag, on) | _late(word_b, tag, on)
        if WORDS > 2:
            seen = seen | _late(word_c, tag, on) | _late(word_d, tag, on)
        # axis by axis: in the words' own layout (a flat max reshapes the tile through shared memory first)
        late = tl.max(tl.max(seen.to(tl.int32), axis=1), axis=0)
    if WORDS < 4:
        word_c = word_a
        word_d = word_b
    return word_a, word_b, word_c, word_d


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
