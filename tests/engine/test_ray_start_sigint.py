"""Ctrl-C while ``ray.init`` runs is never lost (``start_ray``'s SIGINT guard).

Under load, a SIGINT that arrived while Ray spawned its processes raised
``KeyboardInterrupt`` inside one of Python's at-fork hooks (``logging._releaseLock``), where
it is printed as "Exception ignored" and dropped: ``crowdhide run --backend ray`` went on and
exited 0 (2 of 10 runs signalled 0.2 s after ``gcs_server`` appeared; see the CHANGELOG).
Here ``ray.init`` is a stand-in that receives a real SIGINT and drops the exception the same
ways (an ``except`` and a ``__del__``, whose exceptions go to ``sys.unraisablehook`` as an
at-fork hook's do), so no Ray is started.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from crowdhide.engine.backend import Job
from crowdhide.engine.plan import PlanBuilder

pytest.importorskip("ray")

from crowdhide.backends import ray as ray_backend
from crowdhide.backends.ray import RayBackend, start_ray


@pytest.fixture
def shutdowns(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Calls of ``ray.shutdown`` (the stand-in starts nothing, so nothing is stopped)."""
    calls: list[str] = []
    monkeypatch.setattr(ray_backend.ray, "shutdown", lambda: calls.append("shutdown"))
    monkeypatch.setattr(ray_backend, "_ray_descendants", list)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    yield calls
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored


def fake_init(monkeypatch: pytest.MonkeyPatch, body: Callable[[], None]) -> list[int]:
    """Replace ``ray.init`` with ``body``; the list counts its calls."""
    calls: list[int] = []

    def init(**kwargs: Any) -> None:
        calls.append(1)
        body()

    monkeypatch.setattr(ray_backend.ray, "init", init)
    return calls


def swallow_in_except() -> None:
    with contextlib.suppress(KeyboardInterrupt):  # as Ray's start-up lost it
        signal.raise_signal(signal.SIGINT)  # the handler runs here and raises


class _RaisesInDel:
    def __del__(self) -> None:
        signal.raise_signal(signal.SIGINT)


def swallow_in_del() -> None:
    _RaisesInDel()  # freed at once: the KeyboardInterrupt goes to sys.unraisablehook


def test_swallowed_ctrl_c_is_raised_after_init_and_ray_shut_down(
    monkeypatch: pytest.MonkeyPatch, shutdowns: list[str]
) -> None:
    calls = fake_init(monkeypatch, swallow_in_except)
    with pytest.raises(KeyboardInterrupt):
        start_ray(num_cpus=1)
    assert calls == [1]  # ray.init ran to its end: the guard raised afterwards
    assert shutdowns == ["shutdown"]


def test_unraisable_ctrl_c_is_raised_and_not_printed(
    monkeypatch: pytest.MonkeyPatch, shutdowns: list[str], capfd: pytest.CaptureFixture[str]
) -> None:
    hook = sys.unraisablehook
    fake_init(monkeypatch, swallow_in_del)
    with pytest.raises(KeyboardInterrupt):
        start_ray(num_cpus=1)
    err = capfd.readouterr().err
    assert "Exception ignored" not in err, err
    assert "Traceback" not in err, err
    assert sys.unraisablehook is hook
    assert shutdowns == ["shutdown"]


def test_other_unraisable_errors_are_still_reported(
    monkeypatch: pytest.MonkeyPatch, shutdowns: list[str]
) -> None:
    seen: list[type[BaseException] | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_type))

    class Broken:
        def __del__(self) -> None:
            raise ValueError("not an interrupt")

    fake_init(monkeypatch, lambda: Broken() and None)
    start_ray(num_cpus=1)
    assert seen == [ValueError]
    assert shutdowns == []


def test_ctrl_c_then_another_error_is_an_interrupt(
    monkeypatch: pytest.MonkeyPatch, shutdowns: list[str]
) -> None:
    def broken_by_interrupt() -> None:
        swallow_in_except()
        raise RuntimeError("Ray's start-up failed after the lost interrupt")

    fake_init(monkeypatch, broken_by_interrupt)
    with pytest.raises(KeyboardInterrupt) as caught:
        start_ray(num_cpus=1)
    assert isinstance(caught.value.__cause__, RuntimeError)
    assert shutdowns == ["shutdown"]


def test_ctrl_c_raised_through_init_shuts_ray_down(
    monkeypatch: pytest.MonkeyPatch, shutdowns: list[str]
) -> None:
    fake_init(monkeypatch, lambda: signal.raise_signal(signal.SIGINT))
    with pytest.raises(KeyboardInterrupt):
        start_ray(num_cpus=1)
    assert shutdowns == ["shutdown"]


def test_no_signal_no_interrupt(monkeypatch: pytest.MonkeyPatch, shutdowns: list[str]) -> None:
    calls = fake_init(monkeypatch, lambda: None)
    start_ray(num_cpus=1)
    assert calls == [1]
    assert shutdowns == []


def test_ignored_sigint_stays_ignored(
    monkeypatch: pytest.MonkeyPatch, shutdowns: list[str]
) -> None:
    fake_init(monkeypatch, lambda: signal.raise_signal(signal.SIGINT))
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        start_ray(num_cpus=1)  # nohup-style: Ctrl-C was ignored before, and still is
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    assert shutdowns == []


def test_backend_open_raises_the_lost_ctrl_c(
    monkeypatch: pytest.MonkeyPatch, shutdowns: list[str]
) -> None:
    monkeypatch.setattr(ray_backend.ray, "is_initialized", lambda: False)
    fake_init(monkeypatch, swallow_in_except)
    remote: list[Any] = []
    monkeypatch.setattr(ray_backend.ray, "remote", lambda **kw: remote.append(kw))
    b = PlanBuilder().sources("S", {"g": np.arange(10) % 2})
    b.compute("C", size=2, process=lambda inbox, rng: {})
    b.route("S", "C", by=lambda s: s["g"])
    backend = RayBackend()
    with pytest.raises(KeyboardInterrupt):
        backend.open(Job(b.build(), seed=0, block_size=4, shards=2))
    assert remote == []  # no actor was created after the interrupt
    assert shutdowns == ["shutdown"]
    backend.close()  # as the executor does: Ray already shut down, nothing left to do
    assert shutdowns == ["shutdown", "shutdown"]
