"""``crowdhide netdp epsilon|calibrate|audit``: network DP of token walks (Cyffers & Bellet)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from crowdhide.cli._engine_progress import spinner
from crowdhide.cli._options import (
    AllowUnmetFlag,
    delta_option,
    finish_target,
    int_option,
    option_names,
    real_option,
    seed_option,
)
from crowdhide.cli._output import JsonFlag, emit
from crowdhide.cli._values import MAX_EPSILON, MAX_N
from crowdhide.errors import InvalidParameterError, ResourceLimitError, UnmetTargetError

if TYPE_CHECKING:
    from crowdhide.netdp.guarantees import WalkBound

__all__ = ["audit_command", "calibrate_command", "epsilon_command", "netdp", "register"]

#: Library parameters fed from one option (messages name the option).
_NAMES = {
    "delta_slack": "--delta",
    "delta_hat": "--delta",
    "delta0": "--delta",
    "delta": "--delta",
    "eps0": "--eps0",
    "colluders": "--colluders",
    "domain_size": "--domain-size",
    "rounds": "--rounds",
    "steps": "--steps",
    "contributions": "--cap-factor * --steps / --n",
    "lipschitz": "--lipschitz",
    "n": "--n",
}
#: Rounds and walk lengths: the guarantees are closed forms, valid far beyond any real walk.
_MAX_STEPS = 10**12
#: netdp audit: per-user arrays of n entries and one certificate per distinct cycle length.
_AUDIT_MAX_N = 10**5
#: Steps up to 4e6: measured 55 s CPU at n = 1e5 (3,000 certificates) and 41 s at n = 1e3,
#: under load; 1e7 steps took 85 s CPU with 3,000 certificates.
_AUDIT_MAX_STEPS = 4 * 10**6
#: netdp audit computes one certificate per cycle-length group, 7 to 20 ms each; more
#: (expected) groups than this would take minutes.
_AUDIT_MAX_LENGTHS = 2500
#: netdp audit: coalition visits (colluders × steps): five int64 arrays of this length, and
#: the observers' composition grows with them (about 5 µs of CPU each).
_AUDIT_MAX_VISITS = _AUDIT_MAX_STEPS

netdp = typer.Typer(
    help="Network DP of token walks on a ring or the complete graph.", no_args_is_help=True
)

Topology = Annotated[str, typer.Option("--topology", help="ring | complete")]
CompleteTopology = Annotated[str, typer.Option("--topology", help="complete")]
Task = Annotated[str, typer.Option("--task", help="sum | histogram | sgd")]
Users = Annotated[int, int_option("--n", "Number of users.", low=2, high=MAX_N)]
Eps0 = Annotated[
    float,
    real_option(
        "--eps0",
        "Per-contribution (local) epsilon.",
        low=0.0,
        high=MAX_EPSILON,
        low_open=True,
    ),
]
Delta = Annotated[float, delta_option(help="delta (used for every slack).")]
Colluders = Annotated[int, int_option("--colluders", "Coalition size c (< n).", low=1, high=MAX_N)]
Steps = Annotated[int, int_option("--steps", "Walk length T.", low=1, high=_MAX_STEPS)]
OptionalRounds = Annotated[
    int | None, int_option("--rounds", "Ring laps K.", low=1, high=_MAX_STEPS)
]
OptionalSteps = Annotated[
    int | None, int_option("--steps", "Walk length T.", low=1, high=_MAX_STEPS)
]
DomainSize = Annotated[
    int | None,
    int_option(
        "--domain-size", "Histogram L (ring histogram only; default 10).", low=2, high=MAX_N
    ),
]
TargetEpsilon = Annotated[
    float,
    # Smaller targets need σ beyond e^700 L: the search overflows before refusing.
    real_option("--epsilon", "Target network epsilon.", low=1e-9, high=MAX_EPSILON),
]
TargetDelta = Annotated[float, delta_option(help="Target delta.")]
Lipschitz = Annotated[float, real_option("--lipschitz", "Lipschitz L.", low=1e-6, high=1e6)]
CapFactor = Annotated[
    float,
    real_option("--cap-factor", "Cap c: c T/n contributions.", low=1.0, high=1e3),
]
AuditUsers = Annotated[int, int_option("--n", "Number of users.", low=3, high=_AUDIT_MAX_N)]
AuditSteps = Annotated[int, int_option("--steps", "Walk length T.", low=1, high=_AUDIT_MAX_STEPS)]
AuditEps0 = Annotated[
    float,
    real_option(
        "--eps0",
        "Local epsilon of a contribution (classic Gaussian calibration needs ε0 < 1).",
        low=0.0,
        high=1.0,
        low_open=True,
        high_open=True,
    ),
]
KnownPeers = Annotated[
    bool, typer.Option("--known-peers", help="Senders/receivers visible (App. G).")
]
GroupRatio = Annotated[
    float,
    real_option(
        "--group-ratio",
        help="0: a certificate per cycle length. >0 (default 0.003): lengths above 64 "
        "share geometric bins of this relative width, each bin certified by a profile "
        "dominating all its lengths (still a certificate; faster, slightly looser).",
        low=0.0,
        high=10.0,
    ),
]


def register(app: typer.Typer) -> None:
    """Add the ``netdp`` command group to ``app``."""
    app.add_typer(netdp, name="netdp")


@netdp.command("epsilon")
def epsilon_command(
    topology: Topology,
    task: Task,
    n: Users,
    eps0: Eps0,
    delta: Delta,
    rounds: OptionalRounds = None,
    steps: OptionalSteps = None,
    colluders: Colluders = 1,
    domain_size: DomainSize = None,
    as_json: JsonFlag = False,
) -> None:
    """Network-DP guarantee (corrected theorem) next to the local-DP baseline."""
    _check_applies(topology, task, rounds, steps, domain_size)
    if domain_size is None:
        domain_size = 10
    if topology not in ("ring", "complete"):
        raise InvalidParameterError(
            f"--topology must be 'ring' or 'complete', got {topology!r}",
            parameter="--topology",
            value=topology,
        )
    if task not in ("sum", "histogram", "sgd"):
        raise InvalidParameterError(
            f"--task must be 'sum', 'histogram' or 'sgd', got {task!r}",
            parameter="--task",
            value=task,
        )
    if topology == "ring" and rounds is None:
        raise InvalidParameterError(
            "--rounds must be given for the ring, got None", parameter="--rounds", value=None
        )
    if topology == "complete" and steps is None:
        raise InvalidParameterError(
            "--steps must be given for the complete graph, got None",
            parameter="--steps",
            value=None,
        )
    with option_names(_NAMES):
        res, ldp = _BOUNDS[(topology, task)](
            n=n,
            eps0=eps0,
            delta=delta,
            rounds=rounds,
            steps=steps,
            colluders=colluders,
            domain_size=domain_size,
        )
    asked = {"topology": topology, "task": task, "n": n, "eps0": eps0, "delta_in": delta}
    asked |= {"rounds": rounds, "steps": steps, "colluders": colluders}
    asked["domain_size"] = domain_size if (topology, task) == ("ring", "histogram") else None
    _emit_guarantee(asked, res, ldp, as_json=as_json)


def _emit_guarantee(asked: dict[str, Any], res: Any, ldp: Any, *, as_json: bool) -> None:
    """The network guarantee ``res`` and local baseline ``ldp`` beside the ``asked`` inputs.

    A bound's detail named like an input (the ring histogram's derived per-user eps0) is
    kept under ``derived_<name>``: it must not overwrite the echoed ``--eps0`` (issue 28).
    The table echoes every input given: a changed ``--domain-size`` can leave the shown
    answer the same (ε capped at the local baseline)."""
    details = {(f"derived_{k}" if k in asked else k): v for k, v in res.to_dict().items()}
    record = {
        **asked,
        **details,
        "ldp_epsilon": ldp.privacy.epsilon,
        "ldp_delta": ldp.privacy.delta,
    }
    given = [key for key, value in asked.items() if value is not None]
    emit(
        record,
        as_json=as_json,
        title="Network DP guarantee",
        columns=[*given, "theorem", "epsilon", "delta", "conditions_met", "notes", "ldp_epsilon"],
    )


def _check_applies(
    topology: str, task: str, rounds: int | None, steps: int | None, domain_size: int | None
) -> None:
    """Refuse an option the chosen bound does not use (it would be dropped silently)."""
    if topology == "complete" and rounds is not None:
        raise InvalidParameterError(
            f"--rounds applies to the ring only (complete: --steps), got {rounds}",
            parameter="--rounds",
            value=rounds,
        )
    if topology == "ring" and steps is not None:
        raise InvalidParameterError(
            f"--steps applies to the complete graph only (ring: --rounds), got {steps}",
            parameter="--steps",
            value=steps,
        )
    if domain_size is not None and (topology, task) != ("ring", "histogram"):
        raise InvalidParameterError(
            f"--domain-size applies to --topology ring --task histogram only, got {domain_size}",
            parameter="--domain-size",
            value=domain_size,
        )


def _with_ldp(res: WalkBound, contributions: float, eps0: float, delta: float) -> Any:
    from crowdhide.netdp.guarantees import ldp_baseline

    ldp = ldp_baseline(contributions=contributions, eps0=eps0, delta0=delta, delta_slack=delta)
    return res, ldp


def _ring_sum(*, n: int, eps0: float, delta: float, rounds: int, colluders: int, **_: Any) -> Any:
    from crowdhide.netdp.guarantees import ring_sum_guarantee

    res = ring_sum_guarantee(
        n=n, rounds=rounds, eps0=eps0, delta0=delta, delta_slack=delta, colluders=colluders
    )
    return _with_ldp(res, float(rounds), eps0, delta)


def _ring_histogram(
    *, n: int, eps0: float, delta: float, rounds: int, colluders: int, domain_size: int, **_: Any
) -> Any:
    from crowdhide.netdp.guarantees import ring_histogram_guarantee

    if colluders != 1:
        raise InvalidParameterError(
            f"--colluders must be 1 on the ring, got {colluders}",
            parameter="--colluders",
            value=colluders,
        )
    res = ring_histogram_guarantee(
        n=n, rounds=rounds, epsilon=eps0, delta=delta, delta_slack=delta, domain_size=domain_size
    )
    return _with_ldp(res, float(rounds), eps0, delta)


def _ring_sgd(**_: Any) -> Any:
    raise InvalidParameterError(
        "--task sgd needs --topology complete, got ring", parameter="--task", value="sgd"
    )


def _complete(module: str, bound: str, slacks: tuple[str, ...]) -> Callable[..., Any]:
    """The complete-graph bound named ``bound`` of ``crowdhide.netdp.<module>`` (every δ
    parameter in ``slacks`` set to --delta), with the local-DP baseline over the same
    (high-probability) number of contributions."""

    def run(*, n: int, eps0: float, delta: float, steps: int, colluders: int, **_: Any) -> Any:
        import importlib

        from crowdhide.netdp import guarantees

        res = getattr(importlib.import_module(f"crowdhide.netdp.{module}"), bound)(
            n=n, steps=steps, eps0=eps0, colluders=colluders, **dict.fromkeys(slacks, delta)
        )
        contributions, _method = guarantees.visit_bound(steps=steps, n=n, delta_hat=delta)
        return _with_ldp(res, contributions, eps0, delta)

    return run


_CYCLE_SLACKS = ("delta0", "delta_slack", "delta_hat")

#: (topology, task) -> the bound behind ``netdp epsilon``.
_BOUNDS: dict[tuple[str, str], Callable[..., Any]] = {
    ("ring", "sum"): _ring_sum,
    ("ring", "histogram"): _ring_histogram,
    ("ring", "sgd"): _ring_sgd,
    ("complete", "sum"): _complete("guarantees", "complete_sum_guarantee", _CYCLE_SLACKS),
    ("complete", "histogram"): _complete(
        "guarantees", "complete_histogram_guarantee", _CYCLE_SLACKS
    ),
    ("complete", "sgd"): _complete(
        "sgd_guarantees", "complete_sgd_guarantee", ("delta", "delta_hat")
    ),
}


@netdp.command("calibrate")
def calibrate_command(
    topology: CompleteTopology,
    task: Annotated[str, typer.Option("--task", help="sgd")],
    n: Users,
    steps: Steps,
    epsilon: TargetEpsilon,
    delta: TargetDelta,
    lipschitz: Lipschitz = 1.0,
    cap: CapFactor = 1.25,
    allow_unmet: AllowUnmetFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Noise σ for private SGD on the complete graph (Lemma 1 numerics, App. F).

    Exit code 3 if no σ reaches the target (unless --allow-unmet).
    """
    from crowdhide.netdp.sgd_guarantees import code_sigmas, sgd_calibrate_sigma

    if topology != "complete" or task != "sgd":
        raise InvalidParameterError(
            f"calibrate supports --topology complete --task sgd, got {topology}/{task}",
            parameter="--topology",
            value=topology,
        )
    contributions = math.floor(cap * steps / n)
    if contributions < 1:
        raise InvalidParameterError(
            f"--cap-factor * --steps / --n must be >= 1, got {cap * steps / n:g}",
            parameter="--cap-factor",
            value=cap,
        )
    sigma: float | None
    reason = ""
    with option_names(_NAMES):
        try:
            sigma = sgd_calibrate_sigma(
                n=n, contributions=contributions, epsilon=epsilon, delta=delta, lipschitz=lipschitz
            )
        except UnmetTargetError as exc:
            sigma, reason = None, str(exc)
        code = code_sigmas(n=n, steps=steps, epsilon=epsilon, delta=delta, lipschitz=lipschitz)
    record = {
        "topology": topology,
        "task": task,
        "n": n,
        "steps": steps,
        "epsilon": epsilon,
        "delta": delta,
        "lipschitz": lipschitz,
        "contributions_cap": contributions,
        "target_met": sigma is not None,
        "allow_unmet": allow_unmet,  # echoed even when met (issue 28)
        "sigma": sigma,
        "sigma_over_L": None if sigma is None else sigma / lipschitz,
        "authors_code_sigma_network": code["network"],
        "authors_code_sigma_local": code["local"],
        "authors_code_sigma_central": code["central"],
    }
    emit(record, as_json=as_json, title="Calibrated noise (network DP-SGD)")
    finish_target(sigma is not None, reason, allow_unmet=allow_unmet, as_json=as_json)


