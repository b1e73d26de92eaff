"""``crowdhide qif``: what an uninformed or an informed adversary really learns.

Commands: ``vulnerability`` (single-target vulnerability of k-RR, shuffle or both),
``capacity`` (multiplicative Bayes capacity on whole datasets) and ``scrambler`` (one
source's target behind a scrambler cluster). See ``docs/qif.md``.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from enum import StrEnum
from typing import Annotated, Any

import typer

from crowdhide.cli._engine_progress import spinner
from crowdhide.cli._options import int_option, real_option
from crowdhide.cli._output import JsonFlag, emit
from crowdhide.cli._values import MAX_EPSILON, MAX_N
from crowdhide.errors import InvalidParameterError

__all__ = ["capacity", "qif_app", "register", "scrambler", "vulnerability"]


class ChannelName(StrEnum):
    """Channels of the shuffle model."""

    krr = "krr"
    shuffle = "shuffle"
    krr_shuffle = "krr+shuffle"
    shuffle_krr = "shuffle+krr"


class AdversaryName(StrEnum):
    """Adversaries: uniform prior, or knowing everyone but the target."""

    uninformed = "uninformed"
    informed = "informed"


#: Largest domain: the k-RR + shuffle capacity costs about k·n² operations (k = 1e6: seconds).
MAX_K = 10**6

KOpt = Annotated[int, int_option("--k", "Number of values k.", low=2, high=MAX_K)]
NOpt = Annotated[
    int,
    int_option(
        "--n",
        "Number of users n (1e9 may be written so). Exact computations refuse inputs beyond "
        "their work budget with the estimate (e.g. vulnerability: n·k up to about 1e8).",
        low=1,
        high=MAX_N,
    ),
]
Eps0Opt = Annotated[
    float | None,
    real_option(
        "--eps0",
        "Local epsilon of k-RR (not needed for --channel shuffle).",
        low=0.0,
        high=MAX_EPSILON,
    ),
]
ChannelOpt = Annotated[
    ChannelName, typer.Option("--channel", help="krr, shuffle, krr+shuffle (= shuffle+krr).")
]
AdversaryOpt = Annotated[
    AdversaryName,
    typer.Option("--adversary", help="uninformed (uniform prior) or informed (knows the others)."),
]
OthersValueOpt = Annotated[
    int,
    int_option(
        "--others-value",
        "Informed adversary: the value all other users hold (default 0; < k).",
        low=0,
        high=MAX_K,
    ),
]
OthersOpt = Annotated[
    str | None,
    typer.Option(
        "--others",
        help="Informed adversary: the others' histogram, k comma-separated counts summing "
        "to n-1 (overrides --others-value).",
    ),
]


def _parse_histogram(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise InvalidParameterError(
            f"others must be comma-separated integers (a histogram), got {text!r}",
            parameter="--others",
            value=text,
        ) from None


def _flatten(record: dict[str, Any]) -> dict[str, Any]:
    """Table view: leakage split into two rows, lists shown compactly."""
    flat: dict[str, Any] = {}
    for key, value in record.items():
        if key == "leakage":
            flat["leakage (multiplicative)"] = value["multiplicative"]
            flat["leakage (additive)"] = value["additive"]
        elif isinstance(value, list):
            flat[key] = ",".join(str(v) for v in value)
        else:
            flat[key] = value
    return flat


def _working(as_json: bool, what: str) -> AbstractContextManager[None]:
    """A spinner on stderr while computing (not with ``--json``)."""
    return spinner(not as_json, what)


TargetsOpt = Annotated[int, int_option("--targets", "Number of targets T.", low=2, high=MAX_K)]
SigmaOpt = Annotated[float, real_option("--sigma", "Sampling probability.", low=0.0, high=1.0)]
SourcesOpt = Annotated[int, int_option("--n", "Sources per scrambler.", low=1, high=MAX_N)]
DummiesOpt = Annotated[int, int_option("--dummies", "Dummies added.", low=0, high=MAX_N)]

qif_app = typer.Typer(
    name="qif",
    help="Quantitative information flow: vulnerability, leakage and capacity.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add the ``qif`` command group to ``app``."""
    app.add_typer(qif_app, name="qif")


