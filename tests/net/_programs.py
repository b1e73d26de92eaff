"""Node programs of the tls round and capture tests, and a host that knows them.

Plans that leave the driver carry program names only (:mod:`crowdhide.engine.library`), so a
test program must be in the registry of the driver *and* of every host: importing this module
registers them; ``python -m tests.net._programs`` is a node host with them registered
(:func:`use_test_hosts` makes a :class:`TlsBackend` start that instead of the stock host).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide.backends.tls.backend import TlsBackend
from crowdhide.engine import library
from crowdhide.engine.messages import Inbox

HOST_MODULE = "tests.net._programs"


@library._register("test.sleep_count")
def _sleep_count(route: str, seconds: float) -> Callable[..., Any]:
    """Sleeps ``seconds``, then counts the messages of ``route`` (a slow compute node)."""

    def process(inbox: Inbox, rng: np.random.Generator) -> dict[str, npt.NDArray[Any]]:
        time.sleep(seconds)
        return {"count": np.array([len(inbox.only(route).target)])}

    return process


@library._register("test.deliveries")
def _deliveries() -> Callable[..., Any]:
    """The number of deliveries a node received."""

    def process(inbox: Inbox, rng: np.random.Generator) -> dict[str, npt.NDArray[Any]]:
        return {"n": np.array([len(inbox.deliveries)])}

    return process


#: Real messages the busy programs of this process got (read and reset by the leaky daemons
#: of tests.net._daemon_rounds, a test of the timing test).
REAL = [0]


@library._register("test.busy")
def _busy(route: str, per_message: float) -> Callable[..., Any]:
    """Busy-waits ``per_message`` seconds per real message of ``route``; keeps the time."""

    def process(inbox: Inbox, rng: np.random.Generator) -> dict[str, npt.NDArray[Any]]:
        began = time.perf_counter()
        real = inbox.only(route).target.tolist()
        REAL[0] += len(real)
        for _ in real:
            deadline = time.perf_counter() + per_message
            while time.perf_counter() < deadline:
                pass
        took = time.perf_counter() - began
        return {"took": np.full(inbox.block.size, took)}

    return process


def use_test_hosts(patch: Callable[[Any, str, Any], None]) -> None:
    """Make :class:`TlsBackend` start hosts that know these programs (``patch`` is
    ``monkeypatch.setattr``, or :func:`setattr` in a throwaway process)."""
    launch = TlsBackend._launch

    def swap(self: TlsBackend, module: str, cfg: Any, label: str, netns: str | None = None) -> Any:
        if module == "crowdhide.backends.tls.host":
            module = HOST_MODULE
        return launch(self, module, cfg, label, netns)

    patch(TlsBackend, "_launch", swap)


if __name__ == "__main__":
    from crowdhide.backends.tls import host

    host.main()
