"""Tests of crowdhide.cli.netdp: the three commands, exit codes and option errors."""

from __future__ import annotations

import pytest

from tests.cli_helpers import run_cli


def test_cli_epsilon_calibrate_audit(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(
        capsys,
        "netdp",
        "epsilon",
        "--topology",
        "complete",
        "--task",
        "sum",
        "--n",
        "10000",
        "--steps",
        "1000000",
        "--eps0",
        "0.1",
        "--delta",
        "1e-7",
        "--json",
    )
    assert res.code == 0
    out = res.json()
    assert out["theorem"] == "theorem3"
    assert out["epsilon"] < out["ldp_epsilon"]
    res = run_cli(
        capsys,
        "netdp",
        "calibrate",
        "--topology",
        "complete",
        "--task",
        "sgd",
        "--n",
        "2000",
        "--steps",
        "20000",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--json",
    )
    assert res.code == 0
    assert 15 < res.json()["sigma"] < 25
    res = run_cli(
        capsys,
        "netdp",
        "audit",
        "--topology",
        "complete",
        "--n",
        "20",
        "--steps",
        "500",
        "--eps0",
        "0.5",
        "--delta",
        "1e-6",
        "--json",
    )
    assert res.code == 0
    assert res.json()["network_worst"] < res.json()["local_mean"] + 10
    res = run_cli(
        capsys,
        "netdp",
        "epsilon",
        "--topology",
        "ring",
        "--task",
        "sum",
        "--n",
        "10",
        "--eps0",
        "0.1",
        "--delta",
        "1e-7",
    )
    assert res.code == 2
    assert "rounds" in res.err
    res = run_cli(
        capsys,
        "netdp",
        "epsilon",
        "--topology",
        "torus",
        "--task",
        "sum",
        "--n",
        "10",
        "--eps0",
        "0.1",
        "--delta",
        "1e-7",
        "--rounds",
        "3",
    )
    assert res.code == 2


def test_cli_epsilon_reports_conditions_and_the_baseline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["--n", "2000", "--steps", "20000", "--eps0", "1", "--delta", "1e-6", "--json"]
    res = run_cli(capsys, "netdp", "epsilon", "--topology", "complete", "--task", "sgd", *args)
    assert res.code == 0
    out = res.json()
    assert out["theorem"] == "theorem4"
    assert out["conditions_met"] is False
    assert "eps0 < 1" in out["notes"]
    res = run_cli(
        capsys, "netdp", "epsilon", "--topology", "ring", "--task", "sgd", "--n", "10",
        "--eps0", "0.1", "--delta", "1e-7", "--rounds", "2",
    )  # fmt: skip
    assert res.code == 2
    assert "complete" in res.err


def test_cli_audit_explains_an_infinite_network_epsilon_below_the_fft_floor(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["netdp", "audit", "--topology", "complete", "--n", "20", "--steps", "100"]
    # (two users: invalid, exit 2)
    tiny = run_cli(capsys, *argv, "--eps0", "0.5", "--delta", "1e-12", "--json")
    assert tiny.code == 0
    assert tiny.json()["network_worst"] is None  # inf
    assert "FFT composition" in tiny.json()["note"]
    usual = run_cli(capsys, *argv, "--eps0", "0.5", "--delta", "1e-6", "--json")
    assert "note" not in usual.json()
    two = run_cli(capsys, *argv[:4], "--n", "2", "--steps", "9", "--eps0", "1", "--delta", "0.1")
    assert two.code == 2


def test_cli_audit_known_peers_with_an_infinite_epsilon_and_no_plain_pair(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Known peers, 3 users: an observer may have no pair left to account with its own ε,
    which is inf below the FFT floor; its 0·inf made the network mean nan (a RuntimeWarning,
    an internal error under warnings-as-errors; found by the CLI fuzz test)."""
    argv = ["netdp", "audit", "--topology", "complete", "--n", "3", "--steps", "13"]
    res = run_cli(
        capsys, *argv, "--eps0", "0.5", "--delta", "1e-12", "--colluders", "1", "--known-peers",
        "--group-ratio", "0.0", "--json",
    )  # fmt: skip
    assert res.code == 0, res.err
    assert res.json()["network_mean"] is None  # inf, not nan


def test_cli_histogram_at_large_eps0_does_not_overflow(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("netdp", "epsilon", "--topology", "complete", "--task", "histogram", "--n", "10")
    result = run_cli(capsys, *args, "--eps0", "30", "--steps", "1", "--delta", "1e-6", "--json")
    assert result.code == 0, result.err


# ---- netdp audit: bounded work (issue 28). The refusals come before any work: the walk
# sampler is replaced by one that fails the test if it is reached.

_AUDIT = ("netdp", "audit", "--topology", "complete", "--eps0", "0.5", "--delta", "1e-6")


@pytest.fixture
def no_audit_work(monkeypatch: pytest.MonkeyPatch) -> None:
    import crowdhide.netdp.walk_accounting as wa

    def refuse(**_: object) -> None:
        raise AssertionError("the audit started its work")

    monkeypatch.setattr(wa, "account_sampled_walk", refuse)


@pytest.mark.parametrize(
    ("args", "option", "accepted"),
    [
        # the documented maxima at the default group ratio: ~3,300 certificates
        (("--n", "100000", "--steps", "4000000"), "--group-ratio", "0.0042"),
        # any positive ratio used to skip the check: ~500,000 certificates
        (("--n", "100000", "--steps", "4000000", "--group-ratio", "1e-9"), "--group-ratio", ""),
        (("--n", "1000", "--steps", "100000", "--group-ratio", "0"), "--group-ratio", "0.0022"),
        # coalitions multiply the visits (5e8 here: gigabytes)
        (("--n", "1000", "--steps", "1000000", "--colluders", "500"), "--colluders", "is 4"),
    ],
)
def test_audit_refuses_unbounded_work_before_starting_it(
    args: tuple[str, ...],
    option: str,
    accepted: str,
    no_audit_work: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    r = run_cli(capsys, *_AUDIT, *args)
    assert r.code == 2, r.err
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert option in r.err
    assert "largest accepted" in r.err or "smallest accepted" in r.err
    assert accepted in r.err


def test_the_accepted_values_named_by_the_refusals_are_accepted_and_tight() -> None:
    from crowdhide.cli import netdp as cli

    for n, steps, colluders in [(100_000, 4 * 10**6, 1), (1000, 10**5, 1), (5000, 10**6, 3)]:
        ratio = cli._smallest_ratio(n, steps, colluders)
        cli._check_audit_size(n, steps, colluders, ratio)  # accepted
        with pytest.raises(ValueError, match="--group-ratio"):
            cli._check_audit_size(n, steps, colluders, ratio * 0.9)  # two digits, rounded up
    steps = 10**6
    largest = cli._AUDIT_MAX_VISITS // steps
    cli._check_audit_size(1000, steps, largest, 0.05)
    with pytest.raises(ValueError, match="--colluders"):
        cli._check_audit_size(1000, steps, largest + 1, 0.05)


@pytest.mark.parametrize(
    ("n", "steps", "colluders", "ratio"),
    [
        (50, 5000, 1, 0.0),
        (50, 5000, 3, 0.0),
        (200, 20000, 1, 0.003),
        (200, 20000, 2, 0.05),
        (100, 100, 1, 0.0),
    ],
)
def test_the_work_estimate_covers_the_certificates_computed(
    n: int, steps: int, colluders: int, ratio: float
) -> None:
    # The refusal is only as good as its estimate: it must not undercount the per-cycle
    # certificates (the audit's main cost) the audit actually computes.
    from crowdhide.cli.netdp import audit_curve_groups
    from crowdhide.netdp.cycle_privacy import CycleMechanism
    from crowdhide.netdp.walk_accounting import account_sampled_walk

    mech = CycleMechanism(kind="gaussian", noise_multiplier=5.0)
    res = account_sampled_walk(
        n=n, steps=steps, delta=1e-6, rng=1, colluders=colluders, group_ratio=ratio,
        mechanism=mech,
    )  # fmt: skip
    assert res.details["curve_groups"] <= audit_curve_groups(n, steps, colluders, ratio)
