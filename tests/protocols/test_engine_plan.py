"""Shuffle-model protocols on the engine: users → shuffler → analyzer (issue 6)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from scipy.stats import chisquare

from crowdhide.backends import execute
from crowdhide.plans import PlanBuilder, protect
from crowdhide.plans.semantics import compose_along_paths
from crowdhide.protocols import (
    engine_plan,
    krr_accounting,
    run_bit_sum,
    run_histogram,
    run_real_sum,
    run_single_message_sum,
)
from crowdhide.protocols.engine_plan import (
    ANALYZER,
    SHUFFLER,
    SHUFFLER_TO_ANALYZER,
    USERS,
    USERS_TO_SHUFFLER,
    run_on_engine,
    shuffle_plan,
)
from crowdhide.protocols.results import TRAFFIC_KEYS
from crowdhide.protocols.shuffler import ShuffledBatch
from tests.cli_helpers import run_cli


@pytest.fixture
def fixed_certificate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Skip the (slow, separately tested) accountant: these tests are about the data path.

    The runners then use ε0 = 2 and a placeholder certificate; the reports, the shuffler
    and the estimators are the real ones.
    """
    monkeypatch.setattr(krr_accounting, "calibrate_krr_eps0", lambda **kw: 2.0)
    monkeypatch.setattr(krr_accounting, "certify_krr", lambda **kw: (1.0, "test placeholder"))


def _identity_reports(n: int, *, shuffle_rng: Any = None) -> npt.NDArray[Any]:
    """The analyzer's inbox when user i reports i (so the inbox order is the permutation)."""
    run = run_on_engine(
        {"id": np.arange(n)},
        randomize=lambda users: users["id"],
        analyze=lambda reports: {"order": reports.copy()},
        shuffle_rng=shuffle_rng,
    )
    return np.asarray(run.result["order"])


def _permutation_counts(trials: int, n: int, shuffle_rng: Any) -> npt.NDArray[np.float64]:
    index = {p: i for i, p in enumerate(itertools.permutations(range(n)))}
    counts = np.zeros(len(index))
    for _ in range(trials):
        counts[index[tuple(_identity_reports(n, shuffle_rng=shuffle_rng).tolist())]] += 1
    return counts


# -- same answer as the direct path -------------------------------------------------------


@pytest.mark.usefixtures("fixed_certificate")
@pytest.mark.parametrize("estimator", ["inversion", "debias"])
def test_histogram_engine_equals_direct_path(estimator: str) -> None:
    values = np.random.default_rng(1).integers(0, 12, size=5_000)
    kwargs: dict[str, Any] = {"k": 12, "epsilon": 1.0, "delta": 1e-6, "estimator": estimator}
    direct = run_histogram(values, rng=7, **kwargs)
    engine = run_histogram(values, rng=7, engine=True, **kwargs)
    # Same seed → same reports → same multiset → bit-identical estimate and central noise.
    np.testing.assert_array_equal(engine.estimate, direct.estimate)
    np.testing.assert_array_equal(engine.central.raw, direct.central.raw)
    assert engine.messages == direct.messages == 5_000
    assert direct.traffic is None
    assert engine.traffic is not None
    assert engine.traffic["users_to_shuffler"] == engine.traffic["shuffler_to_analyzer"] == 5_000
    assert engine.traffic["secure_shuffle"] is True
    # A different seed gives different reports: the equality above is not vacuous.
    other = run_histogram(values, rng=8, engine=True, **kwargs)
    assert not np.array_equal(other.estimate, direct.estimate)


@pytest.mark.usefixtures("fixed_certificate")
@pytest.mark.parametrize("calibration", ["exact", "paper"])
def test_bit_sum_engine_equals_direct_path(calibration: str) -> None:
    bits = (np.arange(4_000) % 3 == 0).astype(np.int64)
    direct = run_bit_sum(bits, epsilon=1.0, delta=1e-6, calibration=calibration, rng=3)
    engine = run_bit_sum(bits, epsilon=1.0, delta=1e-6, calibration=calibration, rng=3, engine=True)
    assert engine.estimate == direct.estimate
    assert engine.central.estimate == direct.central.estimate
    assert engine.messages == direct.messages == 4_000
    other = run_bit_sum(bits, epsilon=1.0, delta=1e-6, calibration=calibration, rng=4, engine=True)
    assert other.estimate != direct.estimate


