"""Row statistics: for rows walked in column tiles (`merge_tile_stats`, forward and backward) and
for rows split across programs (`publish_row_sums` / `await_row_sums`, forward and backward: each part
spins on its partners' tagged words in PTX, or without PTX on the slot's count of parts that published: ptx.py)."""

import triton
import triton.language as tl

from .ptx import announce, await_count, await_four_words, await_two_words, await_word


@triton.jit
def merge_tile_stats(h, mask, start, N, mean, m2, IS_RMS_NORM: tl.constexpr, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, COMPUTE_DTYPE: tl.constexpr):
    """Fold the tile h (columns start … start + BLOCK_N) into the running (mean, M2) of each row.

    RMSNorm: mean stays 0 and M2 = Σh². LayerNorm: Chan et al.'s parallel update, stable for large
    means — with n = start values seen and k in this tile, δ = mean_tile − mean:
    mean += δ·k/(n + k),  M2 += M2_tile + δ²·n·k/(n + k).
    """
    if IS_RMS_NORM:
        m2 += tl.sum(h * h, axis=1)
    else:
        seen = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE) + start
        count = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE) + tl.minimum(N - start, BLOCK_N)
        tile_mean = tl.sum(h, axis=1) / count
        d = tl.where(mask, h - tile_mean[:, None], 0.0)
        delta = tile_mean - mean
        mean += delta * count / (seen + count)
        m2 += tl.sum(d * d, axis=1) + delta * delta * seen * count / (seen + count)
    return mean, m2


@triton.jit
def inverse_std(var, eps, COMPUTE_DTYPE: tl.constexpr):
    """rstd = 1/√(var + eps), the square root rounded as IEEE's (sqrt.rn). Not tl.sqrt: on NVIDIA GPUs
    that is sqrt.approx.ftz.f32, which flushes a subnormal var + eps to 0 — with eps = 0 a row of
    |h| ≲ 1e-19 got rstd = inf where torch's is finite (~1e19). float64's tl.sqrt is sqrt.rn already."""
    if COMPUTE_DTYPE == tl.float32:
        return 1.0 / tl.sqrt_rn(var + eps)
    return 1.0 / tl.sqrt(var + eps)


# The exchange's ring of slots: a part publishes block t into slot t % RING while its partners may
# still be reading slot t - 2 (see publish_row_sums); 4 is the smallest ring for which that is safe.
RING = tl.constexpr(4)


@triton.jit
def _send(ptr, value, tag, SPAN: tl.constexpr, COMPUTE_DTYPE: tl.constexpr):
    """Write `value` as tagged 64-bit words, tag << 32 | 32 payload bits (float64: the high half at
    ptr, the low half SPAN further), each with one relaxed atomic exchange: a word is seen whole
    or not at all, and nothing waits for earlier memory operations (no fence)."""
    high = tag.to(tl.int64) << 32
    low_bits = tl.full([], 0xFFFFFFFF, tl.int64)
    if COMPUTE_DTYPE == tl.float64:
        bits = value.to(tl.int64, bitcast=True)
        tl.atomic_xchg(ptr, high | ((bits >> 32) & low_bits), sem="relaxed")
        tl.atomic_xchg(ptr + SPAN, high | (bits & low_bits), sem="relaxed")
    else:
        tl.atomic_xchg(ptr, high | (value.to(tl.float32).to(tl.int32, bitcast=True).to(tl.int64) & low_bits),
                       sem="relaxed")


@triton.jit
def _value(word, low, COMPUTE_DTYPE: tl.constexpr):
    """The payload of tagged words (`_send`): the float32 in word's low half, or (float64) the
    double whose high and low halves are word's and low's low halves."""
    low_bits = tl.full([], 0xFFFFFFFF, tl.int64)
    if COMPUTE_DTYPE == tl.float64:
        return (((word & low_bits) << 32) | (low & low_bits)).to(tl.float64, bitcast=True)
    return (word & low_bits).to(tl.int32).to(tl.float32, bitcast=True).to(COMPUTE_DTYPE)


@triton.jit
def _take_one(ptr, mask, tag, SPAN: tl.constexpr, COMPUTE_DTYPE: tl.constexpr, PTX: tl.constexpr):
    """The payload of the tagged words at ptr (`_send`) once they carry `tag` (`ptx.await_word`; a
    float64's two halves together, `ptx.await_two_words`); masked lanes read 0."""
    tags = tl.zeros(ptr.shape, tl.int32) + tag
    enabled = mask.to(tl.int32)
    if COMPUTE_DTYPE == tl.float64:  # both halves awaited at once (`await_two_words`: one round trip)
        word, low = await_two_words(ptr, ptr + SPAN, tags, enabled, PTX)
    else:
        word = await_word(ptr, tags, enabled, PTX)
        low = word
    return tl.where(mask, _value(word, low, COMPUTE_DTYPE), 0.0)