def _check_others(ctx: typer.Context, adversary: AdversaryName, others: str | None) -> None:
    """What the other users hold is known only to the informed adversary: typed for the
    uninformed one it would change nothing (refused, not ignored)."""
    if adversary is not AdversaryName.uninformed:
        return
    if others is not None:
        raise InvalidParameterError(
            "others is only used with --adversary informed", parameter="--others", value=others
        )
    source = ctx.get_parameter_source("others_value")
    if source is not None and source.name == "COMMANDLINE":
        raise InvalidParameterError(
            "--others-value is only used with --adversary informed",
            parameter="--others-value",
            value=None,
        )


def _emit_table_or_json(
    record: dict[str, Any], *, as_json: bool, title: str, notes: list[str] | None = None
) -> None:
    """JSON as computed, or the flattened table (leakage on two rows) with ``notes``."""
    if as_json:
        emit(record, as_json=True)
        return
    emit(_flatten(record), as_json=False, title=title, notes=notes or [])


@qif_app.command("vulnerability")
def vulnerability(
    ctx: typer.Context,
    k: KOpt,
    n: NOpt,
    eps0: Eps0Opt = None,
    channel: ChannelOpt = ChannelName.krr_shuffle,
    adversary: AdversaryOpt = AdversaryName.uninformed,
    others_value: OthersValueOpt = 0,
    others: OthersOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Single-target Bayes vulnerability (guess one user's value) and its leakage."""
    from crowdhide.qif.shuffle import informed_vulnerability, uninformed_vulnerability

    _check_others(ctx, adversary, others)
    with _working(as_json, "computing the vulnerability..."):
        if adversary is AdversaryName.uninformed:
            result = uninformed_vulnerability(n=n, k=k, channel=channel.value, eps0=eps0)
        else:
            result = informed_vulnerability(
                n=n,
                k=k,
                channel=channel.value,
                eps0=eps0,
                others=_parse_histogram(others),
                others_value=others_value,
            )
    _emit_table_or_json(
        result.as_record(),
        as_json=as_json,
        title=f"qif vulnerability: {channel.value}, {adversary.value} adversary",
    )


@qif_app.command("capacity")
def capacity(
    k: KOpt,
    n: NOpt,
    eps0: Eps0Opt = None,
    channel: ChannelOpt = ChannelName.krr_shuffle,
    as_json: JsonFlag = False,
) -> None:
    """Multiplicative Bayes capacity on whole datasets (max leakage over all priors)."""
    from crowdhide.qif.shuffle_capacity import shuffled_krr_capacity

    with _working(as_json, "computing the capacity..."):
        result = shuffled_krr_capacity(n=n, k=k, channel=channel.value, eps0=eps0)
    _emit_table_or_json(
        result.as_record(),
        as_json=as_json,
        title=f"qif capacity: {channel.value}",
        notes=[
            "capacity = sum over outputs of the column maxima = max multiplicative Bayes "
            "leakage of the whole dataset, reached at the uniform prior (vulnerabilities "
            "shown at that prior); unshuffled = k-RR alone, (k p)^n"
        ],
    )


@qif_app.command("scrambler")
def scrambler(
    ctx: typer.Context,
    targets: TargetsOpt,
    sigma: SigmaOpt,
    n: SourcesOpt,
    dummies: DummiesOpt = 0,
    adversary: AdversaryOpt = AdversaryName.uninformed,
    others_value: OthersValueOpt = 0,
    others: OthersOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Vulnerability of one source's target behind a scrambler cluster."""
    from crowdhide.qif.scrambler import scrambler_vulnerability

    _check_others(ctx, adversary, others)
    with _working(as_json, "computing the vulnerability..."):
        result = scrambler_vulnerability(
            targets=targets,
            sigma=sigma,
            n=n,
            dummies=dummies,
            adversary=adversary.value,
            others=_parse_histogram(others),
            others_value=others_value,
        )
    _emit_table_or_json(
        result.as_record(),
        as_json=as_json,
        title=f"qif scrambler: {adversary.value} adversary",
        notes=[
            "local_epsilon = ln((1-sigma)T/sigma + 1), the DP level of the sampling "
            "randomizer; vulnerability = probability of guessing the source's target"
        ],
    )
