"""Rerun a net test whose scheduled run was refused because the machine was loaded.

A tls run keeps a fixed round schedule: work that does not fit its round is refused as a
ROUND OVERRUN (exit 4), and a daemon whose frame costs, measured during a load spike, are
far above its peers' is refused as an outlier. Both are correct refusals by the product,
but on a loaded CI machine (2 cores, load 10-16) they fail tests that check something else.

A failed test is run again (at most :data:`ATTEMPTS` times in all) only if BOTH hold:

* its failure is one of those refusals, proven by the error itself: a
  :class:`~crowdhide.errors.RoundOverrunError`, the coordinator's outlier refusal
  (:data:`OUTLIER`), or a line of the failure's message that is the CLI's line of either
  (a test's ``assert code == 0, err``) or a child's traceback's last line of either (a
  fixture's ``RuntimeError(f"coordinator failed: {stderr}")``);
* the machine is loaded right after it (the test's own processes are stopped by then): a
  :data:`PROBE_SECONDS` busy loop of this process gets less than :data:`BUSY_SHARE` of a CPU.

Any other failure, and an overrun on an idle machine (a real product slowdown), is
reported at once; a test that still overruns on its last attempt fails with that overrun.

The refusal may also come from a fixture's setup: a module fixture that runs the daemons
once for all of its module's tests (test_daemon_rounds, test_daemon_audit,
test_wire_capture). Pytest keeps a failed fixture's exception and raises it again to every
later request, so a rerun first drops it (:func:`_rearm_failed_fixtures`); one fixture is
set up at most :data:`ATTEMPTS` times in all, however many of its tests fail with its
refusal (the later ones fail at once with the kept one).
"""

from __future__ import annotations

import re
import time
from collections.abc import Generator
from types import SimpleNamespace

import pytest
from _pytest.fixtures import FixtureDef
from _pytest.runner import runtestprotocol

from crowdhide.errors import NodeFailureError, RoundOverrunError

#: Runs of a test in all (the first and at most two reruns).
ATTEMPTS = 3
#: Length of the busy loop that measures the CPU share this process gets.
PROBE_SECONDS = 0.3
#: Below this share of one CPU the machine is loaded: more runnable tasks than cores
#: (an idle 2-core machine gives a single busy loop 0.95-1.0 of a CPU).
BUSY_SHARE = 0.75
#: The coordinator's refusal of a daemon whose measured frame costs stay an outlier.
OUTLIER = re.compile(r"measured frame costs \S+x the other daemons' median")
#: The CLI's line of an overrun (tests of ``crowdhide run`` see the exit code and stderr).
CLI_OVERRUN = "crowdhide: ROUND OVERRUN: "
#: The CLI's line of a node failure (an outlier refusal is one, :data:`OUTLIER`).
CLI_NODE_FAILURE = "crowdhide: NODE FAILURE: "
#: The last line of a child's traceback of an overrun or a node failure (uncaught there).
RAISED_OVERRUN = f"{RoundOverrunError.__module__}.{RoundOverrunError.__qualname__}: "
RAISED_NODE_FAILURE = f"{NodeFailureError.__module__}.{NodeFailureError.__qualname__}: "


def cpu_share(seconds: float = PROBE_SECONDS) -> float:
    """The share of one CPU a busy loop of this process gets over ``seconds`` of wall time."""
    wall, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - wall < seconds:
        pass
    return (time.process_time() - cpu) / (time.perf_counter() - wall)


#: The exception of a test's setup or call phase (its type tells an overrun from its text).
RAISED = pytest.StashKey[BaseException | None]()
#: The fixtures whose setup raised in a test's setup phase (seen before its teardown, which
#: forgets them when the test is the last of their module).
FAILED_FIXTURES = pytest.StashKey[list[FixtureDef[object]]]()
#: Per fixture whose setup raised a refusal: how many reruns it was given.
REARMED = pytest.StashKey[dict[FixtureDef[object], int]]()


