"""The compact stores of a node host's received frames give what the per-frame checks gave:
the same frames refused as repeats (against a set checked on arrival, over random streams
with replays across rounds), and the same messages back per group, route and sender block."""

from __future__ import annotations

import numpy as np

from crowdhide.backends.tls.inbox import KEY, Inbox, Keys, inner_key


def _reference(rounds: list[list[tuple[int, tuple[bytes, ...]]]]) -> list[list[int]]:
    """Per round, the arrival numbers of the frames a set checked on arrival refuses."""
    seen: set[bytes] = set()
    out = []
    for frames in rounds:
        refused = []
        for number, (_, keys) in enumerate(frames):
            if any(k in seen for k in keys):
                refused.append(number)
            else:
                seen.update(keys)
        out.append(refused)
    return out


def test_repeats_are_refused_as_by_a_set_checked_on_arrival() -> None:
    rng = np.random.default_rng(11)
    for _ in range(200):
        pool = [bytes(rng.integers(0, 256, KEY, dtype=np.uint8)) for _ in range(12)]
        inners = [inner_key(bytes(rng.integers(0, 256, 8, dtype=np.uint8))) for _ in range(6)]
        rounds: list[list[tuple[int, tuple[bytes, ...]]]] = []
        for _ in range(int(rng.integers(1, 4))):
            frames = []
            for _ in range(int(rng.integers(0, 10))):
                keys: tuple[bytes, ...] = (pool[int(rng.integers(0, len(pool)))],)
                if rng.random() < 0.5:  # a forward: its inner body's key too
                    keys += (inners[int(rng.integers(0, len(inners)))],)
                frames.append((int(rng.integers(0, 3)), keys))
            rounds.append(frames)
        store = Keys()
        for frames, expected in zip(rounds, _reference(rounds), strict=True):
            for number, (peer, keys) in enumerate(frames):
                store.add(peer, number, *keys)
            refused = store.settle()
            assert [slot for _, slot in refused] == expected
            assert [peer for peer, _ in refused] == [frames[i][0] for i in expected]


def test_the_inbox_gives_back_each_groups_messages_and_drops_refused_ones() -> None:
    inbox = Inbox()
    a = inbox.add((0, 1, 0, 5, 0, 10, 0, -1), b"first")
    inbox.dummy(5)
    b = inbox.add((0, 1, 0, 9, 1, 11, 0, -1), b"other group")
    inbox.add((0, 1, 1, 6, 2, 12, 3, -1), b"second block")
    c = inbox.add((0, 1, 0, 5, 3, 13, 0, -1), b"a repeat")
    inbox.dummy(6)
    assert len(inbox) == 6
    inbox.refuse(c)
    inbox.refuse(-1 - 6)  # a repeated dummy for node 6
    assert len(inbox) == 4
    data, parts = inbox.take(5, 7)
    got = {
        key: (ints.tolist(), [bytes(data[x:y]) for x, y in spans.tolist()])
        for key, ints, spans in parts
    }
    assert got == {
        (0, 1, 0): ([[5, 0, 10, 0, -1]], [b"first"]),
        (0, 1, 1): ([[6, 2, 12, 3, -1]], [b"second block"]),
    }
    assert (a, b) == (0, 1)
    assert len(inbox) == 1  # node 9's message stays, its payload moved with it
    data, parts = inbox.take(9, 10)
    assert [bytes(data[x:y]) for _, _, spans in parts for x, y in spans.tolist()] == [
        b"other group"
    ]
    assert len(inbox) == 0


def _message_key(rng: np.random.Generator, epoch: int) -> bytes:
    head = b"\x01" + bytes(rng.integers(0, 256, 11, dtype=np.uint8))
    return head + epoch.to_bytes(4, "little") + bytes(rng.integers(0, 256, 4, dtype=np.uint8))


def test_a_floor_forgets_only_message_keys_of_earlier_epochs_and_refuses_the_same() -> None:
    rng = np.random.default_rng(5)
    for _ in range(100):
        inners = [inner_key(bytes(rng.integers(0, 256, 8, dtype=np.uint8))) for _ in range(6)]
        rounds: list[list[tuple[int, tuple[bytes, ...]]]] = []
        for epoch in range(1, 5):  # frames of round t carry epoch t (the host refuses others)
            pool = [_message_key(rng, epoch) for _ in range(8)]
            frames = []
            for _ in range(int(rng.integers(0, 10))):
                keys: tuple[bytes, ...] = (pool[int(rng.integers(0, len(pool)))],)
                if rng.random() < 0.5:
                    keys += (inners[int(rng.integers(0, len(inners)))],)
                frames.append((0, keys))
            rounds.append(frames)
        store = Keys()
        checked = zip(rounds, _reference(rounds), strict=True)
        for epoch, (frames, expected) in enumerate(checked, start=1):
            for number, (peer, keys) in enumerate(frames):
                store.add(peer, number, *keys)
            # After round t closes, epoch t's frames are no longer accepted: floor t + 1.
            assert [slot for _, slot in store.settle(floor=epoch + 1)] == expected
            kept = {bytes(k) for k in store.history}
            assert all(k.startswith(b"\xff") for k in kept)  # message keys forgotten
            accepted = {k for i, (_, ks) in enumerate(frames) if i not in expected for k in ks}
            assert {k for k in accepted if k.startswith(b"\xff")} <= kept
    # The floor itself is kept (epoch 3 with floor 3), the epoch below it is not.
    store = Keys()
    low, at = _message_key(rng, 2), _message_key(rng, 3)
    store.add(0, 0, low)
    store.add(0, 1, at)
    assert store.settle(floor=3) == []
    assert [bytes(k) for k in store.history] == [at]
    store.add(1, 2, at)
    assert store.settle(floor=3) == [(1, 2)]
