"""``scrambler epsilon`` and ``scrambler delta``: the library call and its output, without
typer (issue 32: these queries start without it, see :mod:`crowdhide.cli._fast`; the Typer
commands in :mod:`crowdhide.cli.scrambler` call the same :func:`answer`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from crowdhide.cli._emit import emit
from crowdhide.cli._engine_progress import spinner

if TYPE_CHECKING:
    from crowdhide.accounting.statement import PrivacyStatement

__all__ = ["answer", "query", "record"]

_COLUMNS = ["source", "kind", "epsilon", "delta", "is_certificate", "notes"]


def record(statement: PrivacyStatement, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The statement's JSON form, with whether it is a certificate, its notes joined for
    the table and the ``extra`` inputs it was computed with."""
    out = statement.to_dict()
    out["inputs"] |= extra or {}
    for key in ("epsilon", "delta"):  # a bound that does not apply has no numbers
        if math.isnan(out[key]):
            out[key] = None
    out["is_certificate"] = statement.is_certificate
    out["notes"] = "; ".join(statement.notes)
    return out


def query(
    *,
    targets: int,
    sigma: float,
    n: int,
    dummies: int,
    capped: bool,
    method: str,
    samples: int,
    seed: int,
    as_json: bool,
    **target: float,
) -> None:
    """``scrambler epsilon`` (``target`` is ``delta=δ``) or ``scrambler delta``
    (``epsilon=ε``) with the commands' options: :func:`answer` of them."""
    common: dict[str, Any] = {"targets": targets, "sigma": sigma, "n": n, "dummies": dummies}
    common.update(target)
    common.update(capped=capped, samples=samples, rng=seed)
    answer(method, common, as_json=as_json)


def answer(method: str, common: dict[str, Any], *, as_json: bool) -> None:
    """Run one scrambler query with evaluator ``method`` and print it: ``common`` holds the
    accountant's keyword arguments, ``delta`` (ε(δ)) or ``epsilon`` (δ(ε)) among them, in
    the order ``all`` echoes them.

    The Monte-Carlo ``samples`` and ``seed`` join each statement's echoed ``inputs`` when
    that evaluator runs; ``all`` prints every input under its table (issue 28: at ε = 50
    every row reads δ = 0, so a changed ``--dummies`` printed the same table)."""
    # The accountant imports numpy: loaded when a query runs, not when the app is built.
    from crowdhide.accounting.scrambler import accountant

    one: Callable[..., PrivacyStatement]
    every: Callable[..., Sequence[PrivacyStatement]]
    if "delta" in common:
        what, one, every = "ε(δ)", accountant.scrambler_epsilon, accountant.scrambler_epsilon_all
    else:
        what, one, every = "δ(ε)", accountant.scrambler_delta, accountant.scrambler_delta_all
    mc = {"samples": common["samples"], "seed": common["rng"]}
    if method == "all":
        with spinner(not as_json, f"scrambler {what}: every evaluator"):
            rows = [record(s, mc if s.source == "montecarlo" else {}) for s in every(**common)]
        shown = {key: value for key, value in common.items() if key not in ("rng", "samples")}
        inputs = ", ".join(f"{key}={value}" for key, value in (shown | mc).items())
        title = f"scrambler {what}, every evaluator"
        emit(rows, as_json=as_json, title=title, columns=_COLUMNS, notes=[f"inputs: {inputs}"])
        return
    with spinner(not as_json, f"scrambler {what}: {method}"):
        statement = one(method=method, **common)
    out = record(statement, mc if method == "montecarlo" else {})
    emit(out, as_json=as_json, title=f"scrambler {what}")
