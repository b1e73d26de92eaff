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