@pytest.mark.usefixtures("fixed_certificate")
def test_real_sums_engine_equal_direct_path() -> None:
    values = np.random.default_rng(2).random(3_000) * 10
    kwargs: dict[str, Any] = {"lower": 0.0, "upper": 10.0, "epsilon": 1.0, "delta": 1e-6}
    direct = run_real_sum(values, messages=4, rng=5, **kwargs)
    engine = run_real_sum(values, messages=4, rng=5, engine=True, **kwargs)
    assert engine.estimate == direct.estimate
    assert engine.std_error == direct.std_error
    assert engine.messages == direct.messages == 12_000
    assert engine.traffic is not None
    assert engine.traffic["users_to_shuffler"] == engine.traffic["shuffler_to_analyzer"] == 12_000
    direct = run_single_message_sum(values, levels=8, rng=5, **kwargs)
    engine = run_single_message_sum(values, levels=8, rng=5, engine=True, **kwargs)
    assert engine.estimate == direct.estimate
    assert engine.messages == direct.messages == 3_000


def test_multi_message_users_are_shuffled_individually() -> None:
    # User i sends (i, i + 100): the analyzer gets all 2n messages, and a user's two
    # messages are not kept together (they would be adjacent in every run otherwise).
    n = 40
    run = run_on_engine(
        {"id": np.arange(n)},
        randomize=lambda users: np.stack([users["id"], users["id"] + 100], axis=1),
        analyze=lambda received: {"messages": received.copy()},
        messages_per_user=2,
        shuffle_rng=0,
    )
    received = np.asarray(run.result["messages"])
    assert received.shape == (2 * n,)
    assert sorted(received.tolist()) == [*range(n), *range(100, 100 + n)]
    position = np.empty(200, dtype=np.int64)
    position[received] = np.arange(2 * n)
    gaps = np.abs(position[np.arange(n) + 100] - position[np.arange(n)])
    assert np.count_nonzero(gaps == 1) < n // 4
    assert run.users_to_shuffler == run.shuffler_to_analyzer == 2 * n
    src, _ = run.transcript.between(USERS, SHUFFLER)
    np.testing.assert_array_equal(np.bincount(src, minlength=n), np.full(n, 2))
    with pytest.raises(ValueError, match="2 messages per user"):
        run_on_engine(
            {"id": np.arange(3)},
            randomize=lambda users: users["id"],
            analyze=lambda received: {},
            messages_per_user=2,
        )


def test_engine_analyzer_sees_the_users_multiset() -> None:
    reports = np.random.default_rng(0).integers(0, 5, size=300)
    run = run_on_engine(
        {"r": reports},
        randomize=lambda users: users["r"],
        analyze=lambda received: {"received": received.copy()},
    )
    np.testing.assert_array_equal(np.sort(run.result["received"]), np.sort(reports))
    assert run.secure


def test_vector_reports_travel_as_rows() -> None:
    rows = np.arange(40).reshape(20, 2)
    run = run_on_engine(
        {"x": np.arange(20)},
        randomize=lambda users: rows[users["x"]],
        analyze=lambda received: {"rows": received.copy()},
        shuffle_rng=0,
    )
    received = np.asarray(run.result["rows"])
    assert received.shape == (20, 2)
    # Rows are permuted whole (a message is never split).
    np.testing.assert_array_equal(received[:, 1] - received[:, 0], np.ones(20))
    assert sorted(received[:, 0].tolist()) == rows[:, 0].tolist()
    assert not run.secure


# -- the analyzer's order is a uniform permutation, independent of the users' order -----


def test_analyzer_order_is_uniform_seeded_chi_square() -> None:
    counts = _permutation_counts(1_200, 4, np.random.default_rng(11))
    assert chisquare(counts).pvalue > 1e-3


def test_analyzer_order_is_uniform_with_the_csprng() -> None:
    # Position of each user in the analyzer's inbox: uniform over the n positions.
    n, trials = 5, 600
    positions = np.zeros((n, n))
    for _ in range(trials):
        order = _identity_reports(n)
        positions[order, np.arange(n)] += 1
    for user in range(n):
        assert chisquare(positions[user]).pvalue > 1e-6  # CSPRNG: flakes with prob ~1e-5


def test_order_test_detects_a_shuffler_that_keeps_the_users_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The uniformity test above can fail: with an identity "shuffle" the analyzer sees the
    # users' order and the chi-square statistic rejects at any level.
    def identity(messages: npt.ArrayLike, *, rng: Any = None) -> ShuffledBatch:
        return ShuffledBatch(messages=np.asarray(messages), secure=True)

    monkeypatch.setattr(engine_plan, "shuffle_messages", identity)
    counts = _permutation_counts(240, 4, None)
    assert chisquare(counts).pvalue < 1e-12


# -- transcript: both hops, message counts, no dummies ------------------------------------