#: Below about this δ the audit's FFT composition (``netdp.walk_pld``, rounding floor of
#: ``size · 1e-15`` per pair) certifies no finite network ε.
_FFT_DELTA_FLOOR = 1e-10


def audit_curve_groups(n: int, steps: int, colluders: int, group_ratio: float) -> float:
    """Expected number of per-cycle certificates ``netdp audit`` computes (its main cost).

    Cycle lengths of a coalition of c on the complete graph are about geometric with mean
    μ = (n − 1)/c; among N = c·T of them about μ(1 + ln(N/μ)) are distinct and the longest
    is about μ ln N. With ``group_ratio`` r > 0 lengths above 64 share geometric bins of
    relative width r: at most 64 + ln(μ ln N / 64)/ln(1 + r) + 1 groups.

    Examples
    --------
    >>> round(audit_curve_groups(100_000, 10**7, 1, 0.003))
    3448
    >>> round(audit_curve_groups(100_000, 10**7, 1, 1e-9))  # as many as distinct lengths
    560512
    """
    mean = (n - 1) / colluders
    visits = float(colluders) * steps
    distinct = min(visits, mean * (1.0 + math.log(max(visits / mean, 1.0))))
    if group_ratio == 0.0:
        return distinct
    longest = mean * math.log(max(visits, 2.0))
    bins = 65.0 + math.log(max(longest / 64.0, 1.0)) / math.log1p(group_ratio)
    return min(distinct, bins)


