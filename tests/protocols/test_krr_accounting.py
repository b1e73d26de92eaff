"""The protocols' statements for shuffled k-RR: fields, targets and soundness by enumeration."""

from __future__ import annotations

import pytest

from crowdhide.protocols import krr_accounting
from crowdhide.protocols.results import privacy_record
from tests.oracles.protocols import krr_histogram_worst_delta


@pytest.mark.parametrize(("n", "k", "eps0"), [(3, 2, 1.0), (4, 3, 2.0), (5, 3, 0.7)])
@pytest.mark.parametrize("delta", [1e-3, 0.05])
def test_krr_privacy_is_a_certificate_of_the_enumerated_histogram(
    n: int, k: int, eps0: float, delta: float
) -> None:
    s = krr_accounting.krr_privacy(eps0=eps0, n=n, k=k, delta=delta, target_epsilon=eps0)
    assert s.kind == "upper"
    assert s.is_certificate
    assert s.epsilon <= eps0  # capped by the local level
    # Soundness: the exact worst case over all datasets of n users, at the certified ε.
    assert krr_histogram_worst_delta(n, k, eps0, s.epsilon) <= delta + 1e-12


def test_krr_privacy_records_source_inputs_and_target() -> None:
    s = krr_accounting.krr_privacy(eps0=1.5, n=1000, k=4, delta=1e-6, target_epsilon=1.0)
    assert s.source.startswith("shuffle accountant: ")
    assert dict(s.inputs) == {"eps0": 1.5, "n": 1000, "k": 4}
    assert s.target is not None
    assert s.target.epsilon == 1.0
    assert s.target.delta == 1e-6
    assert s.meets_target is (s.epsilon <= 1.0 * (1 + 1e-9))
    record = privacy_record(s)
    assert record["target_met"] is s.meets_target
    assert (record["eps0"], record["bound"], record["target_epsilon"]) == (1.5, s.source, 1.0)


def test_a_target_below_the_certificate_is_reported_unmet() -> None:
    s = krr_accounting.krr_privacy(eps0=3.0, n=50, k=2, delta=1e-6, target_epsilon=0.01)
    assert s.is_certificate
    assert s.meets_target is False
    assert privacy_record(s)["target_met"] is False
