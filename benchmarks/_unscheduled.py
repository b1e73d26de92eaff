"""``python benchmarks/_unscheduled.py ARGS``: ``crowdhide ARGS`` with the node-daemon
coordinator's rounds unscheduled (a benchmark hook, ``bench_deploy.py --unscheduled``).

Each round then closes as soon as every daemon has answered, so a run measures the runtime's
work rather than a schedule sized for the worst case: the same hook as ``bench_net.py
--million`` on spawned hosts. It is not a deployment mode: without fixed rounds the wire
shows how long each round's work took. The frame-cost model (and its outlier refusal) is
skipped since no round length is derived; waits are bounded by ``DEADLINE``.
"""

from __future__ import annotations

import sys
from typing import Any

from crowdhide.backends.tls.coordinator import Coordinator
from crowdhide.cli import entry

#: Seconds the coordinator waits for the daemons' answers in one round.
DEADLINE = 3600.0

opened = Coordinator.open


def open_unscheduled(self: Coordinator, job: Any) -> None:
    self._round_arg = 1.0  # as if given: the daemons are not asked to measure frame costs
    opened(self, job)
    self.ledger.rounds = None  # unscheduled: rounds close as the daemons answer
    self.round_seconds = None
    self.round_basis = "unscheduled: a round closes once every daemon answered (benchmark hook)"
    self.deadline = DEADLINE


Coordinator.open = open_unscheduled  # type: ignore[method-assign]

if __name__ == "__main__":
    sys.argv[0] = "crowdhide"
    entry()
