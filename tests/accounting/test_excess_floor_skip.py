"""``_krr_fast.binomial_excess`` rounded down computes its floor (the nearest term, for
tails the incomplete beta may have underflowed) only when some tail of the call is
untrusted (issue 32: the Laplace lower bound's members at δ = 1e-6 never need it). The
floor only counts where a tail is untrusted, so the floats must not depend on whether the
call computed it: each entry of a call mixing trusted and untrusted tails (floor computed)
equals the same entry asked alone (floor skipped where its tails are trusted). The check
is shown to catch a floor that leaks into trusted entries."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from crowdhide.accounting.binomial_tails import BETAINC_TRUSTED, binom_sf
from crowdhide.accounting.shuffle import _krr_fast as kf


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    n = rng.integers(20, 5_000, size=120).astype(np.float64)
    sd = np.sqrt(n * 0.3 * 0.7)
    theta = n * 0.3 + sd * rng.uniform(-3.0, 60.0, size=n.size)  # some far beyond the mean
    return np.minimum(theta, n - 1.5), n


def _batch_equals_alone(above: bool) -> bool:
    """Whether one call's entries equal the same entries asked one by one."""
    theta, n = _inputs()
    if not above:
        theta = n - theta  # the lower tails as far out
    batch = kf.binomial_excess(theta, n, 0.3, above=above, upper=False)
    alone = [
        kf.binomial_excess(theta[i : i + 1], n[i : i + 1], 0.3, above=above, upper=False)[0]
        for i in range(n.size)
    ]
    return bool(np.array_equal(batch, np.array(alone)))


def test_the_calls_mix_trusted_and_untrusted_tails() -> None:
    theta, n = _inputs()
    deep = binom_sf(np.floor(theta), n, 0.3) < BETAINC_TRUSTED
    assert deep.any()
    assert (~deep).any()


@pytest.mark.parametrize("above", [True, False])
def test_entries_do_not_depend_on_the_rest_of_the_call(above: bool) -> None:
    assert _batch_equals_alone(above)


def test_the_check_catches_a_floor_on_trusted_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    """A floor applied to every entry (not only the untrusted ones) moves the trusted
    entries of a mixed call but not the same entries asked alone: caught."""
    real = kf._deep_excess

    def leaky(*args: Any, **kwargs: Any) -> np.ndarray:
        out = real(*args, **kwargs)
        floor = kwargs.get("floor")
        return out if floor is None else np.asarray(np.maximum(out, floor + 1e-3))

    monkeypatch.setattr(kf, "_deep_excess", leaky)
    assert not _batch_equals_alone(True)
