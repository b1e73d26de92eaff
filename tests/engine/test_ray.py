"""Ray backend with 2 shards = local backend (1 and 3 shards): same results, utility,
certificate inputs, per-route counts and per-round per-target transcript counts.

Ray runs in a subprocess inside a loopback-only network namespace created here
(``unshare -n``, then ``ip link set lo up``); inside it, ``ss`` lists every socket while Ray
is up, and every local/peer address must be loopback; after ``ray.shutdown()`` no process
that held a socket may be left.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.engine._ray_netns import LOOKUP
from tests.engine._workloads import WORKLOADS

pytestmark = pytest.mark.ray
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def netns_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pytest.importorskip("ray")
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("ss") is None:
        pytest.skip("needs root, unshare (util-linux) and ss (iproute2) for a network namespace")
    out = tmp_path_factory.mktemp("ray") / "run.json"
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{ROOT}")
    inner = f"ip link set lo up && exec {sys.executable} -m tests.engine._ray_netns {out}"
    done = subprocess.run(
        ["unshare", "-n", "sh", "-c", inner],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    result["stderr"] = done.stderr
    return result


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_ray_two_shards_equal_local_one_and_three_shards(
    netns_run: dict[str, Any], name: str, tmp_path: Path
) -> None:
    ray = netns_run["results"][name]
    for shards in (1, 3):
        local = json.loads(json.dumps(WORKLOADS[name](tmp_path, shards=shards)))
        assert ray == local


def test_ray_used_loopback_only_and_left_nothing_behind(netns_run: dict[str, Any]) -> None:
    interfaces = [line.split(":")[1].strip() for line in netns_run["links"].splitlines()]
    assert interfaces == ["lo"]
    assert netns_run["sockets"], "ss saw no socket: the census is not looking at Ray"
    assert any("raylet" in s["process"] or "gcs" in s["process"] for s in netns_run["sockets"])
    assert netns_run["foreign"] == []
    assert netns_run["left_behind"] == []


def test_ray_took_the_loopback_address_without_a_route_lookup(netns_run: dict[str, Any]) -> None:
    """Single-node mode: no look-up of the route to 8.8.8.8:53 (which, with no route, Ray
    logged from the driver and its runtime-env agent), node address 127.0.0.1."""
    assert LOOKUP not in netns_run["stderr"], netns_run["stderr"][-2000:]
    assert netns_run["route_lookups"] == []
    assert netns_run["node_ip"] == "127.0.0.1"


def test_start_ray_never_asks_for_the_outbound_address(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without starting Ray: during ``ray.init`` (faked) the node address 127.0.0.1 stays
    itself and the outbound look-up is never made (it would give the machine's external
    address, and Ray listened on every interface); the caller's environment is back after."""
    pytest.importorskip("ray")
    import ray
    from ray._private import ray_constants, services

    from crowdhide.backends import ray as backend

    def lookup(*args: object) -> str:
        raise AssertionError("Ray looked up the outbound route (8.8.8.8:53)")

    switch = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # Ray's single-node switch, written out
    seen: list[str | None] = []

    def init(**kwargs: Any) -> None:
        seen.append(services.resolve_ip_for_localhost(kwargs["_node_ip_address"]))
        seen.append(os.environ.get(switch))

    monkeypatch.setattr(services, "node_ip_address_from_perspective", lookup)
    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setenv(switch, "1")
    flag = ray_constants.ENABLE_RAY_CLUSTER
    backend.start_ray(num_cpus=1)
    assert seen == ["127.0.0.1", "0"]
    assert os.environ[switch] == "1"
    assert ray_constants.ENABLE_RAY_CLUSTER is flag
