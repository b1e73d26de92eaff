"""A node host that misbehaves on its links (for the insider tests): started instead of
``crowdhide.backends.tls.host`` for one host, it tampers with the frames it queued for the
first other host at every round barrier, as ``ROGUE_ACTION`` says:

* ``duplicate`` — writes its first frame twice (and counts it twice in its END);
* ``replay`` — writes again a frame it sent in an earlier round;
* ``withhold`` — drops its first frame (and counts only what it writes);
* ``garbage`` — writes a frame of an unknown kind after its data frames;
* ``late`` — starts its first round ``ROGUE_DELAY`` seconds after the schedule.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from crowdhide.backends.tls import host as real


def _patch() -> None:
    action = os.environ["ROGUE_ACTION"]
    flush = real.Host.flush
    kept: list[tuple[int, bytes]] = []

    async def rogue(self: Any, *args: Any) -> Any:
        if action == "late" and not kept:
            kept.append((0, b""))
            await asyncio.sleep(float(os.environ["ROGUE_DELAY"]))
        peers = [p for p in sorted(self.outbox) if p != self.host and self.outbox[p]]
        if action == "replay" and kept:
            self.outbox[kept[0][0]].append(kept[0][1])  # a frame of an earlier round
        elif peers:
            queue = self.outbox[peers[0]]
            if action == "duplicate":
                queue.append(queue[0])
            elif action == "withhold":
                del queue[0]
            elif action == "garbage":
                # A frame of an unknown kind (queued messages are sealed at the flush).
                queue.append((bytes([0x7E]) + bytes(11), queue[0][1]))
            if not kept:
                kept.append((peers[0], queue[0]))
        return await flush(self, *args)

    real.Host.flush = rogue  # type: ignore[method-assign]


if __name__ == "__main__":
    _patch()
    real.main()
