"""``crowdhide scrambler ...`` and ``crowdhide local ...``: countermeasure accounting.

``--sigma`` follows Sections III–IV of Ladjel, Anciaux, Bellet, Scerri (convention U): with
probability σ a source sends to a target drawn uniformly among all T targets. Theorem 3's
"lie" convention is converted internally (σ_L = σ(T − 1)/T).
"""

from __future__ import annotations

from typing import Annotated

import typer

from crowdhide.cli._engine_progress import spinner
from crowdhide.cli._options import (
    AllowUnmetFlag,
    delta_option,
    epsilon_option,
    finish_target,
    int_option,
    real_option,
    seed_option,
)
from crowdhide.cli._output import JsonFlag, emit
from crowdhide.cli._scrambler_answer import query, record
from crowdhide.cli._values import MAX_N
from crowdhide.errors import InvalidParameterError

__all__ = ["local", "register", "scrambler"]

scrambler = typer.Typer(
    help="Scramblers A_σ^{n,d}: sampling + dummies + shuffling (Ladjel et al., Sec. IV).",
    no_args_is_help=True,
)
local = typer.Typer(
    help="Local randomizer R_σ^d: sampling + local dummies (Ladjel et al., Theorem 2).",
    no_args_is_help=True,
)

Targets = Annotated[int, int_option("--targets", "Number of targets T.", low=1, high=MAX_N)]
Sigma = Annotated[
    float,
    real_option(
        "--sigma",
        "Sampling rate σ (uniform among all T targets; Sections III–IV).",
        low=0.0,
        high=1.0,
    ),
]
Sources = Annotated[int, int_option("--n", "Sources per scrambler n.", low=1, high=MAX_N)]
Dummies = Annotated[int, int_option("--dummies", "Dummies d per scrambler.", low=0, high=MAX_N)]
#: Monte-Carlo samples: memory and time grow linearly (1e6 samples: seconds).
Samples = Annotated[
    int, int_option("--samples", "Monte-Carlo samples per component.", low=2, high=10**6)
]
Seed = Annotated[int, seed_option("Monte-Carlo seed.")]
Method = Annotated[
    str,
    typer.Option(
        "--method",
        help="Evaluator: best, all, exact, lemma2-exact, bennett, hoeffding, local, "
        "montecarlo, bennett-published (capped: exact, exact-pure, local, theorem3-published).",
    ),
]
#: scrambler calibrate: the search time grows linearly in T (1e5 targets: about 6 s of CPU).
_CALIBRATE_MAX_TARGETS = 10**5
CalibrateTargets = Annotated[
    int,
    int_option(
        "--targets",
        "Number of targets T (the search costs about 60 µs per target and candidate).",
        low=1,
        high=_CALIBRATE_MAX_TARGETS,
    ),
]
CalibrateDelta = Annotated[
    float,
    # Below 1e-100 scipy's binomial quantile of the search does not converge.
    real_option("--delta", "Target δ.", low=1e-100, high=1.0, high_open=True),
]
MaxChannels = Annotated[
    float | None,
    real_option("--max-channels", "Max secure channels per node.", low=1.0, high=1e12),
]
MaxOverhead = Annotated[
    float | None,
    real_option(
        "--max-overhead",
        "Max overhead: messages of the protected route / messages of the unprotected "
        "route (>= 1, as max_overhead in a plan file).",
        low=1.0,
        high=1e12,
    ),
]
MaxConsents = Annotated[
    float | None,
    real_option("--max-consents", "Max extra consents relative to S.", low=0.0, high=1e12),
]
CalibrateSources = Annotated[
    int,
    int_option("--sources", "Real tuples to keep (S), for channel counts.", low=1, high=MAX_N),
]
Capped = Annotated[bool, typer.Option("--capped", help="Capped scrambler (at most n per target).")]
CappedShort = Annotated[bool, typer.Option("--capped", help="Capped scrambler.")]


def _only_for_montecarlo(ctx: typer.Context, method: str) -> None:
    """``--samples`` and ``--seed`` steer the Monte-Carlo estimate only: typed with another
    method they would change nothing (issue 28: no option silently ignored)."""
    if method in ("montecarlo", "all"):
        return
    for name in ("samples", "seed"):
        source = ctx.get_parameter_source(name)
        if source is not None and source.name == "COMMANDLINE":
            raise InvalidParameterError(
                f"--{name} applies only to --method montecarlo or all, got --method {method}",
                parameter=f"--{name}",
                value=None,
            )


