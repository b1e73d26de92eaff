"""Run, hide and certify through crowdhide's Python API — a walkthrough you can execute.

    python examples/walkthrough.py            (from the repository, with src/ on PYTHONPATH)

1. RUN     the paper's diabetes query as a plan of 20,000 user devices, unprotected: the
           result is exact, but the number of messages each compute node receives is the
           histogram of the data — an observer of the network learns it.
2. HIDE    the same plan with target sampling, scramblers and dummy messages: the traffic
           flattens; the result becomes an estimate with 95 % intervals.
3. CERTIFY how private that traffic is (ε, δ per data path), what a single scrambler layer
           and a shuffled randomized-response survey give, and what two runs on the same
           people cost together.
Each step asserts what it shows, so the test suite runs this file as a test.
"""

from __future__ import annotations

import numpy as np

from crowdhide.accounting import PrivacyStatement
from crowdhide.accounting.ledger import spent
from crowdhide.accounting.scrambler import scrambler_epsilon
from crowdhide.accounting.shuffle import shuffle_epsilon
from crowdhide.backends import execute
from crowdhide.plans import protect
from crowdhide.plans.aggregate import AggregateQuery, aggregate_plan, exact_answer
from crowdhide.plans.certify import certify
from crowdhide.plans.data import synth_diabetes
from crowdhide.plans.estimates import estimate_rows, inclusion_probabilities
from crowdhide.plans.traffic import traffic_per_node

SQL = "SELECT age_range, COUNT(*), AVG(insulin) FROM D GROUP BY age_range"


def main() -> None:
    """Run the three steps and print what each shows."""
    # --- 1. RUN ------------------------------------------------------------------------
    table = synth_diabetes(rows=20_000, rng=7)  # one tuple per user device
    query = AggregateQuery.from_sql(SQL)
    setup = aggregate_plan(table, query, compute_nodes=8)
    plain = execute(setup.plan, rng=0)
    exact = exact_answer(table, query)
    (seen,) = traffic_per_node(setup.plan, plain.transcript, setup.routes)
    print("1. RUN (unprotected)")
    print("   messages per compute node:", seen["protected"])
    print("   exact counts per age range:", [int(r["count(*)"]) for r in exact])
    # The observer's view *is* the histogram: the leak the countermeasures remove.
    assert seen["protected"] == [int(r["count(*)"]) for r in exact]

    # --- 2. HIDE -----------------------------------------------------------------------
    hidden_plan = protect(setup.plan, sigma=0.2, per_scrambler=200, dummies=100)
    hidden = execute(hidden_plan, rng=0)
    (seen,) = traffic_per_node(setup.plan, hidden.transcript, setup.routes)
    pis = inclusion_probabilities(hidden_plan, setup.routes)
    rows = estimate_rows(setup, hidden.states["R"], pis)
    print("2. HIDE (sampling σ = 0.2, scramblers of 200 sources with 100 dummies each)")
    print("   messages per compute node:", seen["protected"])
    print(f"   each tuple is used with probability {pis['S->C0']:.3f}")
    inside = 0
    for est, ref in zip(rows, exact, strict=True):
        low, high = est["count(*) low"], est["count(*) high"]
        inside += int(low <= ref["count(*)"] <= high)
        print(
            f"   {est['age_range']:>6}: count ≈ {est['count(*)']:8.0f} "
            f"[{low:.0f}, {high:.0f}]  exact {ref['count(*)']:.0f}   "
            f"avg ≈ {est['avg(insulin)']:.2f}  exact {ref['avg(insulin)']:.2f}"
        )
    spread = np.std(seen["protected"]) / np.mean(seen["protected"])
    assert spread < np.std(seen["unprotected"]) / np.mean(seen["unprotected"])
    assert inside >= len(rows) - 2  # 95 % intervals: at most a couple of misses

    # --- 3. CERTIFY --------------------------------------------------------------------
    cert = certify(hidden_plan, delta=1e-4).privacy
    print("3. CERTIFY")
    print(f"   the traffic of this run is ({cert.epsilon:.3f}, {cert.delta:g})-DP per user")
    one = scrambler_epsilon(targets=8, sigma=0.2, n=200, dummies=100, delta=1e-4)
    print(f"   one scrambler layer alone: ε = {one.epsilon:.3f} ({one.source})")
    survey = shuffle_epsilon(eps0=2.0, n=10_000, delta=1e-6, k=4)
    print(f"   10,000 shuffled 4-ary RR answers at ε0 = 2: ε = {survey.epsilon:.3f}")
    twice = spent([PrivacyStatement(epsilon=cert.epsilon, delta=cert.delta)] * 2, delta=1e-3)
    print(f"   two such runs on the same people: ε = {twice.epsilon:.3f} ({twice.method})")
    assert np.isfinite(cert.epsilon)
    assert one.epsilon <= cert.epsilon + 1e-9  # a single hop is part of the path
    assert survey.epsilon < 2.0  # shuffling amplifies
    assert twice.epsilon <= 2 * cert.epsilon + 1e-9


if __name__ == "__main__":
    main()
