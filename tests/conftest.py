"""Test configuration: the ``slow`` tier runs only with ``--slow`` (as ``.ci/run`` does);
under pytest-xdist the timed tests run on one worker at normal priority (``tests/_xdist.py``)."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from tests import _xdist


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--slow", action="store_true", default=False, help="also run tests marked slow"
    )


def pytest_configure(config: pytest.Config) -> None:
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
