"""The traffic-analysis attack on the captured pcap of node daemons, next to the certificate.

The diabetes job (``examples/diabetes.toml`` on 300 users) over three daemons in network
namespaces per data set, on two neighbouring data sets at once, 20 captured runs each with
the planner's countermeasures and fixed-length rounds, and 8 without any
(:mod:`tests.net._daemon_audit`). The observer's scores —
frames on the links into the two candidate targets' daemons, and the mean round period —
are audited (held-out threshold, Clopper–Pearson at 95 %).

* The capture is read right: every run's frames per link between daemons equal what the
  coordinator counted delivered on it.
* Without countermeasures the link score tells the data sets apart on every held-out run
  (4 per data set: the contrast only shows that the attack works, and frame counts without
  countermeasures are a deterministic function of the data).
* With them, the empirical lower bound on ε stays within the certified ε, and the held-out
  accuracy within what (ε, δ)-DP allows a test, e^ε/(1 + e^ε) + δ (0.898 for the
  certificate's ε = 2.17). 20 held-out runs cannot lift the lower bound above ≈ 1 even for
  a perfect attack, so the accuracy check is the one that can fail here: the unprotected job
  breaks it (1.0), while a protected job whose true accuracy were 0.6 would reach 0.9 on 20
  runs with probability ≈ 10⁻⁴ (binomial tail).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from tests.net._daemon_audit import _audit, run_audit
from tests.net.netns import available, leftovers

pytestmark = [pytest.mark.net, pytest.mark.slow]

RUNS = 20
#: Runs per data set without countermeasures (the contrast only has to show the attack works).
CONTRAST_RUNS = 8


@pytest.fixture(scope="module")
def audit(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    why = available()
    if why is not None:
        pytest.skip(why)
    result = run_audit(tmp_path_factory.mktemp("audit"), runs=RUNS, contrast_runs=CONTRAST_RUNS)
    assert leftovers(result["prefix"]) == []
    return result


def _bayes(epsilon: float, delta: float) -> float:
    """Largest balanced accuracy of a test between neighbours under (ε, δ)-DP."""
    return math.exp(epsilon) / (1.0 + math.exp(epsilon)) + delta


@pytest.mark.parametrize("job", ["protected", "unprotected"])
def test_the_capture_shows_what_the_coordinator_counted(audit: dict[str, Any], job: str) -> None:
    assert audit[job]["lost"] == 0
    assert audit[job]["wire_mismatch"] == []


def test_without_countermeasures_the_wire_tells_the_neighbours_apart(
    audit: dict[str, Any],
) -> None:
    eps, delta = audit["certificate"]
    links = audit["unprotected"]["links"]
    assert audit["unprotected"]["runs"] == CONTRAST_RUNS
    assert links["accuracy"] == 1.0
    assert links["accuracy"] > _bayes(eps, delta)  # what the protected job must not do


@pytest.mark.parametrize("score", ["links", "timing"])
def test_with_countermeasures_the_audit_stays_within_the_certificate(
    audit: dict[str, Any], score: str
) -> None:
    eps, delta = audit["certificate"]
    found = audit["protected"][score]
    assert found["epsilon_lower"] <= eps
    assert found["accuracy"] <= _bayes(eps, delta)


def test_the_held_out_contrast_can_fail() -> None:
    """The few-run accuracy of the contrast scores held-out runs only: overlapping scores
    are not called perfect, separated ones are (either side)."""
    far = _audit(np.array([5.0, 6, 5, 6, 5, 6, 5, 6]), np.zeros(8), delta=1e-6)
    assert far == {"epsilon_lower": None, "accuracy": 1.0}
    flipped = _audit(np.zeros(8), np.array([5.0, 6, 5, 6, 5, 6, 5, 6]), delta=1e-6)
    assert flipped["accuracy"] == 1.0
    mixed = _audit(
        np.array([1.0, 0, 1, 0, 0, 1, 0, 1]), np.array([0.0, 1, 0, 1, 1, 0, 1, 0]), delta=0
    )
    assert mixed["accuracy"] < 1.0
