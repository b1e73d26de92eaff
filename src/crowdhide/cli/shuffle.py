"""``crowdhide shuffle``: privacy amplification by shuffling (epsilon, delta, calibrate, plot)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from crowdhide.cli._engine_progress import progress_wanted, spinner
from crowdhide.cli._options import (
    MAX_EPSILON,
    MAX_N,
    AllowUnmetFlag,
    check_output_file,
    delta_option,
    epsilon_option,
    finish_target,
    int_option,
    real_option,
)
from crowdhide.cli._output import JsonFlag, emit
from crowdhide.errors import OutputPathError

__all__ = ["register"]

_COLUMNS = ["bound", "kind", "valid", "epsilon", "delta", "note"]
#: Image formats ``shuffle plot --out`` writes (matplotlib, chosen by suffix).
_PLOT_SUFFIXES = (".png", ".pdf", ".svg")

Eps0 = Annotated[
    float,
    real_option("--eps0", "Local DP level of each user.", low=0.0, high=MAX_EPSILON, low_open=True),
]
Users = Annotated[int, int_option("--n", "Number of users shuffled together.", low=1, high=MAX_N)]
DomainK = Annotated[
    int | None,
    int_option(
        "--k", "k-ary randomized response domain size (omit: any eps0-LDP).", low=2, high=10**6
    ),
]
Delta = Annotated[float, delta_option(help="Target delta.")]
BoundName = Annotated[str, typer.Option("--bound", help="Bound name, 'best' (default) or 'all'.")]
Rounds = Annotated[
    int, int_option("--rounds", "Shuffled rounds composed by PLD (default 1).", low=1, high=10**5)
]
SampleRate = Annotated[
    float,
    real_option(
        "--sample-rate",
        "Poisson sampling rate of users per round (default 1).",
        low=0.0,
        high=1.0,
        low_open=True,
    ),
]
Relation = Annotated[
    str, typer.Option("--relation", help="With --rounds/--sample-rate: substitute|add_remove.")
]


def _composed(fn: str, bound: str, **kwargs: Any) -> dict[str, Any]:
    """``--rounds`` / ``--sample-rate``: the PLD composition of the clone pair."""
    from crowdhide.accounting import shuffle_composition as sc

    if bound not in ("best", *sc.CLONE_PAIRS):
        raise ValueError(
            f"--bound must be best or one of {', '.join(sc.CLONE_PAIRS)} with --rounds or "
            f"--sample-rate, got {bound!r}"
        )
    return _clean(getattr(sc, fn)(pair=bound, **kwargs).to_dict())


def _clean(record: dict[str, Any]) -> dict[str, Any]:
    """NaN (bound not applicable) becomes None: '-' in tables, null in JSON."""
    return {key: None if isinstance(v, float) and math.isnan(v) else v for key, v in record.items()}


def _records(results: list[Any]) -> list[dict[str, Any]]:
    return [_clean(r.to_dict()) for r in results]


def _run_all(fn: Any, names: tuple[str, ...], as_json: bool, **kwargs: Any) -> list[Any]:
    """Evaluate every bound, with a progress bar on stderr for the table output."""
    from crowdhide.accounting.shuffle import _applicable, _with_lower

    todo = [b for b in names if b in _applicable(kwargs.get("k"))]
    extra = {key: kwargs[key] for key in ("delta", "epsilon") if key in kwargs}

    def one(bound: str) -> Any:
        return fn(bound=bound, lower=False, **kwargs)

    if not progress_wanted(as_json):
        return _with_lower([one(b) for b in todo], **extra)
    from rich.console import Console
    from rich.progress import Progress

    out = []
    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("bounds", total=len(todo))
        for b in todo:
            progress.update(task, description=b)
            out.append(one(b))
            progress.advance(task)
    return _with_lower(out, **extra)


MechanismName = Annotated[
    str | None,
    typer.Option("--mechanism", help="krr, oue, rappor, subset or olh (needs --d; subset --k)."),
]
DomainD = Annotated[
    int | None, int_option("--d", "Domain size for --mechanism.", low=2, high=10**6)
]


def _mechanism(fn: str, name: str, d: int | None, **kwargs: Any) -> Any:
    """Answer for ``--mechanism``: its certificate vs the generic ones, with a lower bound."""
    from crowdhide.accounting import shuffle_mechanisms

    if d is None:
        raise ValueError(f"--mechanism {name} needs --d (the domain size), got none")
    return getattr(shuffle_mechanisms, fn)(mechanism=name, d=d, **kwargs)


def register(app: typer.Typer) -> None:
    """Add the ``shuffle`` commands to ``app``."""
    shuffle = typer.Typer(
        name="shuffle",
        help="Privacy amplification by shuffling: (eps, delta) of n shuffled eps0-LDP reports.",
        no_args_is_help=True,
    )
    app.add_typer(shuffle, name="shuffle")

    @shuffle.command("epsilon")
    def epsilon_cmd(
        eps0: Eps0,
        n: Users,
        delta: Delta,
        mechanism: MechanismName = None,
        d: DomainD = None,
        k: DomainK = None,
        bound: BoundName = "best",
        as_json: JsonFlag = False,
        rounds: Rounds = 1,
        sample_rate: SampleRate = 1.0,
        relation: Relation = "substitute",
    ) -> None:
        """Epsilon after shuffling at a given delta."""
        if mechanism is not None:
            res = _mechanism("mechanism_epsilon", mechanism, d, eps0=eps0, n=n, delta=delta, k=k)
            emit(_clean(res.to_dict()), as_json=as_json, title=f"shuffle epsilon ({mechanism})")
            return
        from crowdhide.accounting.shuffle import SHUFFLE_BOUNDS, shuffle_epsilon

        if (rounds, sample_rate, relation) != (1, 1.0, "substitute"):
            record = _composed(
                "composed_shuffle_epsilon",
                bound,
                eps0=eps0,
                n=n,
                delta=delta,
                k=k,
                rounds=rounds,
                sample_rate=sample_rate,
                relation=relation,
            )
            emit(record, as_json=as_json, title="composed shuffle epsilon")
            return
        if bound == "all":
            shuffle_epsilon(eps0=eps0, n=n, delta=delta, k=k, bound="feldman2021")  # validates
            results = _run_all(
                shuffle_epsilon, SHUFFLE_BOUNDS, as_json, eps0=eps0, n=n, delta=delta, k=k
            )
            emit(
                _records(results),
                as_json=as_json,
                title=f"epsilon at delta={delta:g}, eps0={eps0:g}, n={n}, k={k or 'any'}",
                columns=_COLUMNS,
                notes=_table_notes(results, "epsilon"),
            )
            return
        result = shuffle_epsilon(eps0=eps0, n=n, delta=delta, k=k, bound=bound)
        emit(_clean(result.to_dict()), as_json=as_json, title="shuffle epsilon")

    @shuffle.command("delta")
    def delta_cmd(
        eps0: Eps0,
        n: Users,
        epsilon: Annotated[float, epsilon_option(help="Target epsilon.", zero=True)],
        mechanism: MechanismName = None,
        d: DomainD = None,
        k: DomainK = None,
        bound: BoundName = "best",
        as_json: JsonFlag = False,
        rounds: Rounds = 1,
        sample_rate: SampleRate = 1.0,
        relation: Relation = "substitute",
    ) -> None:
        """Delta after shuffling at a given epsilon."""
        if mechanism is not None:
            res = _mechanism("mechanism_delta", mechanism, d, eps0=eps0, n=n, epsilon=epsilon, k=k)
            emit(_clean(res.to_dict()), as_json=as_json, title=f"shuffle delta ({mechanism})")
            return
        from crowdhide.accounting.shuffle import SHUFFLE_BOUNDS, shuffle_delta

        if (rounds, sample_rate, relation) != (1, 1.0, "substitute"):
            record = _composed(
                "composed_shuffle_delta",
                bound,
                eps0=eps0,
                n=n,
                epsilon=epsilon,
                k=k,
                rounds=rounds,
                sample_rate=sample_rate,
                relation=relation,
            )
            emit(record, as_json=as_json, title="composed shuffle delta")
            return
        if bound == "all":
            shuffle_delta(eps0=eps0, n=n, epsilon=epsilon, k=k, bound="feldman2021")
            results = _run_all(
                shuffle_delta, SHUFFLE_BOUNDS, as_json, eps0=eps0, n=n, epsilon=epsilon, k=k
            )
            emit(
                _records(results),
                as_json=as_json,
                title=f"delta at epsilon={epsilon:g}, eps0={eps0:g}, n={n}, k={k or 'any'}",
                columns=_COLUMNS,
                notes=_table_notes(results, "delta"),
            )
            return
        result = shuffle_delta(eps0=eps0, n=n, epsilon=epsilon, k=k, bound=bound)
        emit(_clean(result.to_dict()), as_json=as_json, title="shuffle delta")

    @shuffle.command("calibrate")
    def calibrate_cmd(
        epsilon: Annotated[float, epsilon_option(help="Target epsilon.")],
        delta: Delta,
        n: Annotated[
            int | None,
            int_option("--n", "Number of users (-> largest eps0).", low=1, high=MAX_N),
        ] = None,
        eps0: Annotated[
            float | None,
            real_option(
                "--eps0",
                "Local eps0 instead of --n (-> smallest n).",
                low=0.0,
                high=MAX_EPSILON,
                low_open=True,
            ),
        ] = None,
        k: DomainK = None,
        allow_unmet: AllowUnmetFlag = False,
        as_json: JsonFlag = False,
    ) -> None:
        """Largest eps0 for a target (epsilon, delta, n) — or smallest n given --eps0.

        Exit code 3 if the target is out of reach (unless --allow-unmet).
        """
        from crowdhide.accounting.shuffle import calibrate_eps0, calibrate_n
        from crowdhide.errors import UnmetTargetError

        if (n is None) == (eps0 is None):
            raise ValueError("give exactly one of --n (calibrate eps0) or --eps0 (calibrate n)")
        if n is not None:
            with spinner(not as_json, "calibrating eps0"):
                result = calibrate_eps0(epsilon=epsilon, delta=delta, n=n, k=k)
            solved = "eps0"
        else:
            assert eps0 is not None
            solved = "n"
            try:
                with spinner(not as_json, "calibrating n"):
                    result = calibrate_n(epsilon=epsilon, delta=delta, eps0=eps0, k=k)
            except UnmetTargetError as exc:
                record = {
                    "solved_for": solved,
                    "target_epsilon": epsilon,
                    "target_delta": delta,
                    "target_met": False,
                    "reason": str(exc),
                }
                emit(record, as_json=as_json, title=f"calibrated {solved}")
                finish_target(False, str(exc), allow_unmet=allow_unmet, as_json=as_json)
                return
        met = bool(result.is_certificate and result.epsilon <= epsilon)
        record = {
            "solved_for": solved,
            "target_epsilon": epsilon,
            "target_delta": delta,
            "target_met": met,
            **_clean(result.to_dict()),
        }
        emit(record, as_json=as_json, title=f"calibrated {solved}")
        finish_target(
            met,
            f"certified epsilon={result.epsilon:.6g} vs target epsilon={epsilon:g}",
            allow_unmet=allow_unmet,
            as_json=as_json,
        )

    @shuffle.command("plot")
    def plot_cmd(
        eps0: Eps0,
        delta: Delta,
        out: Annotated[Path, typer.Option("--out", help="PNG file to write.")],
        k: DomainK = None,
        n_min: Annotated[int, int_option("--n-min", "Smallest n.", low=1, high=MAX_N)] = 100,
        n_max: Annotated[int, int_option("--n-max", "Largest n.", low=1, high=MAX_N)] = 10**7,
        points: Annotated[int, int_option("--points", "Points per curve.", low=2, high=200)] = 16,
        as_json: JsonFlag = False,
    ) -> None:
        """Plot epsilon against n for every bound (PNG)."""
        from crowdhide.accounting.shuffle import epsilon_vs_n

        check_output_file(out)
        if out.suffix.lower() not in _PLOT_SUFFIXES:
            raise OutputPathError(
                f"--out must end in one of {', '.join(_PLOT_SUFFIXES)}, got {str(out)!r}"
            )
        with spinner(not as_json, f"{points} points per bound"):
            data = epsilon_vs_n(
                eps0=eps0, delta=delta, k=k, n_min=n_min, n_max=n_max, points=points, out=out
            )
        record = {"out": str(out), "eps0": eps0, "delta": delta, "k": k, **data}
        if as_json:
            emit(record, as_json=True)
            return
        rows = [
            {"bound": name, **{f"n={n}": v for n, v in zip(data["n"], vals, strict=True)}}
            for name, vals in data["epsilon"].items()
        ]
        emit(
            [
                {"bound": r["bound"], "points": sum(1 for v in r.values() if _finite(v))}
                for r in rows
            ],
            as_json=False,
            title=f"wrote {out}",
        )


def _finite(value: Any) -> bool:
    return isinstance(value, float) and math.isfinite(value)


def _table_notes(results: list[Any], key: str) -> list[str]:
    certs = [r for r in results if r.is_certificate and _finite(getattr(r, key))]
    if not certs:
        return []
    best = min(certs, key=lambda r: getattr(r, key))
    notes = [
        f"best valid upper bound: {best.bound} ({key} = {getattr(best, key):.6g}); "
        "kind 'lower' rows are lower bounds, not guarantees."
    ]
    low = getattr(best, f"{key}_lower")
    if _finite(low) and low > 0.0:
        notes.append(
            f"the truth lies in [{low:.6g}, {getattr(best, key):.6g}] "
            f"({best.lower_bound}; certificate / lower bound = {getattr(best, key) / low:.4g})"
        )
    return notes