def test_transcript_shows_both_hops_with_counts() -> None:
    n = 50
    run = run_on_engine(
        {"bit": np.arange(n) % 2},
        randomize=lambda users: users["bit"],
        analyze=lambda received: {"ones": np.array([received.sum()])},
        message_size=32,
    )
    transcript = run.transcript
    assert len(transcript) == 2 * n
    assert transcript.bytes_on_wire == 2 * n * 32
    src, dst = transcript.between(USERS, SHUFFLER)
    np.testing.assert_array_equal(np.sort(src), np.arange(n))
    np.testing.assert_array_equal(dst, np.zeros(n))
    src, dst = transcript.between(SHUFFLER, ANALYZER)
    assert src.tolist() == [0] * n
    assert dst.tolist() == [0] * n
    assert len(transcript.between(USERS, ANALYZER)[0]) == 0  # users never talk to the analyzer
    # Rounds: users send in superstep 0, the shuffler in superstep 1.
    users_first, _ = transcript.groups[USERS]
    from_users = transcript.source < users_first + n
    assert set(transcript.round[from_users].tolist()) == {0}
    assert set(transcript.round[~from_users].tolist()) == {1}
    # The shuffler's messages go out in output positions 0..n−1 (order labels).
    assert sorted(transcript.order[~from_users].tolist()) == list(range(n))
    for route in (USERS_TO_SHUFFLER, SHUFFLER_TO_ANALYZER):
        stats = run.execution.routes[route]
        assert stats.messages == stats.real_delivered == n
        assert stats.dummies == 0
    assert run.users_to_shuffler == run.shuffler_to_analyzer == n
    assert run.traffic() == {
        "users_to_shuffler": n,
        "shuffler_to_analyzer": n,
        "bytes_on_wire": 2 * n * 32,
        "secure_shuffle": True,
    }
    assert int(run.result["ones"][0]) == n // 2


def test_traffic_pattern_is_data_independent() -> None:
    plan = shuffle_plan(
        {"v": np.array([3, 1, 2])},
        randomize=lambda users: users["v"],
        analyze=lambda received: {},
    )
    assert not any(c.data_dependent for c in plan.clusters())
    eps, delta, _ = compose_along_paths(plan, {})
    assert (eps, delta) == (0.0, 0.0)
    # Two data sets of the same size produce the same transcript (the observer learns n).
    a = run_on_engine(
        {"v": np.zeros(30, dtype=int)}, randomize=lambda u: u["v"], analyze=lambda r: {}
    )
    b = run_on_engine({"v": np.arange(30)}, randomize=lambda u: u["v"], analyze=lambda r: {})
    for column in ("round", "source", "target", "size", "order"):
        np.testing.assert_array_equal(getattr(a.transcript, column), getattr(b.transcript, column))


# -- the stream route kind and invalid input ----------------------------------------------


def _stream_plan(sender_size: int) -> PlanBuilder:
    b = PlanBuilder()
    b.sources("S", {"x": np.arange(4)})
    b.compute("M", size=sender_size, process=lambda inbox, rng: {"y": np.arange(3)})
    b.result("R", process=lambda inbox, rng: {"got": inbox.only("M->R").gather("y")})
    b.route("S", "M", kind="fixed")
    b.route("M", "R", kind="stream")
    return b


def test_stream_route_forwards_one_message_per_row() -> None:
    run = execute(_stream_plan(1).build(), rng=0)
    assert run.states["R"]["got"].tolist() == [0, 1, 2]
    assert run.routes["M->R"].messages == 3


def test_stream_route_after_a_protected_data_route_keeps_the_invariants() -> None:
    # Scramblers, dummies and random send orders on the data route are unchanged by a
    # downstream stream hop: dummies are dropped before the compute functions run, and the
    # stream carries only the aggregate's rows.
    b = PlanBuilder()
    b.sources("S", {"g": np.arange(100) % 4})
    b.compute(
        "C",
        size=4,
        process=lambda inbox, rng: {"n": np.bincount(inbox.only("S->C").target, minlength=4)},
    )
    b.compute("A", size=1, process=lambda inbox, rng: {"count": inbox.only("C->A").gather("n")})
    b.result("R", process=lambda inbox, rng: {"got": inbox.only("A->R").gather("count")})
    b.route("S", "C", by=lambda s: s["g"])
    b.route("C", "A", kind="fixed")
    b.route("A", "R", kind="stream")
    plan = protect(b.build(), sigma=0.5, per_scrambler=10, dummies=5)
    run = execute(plan, rng=0)
    stats = run.routes["S->C"]
    assert stats.messages == 100 + 100 + 10 * 5
    assert stats.dummies == stats.messages - 100 - stats.real_delivered
    assert int(run.states["R"]["got"].sum()) == stats.real_delivered
    assert run.routes["A->R"].messages == 4
    assert run.routes["A->R"].dummies == 0
    assert len(run.transcript) == stats.messages + 4 + 4


