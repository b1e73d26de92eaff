"""Issue #28: Ctrl-C during a Ray run is one line, exit 130, and leaves no Ray process.

Real Ray, in a loopback-only network namespace and a PID namespace of its own (so the
census sees only this run's processes, and everything left dies with the namespace).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.ray
ROOT = Path(__file__).resolve().parents[2]


def test_ctrl_c_under_ray_leaves_no_process_and_no_traceback(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare (util-linux) for network and PID namespaces")
    out = tmp_path / "sigint.json"
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{ROOT}")
    inner = f"ip link set lo up && exec {sys.executable} -m tests.engine._ray_sigint {out}"
    done = subprocess.run(
        ["unshare", "-n", "-p", "-f", "--mount-proc", "sh", "-c", inner],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["interrupted"], "the run ended before Ray's workers were seen"
    assert result["left"] == []
    assert result["code"] == 130, result["stderr"][-3000:]
    assert "Traceback" not in result["stderr"]
    assert "crowdhide: interrupted (Ctrl-C)" in result["stderr"]