# Words after a slot's 8·SPAN: its count of parts that published into it (the portable wait's, `ptx.announce`),
# padded to 64 bytes so the next slot's words stay aligned
COUNT_WORDS = tl.constexpr(8)


@triton.jit
def _slot(XCHG, group, iteration, SPAN: tl.constexpr):
    """Slot iteration % RING of a group: 4 quantities × 2 word planes × SPAN (= SPLIT·BLOCK_M), then its count."""
    return XCHG + (group.to(tl.int64) * RING + iteration % RING) * (8 * SPAN + COUNT_WORDS)


@triton.jit
def _count(XCHG, group, iteration, SPAN: tl.constexpr):
    """The count of slot iteration % RING of a group (`ptx.announce`, `ptx.await_count`): after its 8·SPAN words."""
    return _slot(XCHG, group, iteration, SPAN) + 8 * SPAN


@triton.jit
def publish_row_sums(XCHG, group, iteration, part, h, mask, N, sum_gh, sum_g,
                     IS_RMS_NORM: tl.constexpr, RECOMPUTE_STATS: tl.constexpr, BLOCK_M: tl.constexpr,
                     SPLIT: tl.constexpr, COMPUTE_DTYPE: tl.constexpr, SUM_G: tl.constexpr = True,
                     sum_h=None, SUM_GH: tl.constexpr = True, PTX: tl.constexpr = False):
    """Publish this part's row sums of one row block (the group's `iteration`-th) to its partners.

    XCHG (int64, zeroed): (groups, RING, 4·2·SPLIT·BLOCK_M + COUNT_WORDS) — slot iteration % RING: quantity
    (Σ(g·h), Σg, local mean, local M2), word plane, part, row; then the slot's count. Each value is written as
    words tagged iteration + 1 (`_send`), so with PTX a reader knows from the words alone that they are this
    round's: no counter, no fence (a release would wait for the prefetched loads in flight). Without PTX the part
    then adds 1 to the slot's count (`ptx.announce`: a barrier and a release), which its partners await.
    Part k contributes, recomputing, s₁ = its mean and s₂ = its M2 over its n_k = min(N − k·BLOCK_N,
    BLOCK_N) columns (RMSNorm: s₂ = Σh²) — n_k counted from N, not reduced from the mask (one block
    reduction fewer a part); `await_row_sums` merges them. Without SUM_G, Σg is
    neither sent nor awaited (RMSNorm's backward: its dh has no Σg term); without SUM_GH neither is
    Σ(g·h) (the forward: it has no dy, and sends only its statistics). sum_h: the part's Σh
    (LayerNorm) or Σh² (RMSNorm) where the caller reduced it already (the backward, in the tree of
    Σ(g·h) and Σg: one block reduction fewer); None: reduced here.

    Why a ring of 4: a part publishes block t before it waits for block t − 1 (the wait overlaps a
    whole block's loads and sums). It can publish t only after its wait for t − 2 saw every partner
    publish t − 2, so every partner has finished iteration t − 3, which read slot (t − 4) % 4: the
    slot it overwrites is free (tests/test_exchange_ring.py explores every interleaving of a model of
    the protocol: 3 slots can hang, 4 cannot).
    """
    SPAN: tl.constexpr = SPLIT * BLOCK_M
    slot = _slot(XCHG, group, iteration, SPAN) + part * BLOCK_M + tl.arange(0, BLOCK_M)
    tag = iteration + 1
    if SUM_GH:
        _send(slot, sum_gh, tag, SPAN, COMPUTE_DTYPE)
    if SUM_G:
        _send(slot + 2 * SPAN, sum_g, tag, SPAN, COMPUTE_DTYPE)
    if RECOMPUTE_STATS:
        if sum_h is None:
            sum_h = tl.sum(h * h, axis=1) if IS_RMS_NORM else tl.sum(h, axis=1)
        if IS_RMS_NORM:
            _send(slot + 6 * SPAN, sum_h, tag, SPAN, COMPUTE_DTYPE)
        else:
            BLOCK_N: tl.constexpr = h.shape[1]
            n_k = tl.minimum(N - part * BLOCK_N, BLOCK_N).to(COMPUTE_DTYPE)  # its columns: no reduction
            local_mean = sum_h / n_k
            d = tl.where(mask, h - local_mean[:, None], 0.0)
            _send(slot + 4 * SPAN, local_mean, tag, SPAN, COMPUTE_DTYPE)
            _send(slot + 6 * SPAN, tl.sum(d * d, axis=1), tag, SPAN, COMPUTE_DTYPE)
    announce(_count(XCHG, group, iteration, SPAN), PTX)


