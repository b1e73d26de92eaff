"""An observer guessing each user's group from the transcript alone.

Without countermeasures it is always right; with them its success stays within what the
certified ε allows for a uniform prior over T groups: e^ε/(e^ε+T−1) + δ (a valid bound for
any (ε, δ)-DP pattern: sum the DP inequalities over the T−1 alternatives).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.backends import execute
from crowdhide.plans import PlanBuilder, protect
from crowdhide.plans.certify import LocalBoundAccountant, certify

S, T = 20_000, 8


def _plan(true: np.ndarray):  # type: ignore[no-untyped-def]
    b = PlanBuilder().sources("S", {"t": true})
    b.compute("C", size=T, process=lambda inbox, rng: {})
    b.route("S", "C", by=lambda s: s["t"])
    return b.build()


def _bayes_bound(eps: float, delta: float) -> float:
    return 1.0 / (1.0 + (T - 1) * math.exp(-eps)) + delta


def _guess_from_direct_messages(transcript) -> np.ndarray:  # type: ignore[no-untyped-def]
    src, dst = transcript.between("S", "C")
    guess = np.empty(S, dtype=np.int64)
    guess[src] = dst
    return guess


def test_unprotected_traffic_reveals_every_group() -> None:
    true = np.random.default_rng(0).integers(0, T, size=S)
    run = execute(_plan(true), rng=0)
    assert np.mean(_guess_from_direct_messages(run.transcript) == true) == 1.0


@pytest.mark.parametrize("sigma", [0.3, 0.6])
def test_sampling_keeps_the_attack_within_the_certified_bound(sigma: float) -> None:
    true = np.random.default_rng(1).integers(0, T, size=S)
    plan = protect(_plan(true), sigma=sigma)
    cert = certify(plan, delta=0.0, accountant=LocalBoundAccountant()).privacy
    run = execute(plan, rng=1)
    success = np.mean(_guess_from_direct_messages(run.transcript) == true)
    bound = _bayes_bound(cert.epsilon, cert.delta)
    se = math.sqrt(bound * (1 - bound) / S)
    assert success <= bound + 4 * se
    # The attack is optimal here (Theorem 2 is tight), so a certificate claiming half the
    # ε would be caught: the test can fail.
    assert success > _bayes_bound(cert.epsilon / 2, 0.0) + 4 * se


@pytest.mark.parametrize("accountant", ["local-bound", "scrambler"])
def test_scramblers_keep_an_informed_attack_within_the_certified_bound(accountant: str) -> None:
    # The observer knows every other user's group and sees each scrambler's output counts.
    if accountant == "scrambler":
        from crowdhide.plans.certify import ScramblerAccountant

        acct: object = ScramblerAccountant()
    else:
        acct = LocalBoundAccountant()
    n, d, sigma = 20, 10, 0.3
    true = np.random.default_rng(2).integers(0, T, size=S)
    plan = protect(_plan(true), sigma=sigma, per_scrambler=n, dummies=d)
    cert = certify(plan, delta=1e-4, accountant=acct).privacy  # type: ignore[arg-type]
    run = execute(plan, rng=2)
    src, dst = run.transcript.between("S->C#scramblers", "C")
    observed = np.zeros((S // n, T))
    np.add.at(observed, (src, dst), 1.0)
    members = np.zeros((S // n, T))
    np.add.at(members, (np.arange(S) // n, true), 1.0)
    others = members[np.arange(S) // n] - np.eye(T)[true]
    residual = observed[np.arange(S) // n] - others
    noise = np.random.default_rng(3).random((S, T)) * 1e-3  # random tie-breaking
    guess = np.argmax(residual + noise, axis=1)
    success = np.mean(guess == true)
    bound = _bayes_bound(cert.epsilon, cert.delta)
    assert success <= bound + 4 * math.sqrt(bound * (1 - bound) / S)
    assert success > 1.0 / T  # the attack does learn something
