"""Test configuration: the ``slow`` tier runs only with ``--slow`` (as ``.ci/run`` does);
under pytest-xdist the timed tests run on one worker at normal priority (``tests/_xdist.py``)."""

from __future__ import annotations

import signal
from collections.abc import Generator

import pytest

from tests import _xdist


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slow", action="store_true", default=False, help="also run tests marked slow"
    )


def pytest_configure(config: pytest.Config) -> None:
    # The suite tests what Ctrl-C does (Ray start-up, tls runs, deploy scripts). A runner
    # started as a background job without job control (`( cmd & )`, nohup) hands every
    # process SIGINT *ignored*, an ignored signal stays ignored across exec, and Python then
    # keeps it ignored: those tests would fail for the runner's reason, not the code's.
    # Python's own handler here means children (xdist workers, spawned CLIs) start with
    # SIGINT at its default again.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_xdist.XdistPlugin(), "crowdhide-xdist")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="slow tier: run with --slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def pytest_runtest_setup(item: pytest.Item) -> None:
    _xdist.check_marks(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    _xdist.set_priority(item)
    return (yield)