@triton.jit
def _take_two(ptr, other, mask, tag, SPAN: tl.constexpr, COMPUTE_DTYPE: tl.constexpr, PTX: tl.constexpr):
    """The payloads of the tagged words at ptr and at other once both carry `tag`, in one round trip
    (`ptx.await_two_words`; a float64's four halves, `ptx.await_four_words`); masked lanes read 0."""
    tags = tl.zeros(ptr.shape, tl.int32) + tag
    if COMPUTE_DTYPE == tl.float64:
        word, low, word_other, low_other = await_four_words(ptr, ptr + SPAN, other, other + SPAN, tags,
                                                            mask.to(tl.int32), PTX)
    else:
        word, word_other = await_two_words(ptr, other, tags, mask.to(tl.int32), PTX)
        low = word
        low_other = word_other
    return (tl.where(mask, _value(word, low, COMPUTE_DTYPE), 0.0),
            tl.where(mask, _value(word_other, low_other, COMPUTE_DTYPE), 0.0))


@triton.jit
def _take_four(a, b, c, d, mask, tag, SPAN: tl.constexpr, COMPUTE_DTYPE: tl.constexpr, PTX: tl.constexpr):
    """The payloads of four quantities' tagged words once all carry `tag`: one round trip
    (`ptx.await_four_words`), two for float64 (its eight halves as two `_take_two`)."""
    if COMPUTE_DTYPE == tl.float64:
        value_a, value_b = _take_two(a, b, mask, tag, SPAN, COMPUTE_DTYPE, PTX)
        value_c, value_d = _take_two(c, d, mask, tag, SPAN, COMPUTE_DTYPE, PTX)
    else:
        word_a, word_b, word_c, word_d = await_four_words(a, b, c, d, tl.zeros(a.shape, tl.int32) + tag,
                                                          mask.to(tl.int32), PTX)
        value_a = tl.where(mask, _value(word_a, word_a, COMPUTE_DTYPE), 0.0)
        value_b = tl.where(mask, _value(word_b, word_b, COMPUTE_DTYPE), 0.0)
        value_c = tl.where(mask, _value(word_c, word_c, COMPUTE_DTYPE), 0.0)
        value_d = tl.where(mask, _value(word_d, word_d, COMPUTE_DTYPE), 0.0)
    return value_a, value_b, value_c, value_d


@triton.jit
def _await_slot(slot, mask, tag, IS_RMS_NORM: tl.constexpr, RECOMPUTE_STATS: tl.constexpr, SPAN: tl.constexpr,
                COMPUTE_DTYPE: tl.constexpr, SUM_G: tl.constexpr, SUM_GH: tl.constexpr, PTX: tl.constexpr):
    """The (SPLIT, BLOCK_M) tiles of a slot's four quantities (unused ones 0) once every word read is
    this round's. Everything a part reads is awaited in ONE wait, all its loads in flight: one L2 round
    trip a row block (two for float64's recomputing LayerNorm backward), where waits one after another
    took one each (H200): LayerNorm bf16 4096×16384's backward, Σ(g·h) and Σg together, 130.5 →
    117.5 µs; the recomputing backward's Σ(g·h) (and Σg) with the statistics, RMSNorm bf16
    2048×131072 613.6 (two waits) → 528.3 µs."""
    gh = slot
    g = slot + 2 * SPAN
    m1 = slot + 4 * SPAN  # LayerNorm's local mean
    m2 = slot + 6 * SPAN  # LayerNorm's local M2, RMSNorm's Σh²
    sum_gh = tl.zeros(slot.shape, COMPUTE_DTYPE)
    sum_g = tl.zeros_like(sum_gh)
    s1 = tl.zeros_like(sum_gh)
    s2 = tl.zeros_like(sum_gh)
    if (SUM_GH and SUM_G) and (RECOMPUTE_STATS and not IS_RMS_NORM):  # LayerNorm's recomputing backward
        sum_gh, sum_g, s2, s1 = _take_four(gh, g, m2, m1, mask, tag, SPAN, COMPUTE_DTYPE, PTX)
    elif (SUM_GH and SUM_G) and not RECOMPUTE_STATS:  # LayerNorm's backward
        sum_gh, sum_g = _take_two(gh, g, mask, tag, SPAN, COMPUTE_DTYPE, PTX)
    elif (SUM_GH and not SUM_G) and (RECOMPUTE_STATS and IS_RMS_NORM):  # RMSNorm's recomputing backward
        sum_gh, s2 = _take_two(gh, m2, mask, tag, SPAN, COMPUTE_DTYPE, PTX)
    elif (not SUM_GH and not SUM_G) and (RECOMPUTE_STATS and not IS_RMS_NORM):  # LayerNorm's forward
        s2, s1 = _take_two(m2, m1, mask, tag, SPAN, COMPUTE_DTYPE, PTX)
    else:  # one quantity (RMSNorm's backward Σ(g·h), its forward Σh²); any other set, one wait each
        if SUM_GH:
            sum_gh = _take_one(gh, mask, tag, SPAN, COMPUTE_DTYPE, PTX)
        if SUM_G:
            sum_g = _take_one(g, mask, tag, SPAN, COMPUTE_DTYPE, PTX)
        if RECOMPUTE_STATS:
            s2 = _take_one(m2, mask, tag, SPAN, COMPUTE_DTYPE, PTX)
            if not IS_RMS_NORM:
                s1 = _take_one(m1, mask, tag, SPAN, COMPUTE_DTYPE, PTX)
    return sum_gh, sum_g, s1, s2


