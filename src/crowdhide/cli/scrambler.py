"""``crowdhide scrambler ...`` and ``crowdhide local ...``: countermeasure accounting.

``--sigma`` follows Sections III–IV of seed 000 (convention U): with probability σ a source
sends to a target drawn uniformly among all T targets. Theorem 3's "lie" convention is
converted internally (σ_L = σ(T − 1)/T).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from crowdhide.cli._output import JsonFlag, emit

__all__ = ["register"]

Targets = Annotated[int, typer.Option("--targets", help="Number of targets T.")]
Sigma = Annotated[
    float,
    typer.Option("--sigma", help="Sampling rate σ (uniform among all T targets; Sections III–IV)."),
]
Sources = Annotated[int, typer.Option("--n", help="Sources per scrambler n.")]
Dummies = Annotated[int, typer.Option("--dummies", help="Dummies d per scrambler.")]
Method = Annotated[
    str,
    typer.Option(
        "--method",
        help="Evaluator: best, all, exact, lemma2-exact, bennett, hoeffding, local, "
        "montecarlo, bennett-published (capped: exact, exact-pure, local, theorem3-published).",
    ),
]

_COLUMNS = ["method", "epsilon", "delta", "valid", "note"]


def _record(result: Any) -> dict[str, Any]:
    return dict(result.to_dict())


def register(app: typer.Typer) -> None:
    """Add the ``scrambler`` and ``local`` areas to ``app``."""
    scrambler = typer.Typer(
        help="Scramblers A_σ^{n,d}: sampling + dummies + shuffling (seed 000, Sec. IV).",
        no_args_is_help=True,
    )
    local = typer.Typer(
        help="Local randomizer R_σ^d: sampling + local dummies (seed 000, Theorem 2).",
        no_args_is_help=True,
    )
    app.add_typer(scrambler, name="scrambler")
    app.add_typer(local, name="local")

    @scrambler.command("epsilon")
    def epsilon_cmd(
        targets: Targets,
        sigma: Sigma,
        n: Sources,
        dummies: Dummies,
        delta: Annotated[float, typer.Option("--delta", help="Target δ in (0, 1).")],
        capped: Annotated[
            bool, typer.Option("--capped", help="Capped scrambler (at most n per target).")
        ] = False,
        method: Method = "best",
        samples: Annotated[
            int, typer.Option("--samples", help="Monte-Carlo samples per component.")
        ] = 5000,
        seed: Annotated[int, typer.Option("--seed", help="Monte-Carlo seed.")] = 0,
        as_json: JsonFlag = False,
    ) -> None:
        """Smallest ε with a (ε, δ) guarantee, per evaluator."""
        from crowdhide.accounting.scrambler import scrambler_epsilon, scrambler_epsilon_all

        common: dict[str, Any] = {
            "targets": targets,
            "sigma": sigma,
            "n": n,
            "dummies": dummies,
            "delta": delta,
            "capped": capped,
            "samples": samples,
            "rng": seed,
        }
        if method == "all":
            rows = [_record(r) for r in scrambler_epsilon_all(**common)]
            emit(rows, as_json=as_json, title="scrambler ε(δ), every evaluator", columns=_COLUMNS)
            return
        result = scrambler_epsilon(method=method, **common)
        emit(_record(result), as_json=as_json, title="scrambler ε(δ)")

    @scrambler.command("delta")
    def delta_cmd(
        targets: Targets,
        sigma: Sigma,
        n: Sources,
        dummies: Dummies,
        epsilon: Annotated[float, typer.Option("--epsilon", help="ε >= 0.")],
        capped: Annotated[bool, typer.Option("--capped", help="Capped scrambler.")] = False,
        method: Method = "best",
        samples: Annotated[int, typer.Option("--samples", help="Monte-Carlo samples.")] = 5000,
        seed: Annotated[int, typer.Option("--seed", help="Monte-Carlo seed.")] = 0,
        as_json: JsonFlag = False,
    ) -> None:
        """δ(ε) per evaluator (best = smallest certified δ)."""
        from crowdhide.accounting.scrambler import (
            CAPPED_METHODS,
            UNCAPPED_METHODS,
            scrambler_delta,
        )

        common: dict[str, Any] = {
            "targets": targets,
            "sigma": sigma,
            "n": n,
            "dummies": dummies,
            "epsilon": epsilon,
            "capped": capped,
            "samples": samples,
            "rng": seed,
        }
        if method == "all":
            names = CAPPED_METHODS if capped else UNCAPPED_METHODS
            names = tuple(m for m in names if m != "theorem3-published")
            rows = [_record(scrambler_delta(method=m, **common)) for m in names]
            emit(rows, as_json=as_json, title="scrambler δ(ε), every evaluator", columns=_COLUMNS)
            return
        emit(_record(scrambler_delta(method=method, **common)), as_json=as_json, title="δ(ε)")

    @scrambler.command("calibrate")
    def calibrate_cmd(
        targets: Targets,
        epsilon: Annotated[float, typer.Option("--epsilon", help="Target ε > 0.")],
        delta: Annotated[float, typer.Option("--delta", help="Target δ in (0, 1).")],
        max_channels: Annotated[
            float | None, typer.Option("--max-channels", help="Max secure channels per node.")
        ] = None,
        max_overhead: Annotated[
            float | None,
            typer.Option("--max-overhead", help="Max relative network overhead (messages/S − 1)."),
        ] = None,
        max_consents: Annotated[
            float | None,
            typer.Option("--max-consents", help="Max extra consents relative to S."),
        ] = None,
        sources: Annotated[
            int, typer.Option("--sources", help="Real tuples to keep (S), for channel counts.")
        ] = 10_000,
        as_json: JsonFlag = False,
    ) -> None:
        """Cheapest (σ, n, d) meeting (ε, δ) under the constraints, with its certificate."""
        from crowdhide.accounting.scrambler import calibrate_countermeasures

        cal = calibrate_countermeasures(
            targets=targets,
            epsilon=epsilon,
            delta=delta,
            max_channels=max_channels,
            max_overhead=max_overhead,
            max_consents=max_consents,
            sources=sources,
        )
        record = cal.to_dict()
        record.update(
            max_channels_limit=max_channels,
            max_overhead_limit=max_overhead,
            max_consents_limit=max_consents,
            sources=sources,
        )
        emit(record, as_json=as_json, title="countermeasure calibration")

    @local.command("epsilon")
    def local_epsilon_cmd(
        targets: Targets,
        sigma: Sigma,
        dummies: Annotated[int, typer.Option("--dummies", help="Local dummies d <= T − 1.")] = 0,
        as_json: JsonFlag = False,
    ) -> None:
        """Pure ε of the local randomizer R_σ^d (Theorem 2)."""
        from crowdhide.accounting.scrambler import local_randomizer_epsilon

        eps = local_randomizer_epsilon(targets=targets, sigma=sigma, dummies=dummies)
        record = {
            "epsilon": eps,
            "delta": 0.0,
            "method": "theorem2",
            "valid": True,
            "targets": targets,
            "sigma": sigma,
            "dummies": dummies,
            "note": "exact pure ε (largest log-ratio); messages must be sent in random order",
        }
        emit(record, as_json=as_json, title="local randomizer ε")