def _check_audit_size(n: int, steps: int, colluders: int, group_ratio: float) -> None:
    """Refuse, before any work, an audit that would run for minutes or exhaust memory."""
    if colluders * steps > _AUDIT_MAX_VISITS:
        raise ResourceLimitError(
            f"--colluders {colluders} × --steps {steps} = {colluders * steps:.2g} coalition "
            f"visits exceeds {_AUDIT_MAX_VISITS:.0e} (gigabytes, minutes of composition); the "
            f"largest accepted --colluders at this --steps is {max(_AUDIT_MAX_VISITS // steps, 1)}",
            parameter="colluders",
            value=colluders,
        )
    groups = audit_curve_groups(n, steps, colluders, group_ratio)
    if groups > _AUDIT_MAX_LENGTHS:
        smallest = _smallest_ratio(n, steps, colluders)
        raise ResourceLimitError(
            f"--n {n} --steps {steps} --group-ratio {group_ratio:g} gives about {groups:.0f} "
            f"per-cycle certificates (> {_AUDIT_MAX_LENGTHS}: minutes of work); the smallest "
            f"accepted --group-ratio here is {smallest:.2g} (or reduce --n / --steps)",
            parameter="group_ratio",
            value=group_ratio,
        )


def _smallest_ratio(n: int, steps: int, colluders: int) -> float:
    """The smallest --group-ratio within the limit (two digits, rounded up)."""
    longest = (n - 1) / colluders * math.log(max(float(colluders) * steps, 2.0))
    ratio = math.expm1(math.log(max(longest / 64.0, 1.0)) / (_AUDIT_MAX_LENGTHS - 65.0))
    if ratio <= 0.0:  # at most 64 distinct lengths: no grouping needed
        return 0.0
    scale = 10.0 ** (math.floor(math.log10(ratio)) - 1)
    return math.ceil(ratio / scale) * scale


