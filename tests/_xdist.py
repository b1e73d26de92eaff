"""How the suite shares the machine under pytest-xdist (``-n 3 --dist loadfile``, README).

The ``net`` tests (daemons on real round schedules: a round's work that does not fit is an
overrun) and the Ray tests (a real cluster, signal timing) are wall-clock bound: they mostly
wait. Everything else is CPU-bound with no clock in its verdict. So:

* every *timed* file (:data:`TIMED_PATHS`) is one unit of work, :data:`TIMED`: one worker
  runs its tests one after another, as a plain ``pytest`` run does, so no two daemon sets,
  Ray clusters or signal tests ever overlap (Ray's ``ray.init`` may join a cluster another
  process started); every other file is a unit of its own, as in xdist's ``loadfile``, so
  a module-scoped fixture (a fuzz corpus, a report run) is set up once;
* the timed unit is handed out first (:class:`TimedFirstScheduling`): it is the longest,
  so the run cannot end sooner than it does;
* a worker runs timed tests at the niceness it started with and the others
  :data:`CPU_NICE` higher (:func:`set_priority`): the daemons of the timed test then get
  ~90 % of a core the CPU-bound workers contend for (nice 10 weighs 110 against 1024), and
  the minimum-versions leg of ``.ci/run`` (nice 19, weight 15) still yields to both.
  Lowering the niceness back needs root, so only root switches (the netns tests need root
  anyway); as another user every test runs at the starting niceness.

The scheduler runs in xdist's controller, which sees node ids only, not marks: so the timed
files are named by path, and :func:`check_marks` fails a ``net`` or ``ray`` test outside
them. (xdist's own ``xdist_group`` marks cannot carry this: xdist 3.8
renames ``item._nodeid``, which pytest 9.2 no longer reads, so the groups are silently lost.)
"""

from __future__ import annotations

import os
from typing import Any

import pytest

#: The unit of work of the timed tests.
TIMED = "timed"
#: Files whose tests are timed (path prefixes, relative to the rootdir): every ``net`` and
#: ``ray`` test (:func:`check_marks`), and the CLI fuzz that starts tls hosts and Ray.
TIMED_PATHS = ("tests/net/", "tests/engine/test_ray", "tests/cli/test_plan_data_fuzz.py")
#: How much nicer than its starting niceness a worker runs a test that is not timed.
CPU_NICE = 10
#: The niceness a worker started with (read at its first test).
_BASE: list[int] = []


def timed(nodeid: str) -> bool:
    """Whether the test ``nodeid`` is in a timed file (its verdict may depend on the clock)."""
    return nodeid.startswith(TIMED_PATHS)


def check_marks(item: pytest.Item) -> None:
    """Fail a ``net`` or ``ray`` test outside :data:`TIMED_PATHS` (under xdist it would run
    alongside the timed tests)."""
    marked = item.get_closest_marker("net") or item.get_closest_marker("ray")
    if marked and not timed(item.nodeid):
        pytest.fail(
            f"a {marked.name} test outside tests/_xdist.py's TIMED_PATHS {TIMED_PATHS}: "
            "move it or add its file there",
            pytrace=False,
        )


def set_priority(item: pytest.Item) -> None:
    """On an xdist worker run by root: the starting niceness for a timed test, else
    :data:`CPU_NICE` more (at most 19)."""
    if "PYTEST_XDIST_WORKER" not in os.environ or os.geteuid() != 0:
        return
    if not _BASE:
        _BASE.append(os.getpriority(os.PRIO_PROCESS, 0))
    target = _BASE[0] if timed(item.nodeid) else min(_BASE[0] + CPU_NICE, 19)
    if os.getpriority(os.PRIO_PROCESS, 0) != target:
        os.setpriority(os.PRIO_PROCESS, 0, target)


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """A :class:`TimedFirstScheduling` for ``--dist loadfile``; ``None`` (xdist's own
    choice) for any other mode."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class TimedFirstScheduling(LoadFileScheduling):  # type: ignore[misc]
        """xdist's loadfile with every timed file in one unit, handed out before any other.

        xdist orders the units by their number of tests; the timed one is not always the
        largest, and a worker's second unit waits for its first, so it could start late.
        """

        def _split_scope(self, nodeid: str) -> str:
            return TIMED if timed(nodeid) else str(super()._split_scope(nodeid))

        def _assign_work_unit(self, node: Any) -> None:
            if TIMED in self.workqueue:
                self.workqueue.move_to_end(TIMED, last=False)
            super()._assign_work_unit(node)

    return TimedFirstScheduling(config, log)


class XdistPlugin:
    """The hook xdist asks for its scheduler (registered only when xdist is loaded: pytest
    refuses a hook implementation of an unknown hook)."""

    @pytest.hookimpl
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        return make_scheduler(config, log)
