"""Each node host receives only the source rows of the blocks it serves (block b on host
b mod H): the job bytes written to every host's control pipe are searched for every row."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from crowdhide.backends import execute
from crowdhide.backends.tls._control import Channel
from crowdhide.backends.tls.backend import host_of_block
from crowdhide.backends.tls.control import LoadJob, encode
from tests.engine._marked import BLOCK, SOURCES, marked_plan, rows_in, rows_of

pytestmark = pytest.mark.net


@pytest.mark.parametrize("protected", [False, True])
def test_hosts_receive_only_their_blocks(
    backends: Any, monkeypatch: pytest.MonkeyPatch, protected: bool
) -> None:
    shipped: dict[str, bytes] = {}
    send = Channel.send

    def spy(self: Channel, message: Any) -> None:
        if isinstance(message, LoadJob):
            shipped[self.name] = encode(message)  # every byte on the host's control pipe
        send(self, message)

    monkeypatch.setattr(Channel, "send", spy)
    plan = marked_plan(protected=protected)
    local = execute(plan, rng=3, block_size=BLOCK)
    run = execute(plan, rng=3, block_size=BLOCK, backend=backends(hosts=3, placement="modulo"))
    np.testing.assert_array_equal(run.states["C"]["total"], local.states["C"]["total"])
    assert run.routes == local.routes
    assert sorted(shipped) == ["host0", "host1", "host2"]
    blocks = range(-(-SOURCES // BLOCK))
    for h in range(3):
        owned = {b for b in blocks if host_of_block(b, 3) == h}
        assert rows_in(shipped[f"host{h}"]) == rows_of(owned), f"host{h}"
