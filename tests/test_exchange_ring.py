"""The split parts' exchange ring (kernels/stats.py `publish_row_sums`), checked on a model.

The kernels' exchange cannot run on a CPU (the parts of a row wait on each other, and Triton's
interpreter runs programs one after another), so its safety argument is checked here on a model of
the protocol, every interleaving of a few parts explored: part p at iteration t publishes its word
of round t into slot t % RING (a relaxed atomic exchange: seen whole or not at all), then waits until
every part's word in slot (t − LAG) % RING carries round t − LAG's tag, reading each word and its tag
in one load (`ptx.await_word`), so a word once read is the right round's. A part whose awaited word
was overwritten by a partner's later round never sees its tag again: the kernel would hang. LAG is
how many row blocks a part's wait trails its publish (the kernel's: 1).

Safe iff RING ≥ 2·LAG + 2: a part publishes round u only after its wait for round u − 1 − LAG saw
every partner's word of that round, so a partner has reached iteration u − 1 − LAG and may still wait
for round u − 1 − 2·LAG, in slot (u − 1 − 2·LAG) % RING — which round u overwrites when
RING = 2·LAG + 1.

Without PTX (`ptx.announce` / `ptx.await_count`) a part adds 1 to its slot's count after its word, and a wait
for round r reads the slot's count until it reaches parts·(r // RING + 1), then reads the words once, unchecked:
the second model checks that the words so read are always round r's and that no interleaving leaves every
unfinished part waiting.
"""

import functools

import pytest

from normkit.kernels import stats


def _hangs(parts: int, rounds: int, ring: int, lag: int) -> bool:
    """Whether some interleaving of `parts` parts running `rounds` iterations leaves a part waiting for
    a word that was overwritten (depth-first over every state; a part's step is its next publish or
    its wait)."""
    @functools.lru_cache(maxsize=None)
    def explore(state) -> bool:
        progress, slots = state  # progress[p] = 2·t (publish t next) or 2·t + 1 (wait for t − lag next)
        for p in range(parts):
            step = progress[p]
            t, waiting = divmod(step, 2)
            if t >= rounds + lag:
                continue  # this part is done
            if not waiting:  # publish round t
                new_slots = list(slots)
                new_slots[(t % ring) * parts + p] = t
                if explore((progress[:p] + (step + 1,) + progress[p + 1:], tuple(new_slots))):
                    return True
                continue
            r = t - lag
            if r >= 0:
                words = [slots[(r % ring) * parts + q] for q in range(parts)]
                if any(w is not None and w > r for w in words):
                    return True  # a word of round r was overwritten (by round r + ring): it never comes back
                if any(w != r for w in words):
                    continue  # not yet published: this part waits (the others may step)
            if explore((progress[:p] + (step + 1,) + progress[p + 1:], slots)):
                return True
        return False

    return explore(((0,) * parts, (None,) * (ring * parts)))


@pytest.mark.parametrize("lag", [1, 2])
def test_ring_of_two_lags_and_two_is_safe_and_one_less_hangs(lag):
    """The model finds the hang with RING = 2·LAG + 1 and none with 2·LAG + 2 (two and three parts,
    enough rounds for a part to lap the ring)."""
    for parts in (2, 3):
        rounds = 2 * lag + 4
        assert _hangs(parts, rounds, 2 * lag + 1, lag), (parts, lag)
        assert not _hangs(parts, rounds, 2 * lag + 2, lag), (parts, lag)


def test_the_kernels_ring_is_safe_for_their_lag():
    """stats.RING with the kernels' lag (iteration t finishes block t − 1)."""
    ring = stats.RING.value
    assert ring >= 2 * 1 + 2
    assert not _hangs(3, ring + 3, ring, 1)


def _counted_fails(parts: int, rounds: int, ring: int, lag: int) -> bool:
    """Whether some interleaving of the counted protocol reads a word of another round or deadlocks. A part's
    steps: write its word of round t, add 1 to the slot's count, then (t ≥ lag) wait for round t − lag: once the
    slot's count reaches parts·((t − lag) // ring + 1), read every partner's word."""
    @functools.lru_cache(maxsize=None)
    def explore(state) -> bool:
        progress, slots, counts = state  # progress[p] = 3·t + (0 write, 1 count, 2 wait)
        unfinished = stepped = False
        for p in range(parts):
            step = progress[p]
            t, phase = divmod(step, 3)
            if t >= rounds + lag:
                continue
            unfinished = True
            following = progress[:p] + (step + 1,) + progress[p + 1:]
            if phase == 0:
                new_slots = list(slots)
                new_slots[(t % ring) * parts + p] = t
                nxt = (following, tuple(new_slots), counts)
            elif phase == 1:
                new_counts = list(counts)
                new_counts[t % ring] += 1
                nxt = (following, slots, tuple(new_counts))
            else:
                r = t - lag
                if r >= 0:
                    if counts[r % ring] < parts * (r // ring + 1):
                        continue  # waits
                    if any(slots[(r % ring) * parts + q] != r for q in range(parts)):
                        return True  # read a word of another round
                nxt = (following, slots, counts)
            stepped = True
            if explore(nxt):
                return True
        return unfinished and not stepped  # every unfinished part waits: a deadlock

    return explore(((0,) * parts, (None,) * (ring * parts), (0,) * ring))


def test_the_counted_wait_reads_its_round_and_never_deadlocks():
    """The portable wait's count with the kernels' ring and lag: every read is of the awaited round and no
    interleaving deadlocks (two and three parts, enough rounds to lap the ring); with a ring of 2·LAG + 1 a
    count reaches its target while a partner's word is already the next lap's (the check can fail)."""
    ring = stats.RING.value
    for parts in (2, 3):
        assert not _counted_fails(parts, ring + 3, ring, 1), parts
    assert _counted_fails(2, 6, 3, 1)