@netdp.command("audit")
def audit_command(
    topology: CompleteTopology,
    n: AuditUsers,
    steps: AuditSteps,
    eps0: AuditEps0,
    delta: Annotated[float, delta_option(help="delta.")],
    seed: Annotated[int, seed_option("Walk seed.")] = 0,
    colluders: Colluders = 1,
    known_peers: KnownPeers = False,
    group_ratio: GroupRatio = 0.003,
    as_json: JsonFlag = False,
) -> None:
    """Per-pair losses on a sampled walk (Gaussian sums, σ classic-calibrated to eps0)."""
    from crowdhide.netdp.cycle_privacy import CycleMechanism
    from crowdhide.netdp.noise import classic_gaussian_sigma
    from crowdhide.netdp.walk_accounting import account_sampled_walk

    if topology != "complete":
        raise InvalidParameterError(
            f"audit supports --topology complete, got {topology!r}",
            parameter="--topology",
            value=topology,
        )
    _check_audit_size(n, steps, colluders, group_ratio)
    sigma = classic_gaussian_sigma(epsilon=eps0, delta=delta)
    with (
        spinner(not as_json, "sampling the walk and composing per-pair losses"),
        option_names(_NAMES),
    ):
        res = account_sampled_walk(
            n=n,
            steps=steps,
            delta=delta,
            rng=seed,
            colluders=colluders,
            known_peers=known_peers,
            group_ratio=group_ratio,
            mechanism=CycleMechanism(kind="gaussian", noise_multiplier=sigma),
        )
    record = {
        "topology": topology,
        "n": n,
        "steps": steps,
        "eps0": eps0,
        "delta": delta,
        "seed": seed,
        "colluders": colluders,
        "known_peers": known_peers,
        "group_ratio": group_ratio,
        "length_grouping": res.details.get("length_grouping", "exact"),
        "sigma_over_sensitivity": sigma,
        **res.summary,
    }
    if delta < _FFT_DELTA_FLOOR and not math.isfinite(float(res.summary["network_worst"])):
        record["note"] = (
            f"network epsilon is inf at delta={delta:g}: the FFT composition carries an "
            f"absolute rounding error of about {_FFT_DELTA_FLOOR:g} per pair, above this delta; "
            "use delta >= 1e-10 for a finite network certificate"
        )
    emit(record, as_json=as_json, title="Per-pair network DP on a sampled walk")