@triton.jit
def await_row_sums(XCHG, group, iteration, parts, N, IS_RMS_NORM: tl.constexpr,
                   RECOMPUTE_STATS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   SPLIT: tl.constexpr, COMPUTE_DTYPE: tl.constexpr, SUM_G: tl.constexpr = True,
                   SUM_GH: tl.constexpr = True, PTX: tl.constexpr = False):
    """Whole-row (Σ(g·h), Σg, mean, var) of the group's `iteration`-th row block: read the slot
    until every partner's words carry this round's tag, then reduce the `parts` partial sums in one
    fixed order, so every part gets the same bits. iteration = −1 waits for nothing (zeros).
    The wait, with PTX: each lane spins on its own words in PTX (`ptx.await_word`, `_await_slot`: all of them in
    one wait) — no loop in the IR, so Triton's pipeliner can stage the caller's row loop, and no count of late
    words reduced across lanes, whose replicas of the slot could disagree and split a warp inside a shuffle (what
    a poll loop here once did: docs/design.md#tried-and-rejected). Without: the slot's count of parts that
    published into it (`ptx.await_count`, read by one thread and handed to all), then each word read once.
    SUM_G / SUM_GH: as `publish_row_sums` sent them (Σg / Σ(g·h) 0 without)::

        mean = Σ n_k·s₁ₖ / N        M2 = Σ s₂ₖ + Σ n_k·(s₁ₖ − mean)²        var = M2 / N
    """
    SPAN: tl.constexpr = SPLIT * BLOCK_M
    ks = tl.arange(0, SPLIT)
    k_mask = (ks < parts)[:, None] & (iteration >= 0)
    slot = _slot(XCHG, group, iteration + RING, SPAN) + (ks[:, None] * BLOCK_M + tl.arange(0, BLOCK_M)[None, :])
    tag = iteration + 1
    # without PTX: every part announced this round in this slot; (iteration + RING) // RING rounds used the slot
    # (0 for iteration −1: no wait)
    await_count(_count(XCHG, group, iteration + RING, SPAN), parts * ((iteration + RING) // RING), PTX)
    sum_gh, sum_g, s1, s2 = _await_slot(slot, k_mask, tag, IS_RMS_NORM, RECOMPUTE_STATS, SPAN, COMPUTE_DTYPE, SUM_G,
                                        SUM_GH, PTX)
    sum_gh = tl.sum(sum_gh, axis=0)
    if SUM_G:
        sum_g = tl.sum(sum_g, axis=0)
    else:
        sum_g = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE)
    mean = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE)
    var = tl.zeros([BLOCK_M], dtype=COMPUTE_DTYPE)
    if RECOMPUTE_STATS:
        if IS_RMS_NORM:
            var = tl.sum(s2, axis=0) / N
        else:
            n_k = tl.minimum(tl.maximum(N - ks * BLOCK_N, 0), BLOCK_N).to(COMPUTE_DTYPE)[:, None]
            mean = tl.sum(n_k * s1, axis=0) / N
            d = s1 - mean[None, :]
            var = (tl.sum(s2, axis=0) + tl.sum(tl.where(k_mask, n_k * d * d, 0.0), axis=0)) / N
    return sum_gh, sum_g, mean, var
