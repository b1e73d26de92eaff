"""A node program that fails is a typed node failure naming the node and its address.

Both coordinators of the tls backend — spawned hosts (:class:`TlsBackend`) and node
daemons (:class:`Coordinator`) — raise :class:`NodeProgramError` (a
:class:`~crowdhide.errors.NodeFailureError`, still a ``RuntimeError``), which the CLI prints
as one ``NODE FAILURE`` line with exit code 5 instead of an internal error with a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from crowdhide.backends import execute
from crowdhide.backends.tls.backend import TlsBackend
from crowdhide.backends.tls.coordinator import Coordinator
from crowdhide.backends.tls.node_rows import write_rows
from crowdhide.backends.tls.rounds import LinkFailureError, NodeProgramError, program_failed
from crowdhide.cli import _handle
from crowdhide.cli._values import EXIT_NODE_FAILURE
from crowdhide.engine.library import named
from crowdhide.engine.plan import ExecutionPlan, PlanBuilder
from crowdhide.errors import NodeFailureError
from tests.net._deploy import Daemons, enrol, free_ports
from tests.net.conftest import assert_all_gone

pytestmark = pytest.mark.net

ROWS, BLOCK = 40, 20


def failing_plan() -> ExecutionPlan:
    """A plan whose result program asks for a route that does not exist: it fails on the
    node that runs it, after the sources' round."""
    b = PlanBuilder()
    b.sources("S", {"g": np.zeros(ROWS, dtype=np.int64)})
    b.result("R", process=named("compute.count", route="S->Nope", size=1))
    b.route("S", "R", by=named("route.column", column="g"))
    return b.build()


def cli_line(exc: BaseException, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    assert isinstance(exc, Exception)
    code = _handle(exc)
    err = capsys.readouterr().err
    return code, err


def test_program_failed_is_one_typed_line() -> None:
    exc = program_failed(
        "C", {2: "ValueError: bad\n  value", 0: "x" * 1000}, lambda n: f"node {n} (10.0.0.{n}:7)"
    )
    assert isinstance(exc, NodeFailureError)
    assert isinstance(exc, RuntimeError)
    text = str(exc)
    assert "\n" not in text
    assert text.startswith("the program of group 'C' failed on node 0 (10.0.0.0:7): xxx")
    assert text.endswith("...; node 2 (10.0.0.2:7): ValueError: bad value")
    assert len(text) <= 400
    assert issubclass(LinkFailureError, NodeFailureError)
    assert issubclass(LinkFailureError, ConnectionError)


def test_spawned_hosts_name_the_failed_host(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(NodeProgramError) as caught:
        execute(failing_plan(), rng=1, backend=TlsBackend(hosts=2), block_size=BLOCK)
    text = str(caught.value)
    assert "the program of group 'R' failed on host " in text
    assert "(127.0.0.1): KeyError: " in text
    assert "S->Nope" in text
    code, err = cli_line(caught.value, capsys)
    assert code == EXIT_NODE_FAILURE == 5
    assert err.startswith("crowdhide: NODE FAILURE: the program of group 'R' failed on host ")
    assert err.count("\n") == 1
    assert "Traceback" not in err
    assert "internal error" not in err


@pytest.fixture
def two_daemons(tmp_path: Path) -> Iterator[tuple[Coordinator, list[str]]]:
    ports = free_ports(2)
    addresses = [f"127.0.0.1:{p}" for p in ports]
    dep = enrol(tmp_path, addresses)
    rows = [
        write_rows(
            tmp_path / f"rows-{i}.npz",
            first=i * BLOCK,
            columns={"S": {"g": np.zeros(BLOCK, dtype=np.int64)}},
        )
        for i in range(2)
    ]
    daemons = Daemons(dep, rows)
    try:
        coordinator = Coordinator(
            directory=dep.directory, ca=dep.ca, state=dep.coordinator, round_seconds=2.0
        )
        yield coordinator, addresses
    finally:
        pids = daemons.pids
        daemons.terminate()
        daemons.close()
        assert_all_gone(pids, ports)


def test_daemons_name_the_failed_node_and_address(
    two_daemons: tuple[Coordinator, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    coordinator, addresses = two_daemons
    with pytest.raises(NodeProgramError) as caught:
        execute(failing_plan(), rng=1, backend=coordinator, block_size=BLOCK)
    text = str(caught.value)
    named_nodes = [i for i, a in enumerate(addresses) if f"node {i} ({a}): KeyError: " in text]
    assert len(named_nodes) == 1, text  # the one node that runs the result block
    code, err = cli_line(caught.value, capsys)
    assert code == 5
    assert err.startswith("crowdhide: NODE FAILURE: the program of group 'R' failed on node ")
    assert err.count("\n") == 1
    assert "Traceback" not in err