def load_refusal(item: pytest.Item, report: pytest.TestReport) -> str | None:
    """The refusal a failed setup or call report shows (an overrun or outlier), else
    ``None``."""
    if report.when not in ("setup", "call") or not report.failed:
        return None
    raised = item.stash.get(RAISED, None)
    if isinstance(raised, RoundOverrunError):
        return f"RoundOverrunError: {raised}"
    if isinstance(raised, NodeFailureError):
        return f"NodeFailureError: {raised}" if OUTLIER.search(str(raised)) else None
    # A CLI run's stderr as the failure's message (``assert code == 0, err``; pytest
    # indents its lines): a line that is the CLI's, not one quoting it.
    lines = [line.lstrip() for line in str(raised).splitlines()] if raised is not None else []
    return next((line for line in lines if _cli_refusal(line)), None)


def _cli_refusal(line: str) -> bool:
    """Whether ``line`` is the CLI's line, or a child's traceback's last line, of an overrun
    or of an outlier refusal."""
    if line.startswith((CLI_OVERRUN, RAISED_OVERRUN)):
        return True
    failure = line.startswith((CLI_NODE_FAILURE, RAISED_NODE_FAILURE))
    return failure and OUTLIER.search(line) is not None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep the exception of the setup or call phase (for :func:`load_refusal`)."""
    report = yield
    if call.when in ("setup", "call") and call.excinfo is not None:
        item.stash[RAISED] = call.excinfo.value
    if call.when == "setup" and call.excinfo is not None:
        item.stash[FAILED_FIXTURES] = _failed_fixtures(item)
    return report


def _failed_fixtures(item: pytest.Item) -> list[FixtureDef[object]]:
    """The fixtures of ``item`` still holding the exception their setup raised (a fixture
    wider than the test: its own are torn down with it)."""
    info = getattr(item, "_fixtureinfo", None)
    defs = [] if info is None else [d for ds in info.name2fixturedefs.values() for d in ds]
    return [d for d in defs if d.cached_result is not None and d.cached_result[2] is not None]


def _rearm_failed_fixtures(item: pytest.Item) -> bool:
    """Drop the kept exceptions of the fixtures that failed ``item``'s setup so that a rerun
    sets them up again; ``False`` (no rerun) when one of them has had its :data:`ATTEMPTS`
    runs. A fixture its module's teardown already forgot is set up again anyway."""
    rearmed = item.config.stash.setdefault(REARMED, {})
    failed = item.stash.get(FAILED_FIXTURES, [])
    if any(rearmed.get(d, 0) >= ATTEMPTS - 1 for d in failed):
        return False
    for fixture in failed:
        rearmed[fixture] = rearmed.get(fixture, 0) + 1
        if fixture.cached_result is None:
            continue
        # finish() runs its finalizers and forgets the result; of the request it reads only
        # ``node`` (the item's own request is gone once the item is torn down)
        fixture.finish(SimpleNamespace(node=item))  # type: ignore[arg-type]
    return True


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool:
    """Run ``item`` (setup, call, teardown) up to :data:`ATTEMPTS` times while it fails
    with a refusal due to load; log the last run only, with the earlier refusals."""
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    earlier: list[str] = []
    for attempt in range(1, ATTEMPTS + 1):
        item.stash[RAISED], item.stash[FAILED_FIXTURES] = None, []
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        refusal = next((r for r in (load_refusal(item, x) for x in reports) if r), None)
        if refusal is None or attempt == ATTEMPTS:
            break
        share = cpu_share()
        if share >= BUSY_SHARE:
            break  # an idle machine: the overrun is the product's, report it
        if not _rearm_failed_fixtures(item):
            break  # its fixture has had its runs (an earlier test used them)
        earlier.append(
            f"attempt {attempt} refused under load (a busy loop got {share:.2f} of a CPU), "
            f"run again: {refusal[:400]}"
        )
        terminal = item.config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            terminal.write_line(f"{item.nodeid}: {earlier[-1]}")
    # The call's report, or the setup's when a fixture failed (the call did not run).
    shown = next((r for r in reports if r.when == "call"), reports[0])
    for report in reports:
        if earlier and report is shown:
            report.sections.append(("load reruns", "\n".join(earlier)))
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
