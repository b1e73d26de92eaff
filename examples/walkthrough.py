"""Run, hide and certify through crowdhide's top level — a walkthrough you can execute.

    python examples/walkthrough.py            (from the repository, with src/ on PYTHONPATH)

1. RUN     the paper's diabetes query as a plan of 20,000 user devices. Without
           countermeasures the number of messages each compute node receives is the
           histogram of the data — an observer of the network learns it.
2. HIDE    the plan's countermeasures (target sampling, scramblers, dummy messages) flatten
           that traffic; the result becomes an estimate with 95 % intervals.
3. CERTIFY how private that traffic is (ε, δ for the whole plan), what a single scrambler
           layer and a shuffled randomized-response survey give, and what two runs on the
           same people cost together.
Everything comes from ``import crowdhide``. Each step asserts what it shows, so the test
suite runs this file as a test.
"""

from __future__ import annotations

import math
import statistics

import crowdhide


def _spread(counts: list[int]) -> float:
    """Coefficient of variation: how unevenly the messages fall on the compute nodes."""
    return statistics.pstdev(counts) / statistics.fmean(counts)


def _up(value: float) -> str:
    """ε to 3 decimals, rounded up: a printed privacy number is a promise."""
    return f"{math.ceil(value * 1000) / 1000:.3f}"


def main() -> None:
    """Run the three steps and print what each shows."""
    # --- 1. RUN ------------------------------------------------------------------------
    plan = crowdhide.load_plan("example:diabetes")  # 20,000 devices, whole plan ε = 2
    report = crowdhide.run_plan(plan)  # in memory: pass out_dir to keep report.html
    by_age = report.answer.traffic[0]  # the route to the compute nodes of age_range
    exact = [r for r in report.answer.exact if r["grouping_set"] == 0]
    print("1. RUN", repr(plan))
    print("   messages per compute node without countermeasures:", by_age["unprotected"])
    print("   exact counts per age range:", [int(r["count(*)"]) for r in exact])
    # The observer's view *is* the histogram: the leak the countermeasures remove.
    assert sorted(by_age["unprotected"]) == sorted(int(r["count(*)"]) for r in exact)

    # --- 2. HIDE -----------------------------------------------------------------------
    estimates = [r for r in report.answer.estimates if r["grouping_set"] == 0]
    print("2. HIDE with the planner's countermeasures per route:")
    for route, choice in report.plan.countermeasures.items():
        print(f"   {route}: sampling σ = {choice.sigma:g}, {choice.d} dummies per scrambler")
    print("   messages per compute node with countermeasures:", by_age["protected"])
    inside = 0
    for est, ref in zip(estimates, exact, strict=True):
        low, high = est["count(*) low"], est["count(*) high"]
        inside += int(low <= ref["count(*)"] <= high)
        print(
            f"   {est['age_range']:>6}: count ≈ {est['count(*)']:8.0f} "
            f"[{low:.0f}, {high:.0f}]  exact {ref['count(*)']:.0f}"
        )
    assert _spread(by_age["protected"]) < _spread(by_age["unprotected"])
    assert inside >= len(estimates) - 2  # 95 % intervals: at most a couple of misses

    # --- 3. CERTIFY --------------------------------------------------------------------
    cert = report.privacy
    print("3. CERTIFY")
    print(f"   the traffic of this run is ({_up(cert.epsilon)}, {cert.delta:g})-DP per user")
    print("  ", repr(cert))
    one = crowdhide.scrambler_epsilon(targets=8, sigma=0.2, n=200, dummies=100, delta=1e-4)
    print(f"   one scrambler layer alone: ε = {_up(one.epsilon)} ({one.source})")
    survey = crowdhide.shuffle_epsilon(eps0=2.0, n=10_000, delta=1e-6, k=4)
    print(f"   10,000 shuffled 4-ary RR answers at ε0 = 2: ε = {_up(survey.epsilon)}")
    twice = crowdhide.compose([cert, cert], delta=1e-3)
    print(f"   two such runs on the same people: ε = {_up(twice.epsilon)} ({twice.source})")
    assert math.isfinite(cert.epsilon)
    assert cert.meets_target  # the plan's [privacy] target (ε = 2, δ = 1e-4)
    assert survey.epsilon < 2.0  # shuffling amplifies
    assert twice.epsilon <= 2 * cert.epsilon + 1e-9


if __name__ == "__main__":
    main()