def test_stream_route_needs_a_single_sender() -> None:
    with pytest.raises(ValueError, match=r"stream is sent by a single node.*size 2"):
        _stream_plan(2).build()


@pytest.mark.parametrize(
    ("state", "match"),
    [({}, "got lengths \\{\\}"), ({"a": np.arange(2), "b": np.arange(3)}, "equal length")],
)
def test_stream_route_rejects_ragged_state(state: dict[str, Any], match: str) -> None:
    b = PlanBuilder()
    b.sources("S", {"x": np.arange(4)})
    b.compute("M", size=1, process=lambda inbox, rng: state)
    b.result("R", process=lambda inbox, rng: {})
    b.route("S", "M", kind="fixed")
    b.route("M", "R", kind="stream")
    with pytest.raises(ValueError, match=match):
        execute(b.build(), rng=0)


def test_randomizer_must_return_one_report_per_user() -> None:
    with pytest.raises(ValueError, match="one report per user \\(3\\)"):
        run_on_engine({"v": np.arange(3)}, randomize=lambda u: u["v"][:2], analyze=lambda r: {})


def test_invalid_engine_flag_and_message_size() -> None:
    with pytest.raises(TypeError, match="engine"):
        run_histogram(np.array([0, 1, 1]), k=2, epsilon=1.0, delta=1e-6, eps0=1.0, engine="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="message_size"):
        shuffle_plan(
            {"v": np.arange(3)}, randomize=lambda u: u["v"], analyze=lambda r: {}, message_size=0
        )


@pytest.mark.usefixtures("fixed_certificate")
def test_direct_record_has_stable_engine_keys() -> None:
    run = run_histogram(np.array([0, 1, 1, 0]), k=2, epsilon=1.0, delta=1e-3, eps0=1.0, rng=0)
    record = run.as_record()
    assert record["engine"] is False
    assert all(record[key] is None for key in TRAFFIC_KEYS)


# -- CLI ------------------------------------------------------------------------------------


@pytest.mark.usefixtures("fixed_certificate")
def test_cli_histogram_engine_matches_direct(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("protocol", "histogram", "--data", "builtin:gowalla-paris", "--column", "cell")
    args += ("--epsilon", "1", "--delta", "1e-6", "--seed", "1", "--json")
    direct = run_cli(capsys, *args)
    engine = run_cli(capsys, *args, "--engine")
    assert direct.code == engine.code == 0, engine.err
    d, e = direct.json(), engine.json()
    assert e["estimate"] == d["estimate"]
    assert e["engine"] is True
    assert d["engine"] is False
    assert e["users_to_shuffler"] == e["shuffler_to_analyzer"] == e["n"]


@pytest.mark.usefixtures("fixed_certificate")
def test_cli_bit_sum_engine_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "bits.csv"
    path.write_text("flag\n" + "\n".join(str(i % 2) for i in range(2_000)) + "\n")
    args = ("protocol", "sum", "--data", str(path), "--column", "flag")
    result = run_cli(capsys, *args, "--epsilon", "1", "--delta", "1e-6", "--engine")
    assert result.code == 0, result.err
    assert "users_to_shuffler" in result.out


@pytest.mark.usefixtures("fixed_certificate")
@pytest.mark.parametrize("protocol", ["real", "single"])
def test_cli_real_sums_on_the_engine(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, protocol: str
) -> None:
    path = tmp_path / "x.csv"
    path.write_text("x\n" + "\n".join(f"{(i % 10) / 10}" for i in range(1_000)) + "\n")
    args = ("protocol", "sum", "--data", str(path), "--column", "x", "--protocol", protocol)
    args += ("--epsilon", "1", "--delta", "1e-6", "--seed", "2", "--json")
    if protocol == "real":
        # 3 messages certify more than ε = 1 (exit code 3); this test is about the engine.
        args += ("--messages", "3", "--allow-unmet")
    direct = run_cli(capsys, *args)
    engine = run_cli(capsys, *args, "--engine")
    assert direct.code == engine.code == 0, engine.err
    d, e = direct.json(), engine.json()
    assert e["estimate"] == d["estimate"]
    assert e["engine"] is True
    per_user = 3 if protocol == "real" else 1
    assert e["users_to_shuffler"] == e["shuffler_to_analyzer"] == 1_000 * per_user


def test_engine_run_with_the_real_accountant_is_certified() -> None:
    values = np.arange(2_000) % 4
    run = run_histogram(values, k=4, epsilon=1.0, delta=1e-6, eps0=2.0, rng=0, engine=True)
    assert run.privacy.meets_target
    assert run.privacy.epsilon <= 2.0
    assert abs(run.estimate.sum() - 1.0) < 1e-9
    assert run.as_record()["users_to_shuffler"] == 2_000
