"""Privacy against load around a run's chosen countermeasures (Fig. 8 style plots).

Figure and theorem numbers are those of Ladjel, Anciaux, Bellet and Scerri (the plan's
end-to-end ε is the sum over the clusters of a data path, their Theorem 1).

:func:`tradeoff_curve` gives the whole-plan ε of scramblers (n, d) against their costs;
:func:`run_tradeoff` varies the first data route of a certified plan around its chosen
setting (the other routes' certified ε added, as Theorem 1 composes a path) and
:func:`plot_tradeoff` draws the two pictures of ``crowdhide run``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crowdhide._extras import require
from crowdhide._tables import Rows
from crowdhide.accounting.scrambler.local import local_randomizer_epsilon
from crowdhide.accounting.statement import format_bound
from crowdhide.plans.certify import CountermeasureAccountant
from crowdhide.plans.countermeasure_costs import route_costs
from crowdhide.plans.planner import CountermeasureChoice

__all__ = ["Tradeoff", "plot_tradeoff", "run_tradeoff", "tradeoff_curve"]


def tradeoff_curve(
    *,
    sources: int,
    targets: int,
    clusters_per_path: int,
    delta: float,
    sigma: float,
    ns: Sequence[int],
    ds: Sequence[int],
    accountant: CountermeasureAccountant,
) -> Rows:
    """Whole-plan ε against costs for scramblers (n, d) at sampling σ (Fig. 8 style).

    Each cluster gets δ/k; the plan's ε is k times the cluster's ε (Theorem 1).
    """
    k = max(1, clusters_per_path)
    rows = Rows()
    for n in ns:
        for d in ds:
            cert = accountant.scrambled(
                targets=targets,
                sigma=sigma,
                n=min(n, sources),
                dummies=d,
                delta=delta / k,
                capped=False,
            )
            costs = route_costs(sources=sources, targets=targets, sigma=sigma, n=n, dummies=d)
            rows.append(
                {
                    "sigma": sigma,
                    "n": n,
                    "d": d,
                    "epsilon_cluster": cert.epsilon,
                    "epsilon": k * cert.epsilon,
                    "delta": k * cert.delta,
                    "method": cert.source,
                    "overhead": costs.overhead,
                    "added_messages": costs.added_messages,
                    "channels_per_scrambler": costs.channels_per_scrambler,
                    "extra_consents": costs.extra_consents,
                }
            )
    return rows


def _local_curve(*, sources: int, targets: int, clusters_per_path: int, sigma: float) -> Rows:
    """Plan ε against costs for local flooding with 0..T−1 dummies (no scramblers)."""
    rows = Rows()
    for dl in range(targets):
        eps = (
            local_randomizer_epsilon(targets=targets, sigma=sigma, dummies=dl)
            if sigma > 0
            else math.inf
        )
        costs = route_costs(sources=sources, targets=targets, sigma=sigma, local_dummies=dl)
        rows.append(
            {
                "sigma": sigma,
                "n": None,
                "d": dl,
                "epsilon": clusters_per_path * eps,
                "overhead": costs.overhead,
                "channels_per_scrambler": dl + 1,
                "method": "theorem2",
            }
        )
    return rows


@dataclass(frozen=True)
class Tradeoff:
    """One data route's curve around the chosen setting, ready to plot.

    ``rows`` are the points (``tradeoff.csv``); ``series`` groups them per curve; ``chosen``
    is the run's setting (``None`` when it is not among the points) and ``epsilon`` the
    run's certified ε.
    """

    rows: list[dict[str, Any]]
    series: Mapping[Any, list[dict[str, Any]]]
    label: str
    chosen: dict[str, Any] | None
    epsilon: float
    delta: float
    title: str


def run_tradeoff(
    *,
    sources: int,
    targets: int,
    clusters_per_path: int,
    choice: CountermeasureChoice,
    others: float,
    epsilon: float,
    delta: float,
    accountant: CountermeasureAccountant,
    title: str,
) -> Tradeoff:
    """Points around ``choice`` (scramblers: n × d grid; else local flooding 0..T−1).

    A point's ``epsilon`` is its cluster's ε plus ``others`` (the certified ε of the
    path's other clusters, Theorem 1), so the chosen point is the certificate itself
    (``epsilon``, the plan's certified ε at ``delta``).
    """
    k = max(1, clusters_per_path)
    if choice.n is not None:
        ns = sorted({choice.n, max(10, choice.n // 4), min(sources, choice.n * 4)})
        ds = sorted({0, 10, 50, 100, 200, 500, choice.d})
        rows = tradeoff_curve(
            sources=sources,
            targets=targets,
            clusters_per_path=k,
            delta=delta,
            sigma=choice.sigma,
            ns=ns,
            ds=ds,
            accountant=accountant,
        )
        series: dict[Any, list[dict[str, Any]]] = {n: [r for r in rows if r["n"] == n] for n in ns}
        label = "sources per scrambler n"
    else:
        rows = _local_curve(
            sources=sources, targets=targets, clusters_per_path=k, sigma=choice.sigma
        )
        series, label = {"local": rows}, "local flooding"
    for r in rows:
        r["epsilon"] = r.get("epsilon_cluster", r["epsilon"] / k) + others
    dummies = choice.d if choice.n is not None else choice.local_dummies
    chosen = [r for r in rows if r["d"] == dummies and r["n"] == choice.n]
    return Tradeoff(
        rows=rows,
        series=series,
        label=label,
        chosen=chosen[0] if chosen else None,
        epsilon=epsilon,
        delta=delta,
        title=title,
    )


_PICTURES = (
    ("overhead", "network load (messages / unprotected messages)", "privacy_vs_network_load.png"),
    (
        "channels_per_scrambler",
        "individual load (channels per node)",
        "privacy_vs_individual_load.png",
    ),
)


def plot_tradeoff(tradeoff: Tradeoff, out: Path) -> list[Path]:
    """Draw ε against network load and against individual load; return the PNG paths."""
    require("matplotlib", purpose="the privacy/load plots of a run").use("Agg")
    import matplotlib.pyplot as plt

    files: list[Path] = []
    for key, xlabel, name in _PICTURES:
        fig, ax = plt.subplots(figsize=(5.5, 4))
        for n, pts in tradeoff.series.items():
            finite = [p for p in pts if math.isfinite(p["epsilon"])]
            ax.plot(
                [p[key] for p in finite],
                [p["epsilon"] for p in finite],
                marker="o",
                label=f"{tradeoff.label}={n}"
                if tradeoff.label != "local flooding"
                else tradeoff.label,
            )
        if tradeoff.chosen is not None and math.isfinite(tradeoff.chosen["epsilon"]):
            ax.scatter(
                [tradeoff.chosen[key]],
                [tradeoff.epsilon],
                s=120,
                facecolors="none",
                edgecolors="red",
                label=f"chosen: certified ε={format_bound(tradeoff.epsilon, digits=3)}",
                zorder=5,
            )
        ax.set_xlabel(xlabel)
        ax.set_ylabel(f"privacy loss ε of the plan (δ={tradeoff.delta:g})")
        ax.set_title(tradeoff.title, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = out / name
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path)
    return files