@scrambler.command("epsilon")
def epsilon_command(
    ctx: typer.Context,
    targets: Targets,
    sigma: Sigma,
    n: Sources,
    dummies: Dummies,
    delta: Annotated[float, delta_option(help="Target δ.")],
    capped: Capped = False,
    method: Method = "best",
    samples: Samples = 5000,
    seed: Seed = 0,
    as_json: JsonFlag = False,
) -> None:
    """Smallest ε with a (ε, δ) guarantee, per evaluator."""
    _only_for_montecarlo(ctx, method)

    query(
        targets=targets,
        sigma=sigma,
        n=n,
        dummies=dummies,
        delta=delta,
        capped=capped,
        method=method,
        samples=samples,
        seed=seed,
        as_json=as_json,
    )


@scrambler.command("delta")
def delta_command(
    ctx: typer.Context,
    targets: Targets,
    sigma: Sigma,
    n: Sources,
    dummies: Dummies,
    epsilon: Annotated[float, epsilon_option(help="ε.", zero=True)],
    capped: CappedShort = False,
    method: Method = "best",
    samples: Samples = 5000,
    seed: Seed = 0,
    as_json: JsonFlag = False,
) -> None:
    """δ(ε) per evaluator (best = smallest certified δ)."""
    _only_for_montecarlo(ctx, method)

    query(
        targets=targets,
        sigma=sigma,
        n=n,
        dummies=dummies,
        epsilon=epsilon,
        capped=capped,
        method=method,
        samples=samples,
        seed=seed,
        as_json=as_json,
    )


@scrambler.command("calibrate")
def calibrate_command(
    targets: CalibrateTargets,
    epsilon: Annotated[float, epsilon_option(help="Target ε.")],
    delta: CalibrateDelta,
    max_channels: MaxChannels = None,
    max_overhead: MaxOverhead = None,
    max_consents: MaxConsents = None,
    sources: CalibrateSources = 10_000,
    allow_unmet: AllowUnmetFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Cheapest (σ, n, d) meeting (ε, δ) under the constraints, with its certificate.

    Exit code 3 if nothing meets the target under the constraints (unless --allow-unmet).
    """
    from crowdhide.api import calibrate

    with spinner(not as_json, "searching σ, n, d"):
        found = calibrate(
            targets=targets,
            epsilon=epsilon,
            delta=delta,
            max_channels=max_channels,
            max_overhead=max_overhead,
            max_consents=max_consents,
            sources=sources,
        )
    cal = found.countermeasures
    assert cal is not None  # solved for countermeasures: targets were given
    record = cal.to_dict()
    record.update(
        max_channels_limit=max_channels,
        max_overhead_limit=max_overhead,
        max_consents_limit=max_consents,
        sources=sources,
        target_met=cal.feasible,
        allow_unmet=allow_unmet,  # echoed even when met (issue 28: no option silently ignored)
    )
    emit(record, as_json=as_json, title="countermeasure calibration")
    finish_target(
        cal.feasible,
        f"no configuration meets epsilon={epsilon:g}, delta={delta:g}: {cal.reason}",
        allow_unmet=allow_unmet,
        as_json=as_json,
    )


@local.command("epsilon")
def local_epsilon_command(
    targets: Targets,
    sigma: Sigma,
    dummies: Annotated[
        int, int_option("--dummies", "Local dummies d <= T − 1.", low=0, high=MAX_N)
    ] = 0,
    as_json: JsonFlag = False,
) -> None:
    """Pure ε of the local randomizer R_σ^d (Theorem 2)."""
    from crowdhide.accounting.scrambler.local import local_randomizer_statement

    statement = local_randomizer_statement(targets=targets, sigma=sigma, dummies=dummies)
    emit(record(statement), as_json=as_json, title="local randomizer ε")


def register(app: typer.Typer) -> None:
    """Add the ``scrambler`` and ``local`` areas to ``app``."""
    app.add_typer(scrambler, name="scrambler")
    app.add_typer(local, name="local")
