"""Ladjel, Anciaux, Bellet, Scerri, Figures 8 and 9: privacy against network load, individual
load, consents and utility for the Aggregate and K-means plans (Section V-B).

Privacy is the whole plan's ε at δ = 1e-4 (Theorem 1: each of the k data-dependent clusters
on a path gets δ/k, the plan's ε is k·ε_i, k = G grouping sets or I iterations), certified by
the countermeasure accountant (:func:`crowdhide.plans.certify.default_accountant`). Costs
follow the paper's cost model with the corrected utility
``S_t = S_eff/(1−σ+σ/T)`` sources to keep ``S_eff`` real tuples. The paper gives no numbers
for these figures, so the comparison checks its qualitative statements, and one configuration
is also executed by the engine to check the message count against the cost formula.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from crowdhide._extras import require
from crowdhide._output import write_csv, write_json
from crowdhide.experiments._formatting import legend_below
from crowdhide.experiments.claims import Claim, Verdict, all_of, better, match, match_all
from crowdhide.experiments.registry import ExperimentResult, experiment
from crowdhide.plans.certify import CountermeasureAccountant, default_accountant
from crowdhide.plans.countermeasure_costs import route_costs

T_AGG = 20
DELTA = 1e-4
S_EFF = 10_000


def _keep(sigma: float, T: int) -> float:
    return 1.0 - sigma + sigma / T


def _point(
    acct: CountermeasureAccountant,
    *,
    T: int,
    k: int,
    sigma: float,
    n: int,
    d: int,
    sources: int,
    baseline: int,
    cache: dict[tuple[Any, ...], Any],
) -> dict[str, Any]:
    key = (T, k, sigma, n, d)
    if key not in cache:
        cache[key] = acct.scrambled(
            targets=T, sigma=sigma, n=n, dummies=d, delta=DELTA / k, capped=False
        )
    cert = cache[key]
    costs = route_costs(sources=sources, targets=T, sigma=sigma, n=n, dummies=d)
    return {
        "T": T,
        "k": k,
        "sigma": sigma,
        "n": n,
        "d": d,
        "sources": sources,
        "epsilon": k * cert.epsilon,
        "delta": DELTA,
        "method": cert.source,
        "network_load": k * costs.messages / (k * baseline),
        "channels": costs.channels_per_scrambler,
        "extra_consents": sources - baseline if sources > baseline else 0,
        "utility": sources * _keep(sigma, T),
    }


def _fig8_rows(acct: CountermeasureAccountant, quick: bool) -> list[dict[str, Any]]:
    cache: dict[tuple[Any, ...], Any] = {}
    ds = [0, 50, 200] if quick else [0, 10, 20, 50, 100, 200, 500, 1000]
    ns = [20, 100, 500] if quick else [10, 20, 50, 100, 200, 500]
    rows: list[dict[str, Any]] = []

    def agg(
        panel: str, curve: str, sigma: float, n: int, d: int, sources: int | None = None
    ) -> None:
        S_t = sources if sources is not None else math.ceil(S_EFF / _keep(sigma, T_AGG))
        point = _point(
            acct, T=T_AGG, k=1, sigma=sigma, n=n, d=d, sources=S_t, baseline=S_EFF, cache=cache
        )
        rows.append({"panel": panel, "curve": curve, **point})

    for sigma, n in ((0.1, 100), (0.1, 500), (0.3, 100)):  # (a) network load, d varies
        for d in ds:
            agg("8a", f"sigma={sigma}, n={n}", sigma, n, d)
    for d in [50] if quick else [50, 200]:  # (b) individual load, n varies
        for n in ns:
            agg("8b", f"sigma=0.1, d={d}", 0.1, n, d)
    sigmas = [0.05, 0.2, 0.4] if quick else [0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5]
    for overhead in (3.0, 4.0):  # (c) consents at fixed network load, n = 100
        for sigma in sigmas:
            S_t = math.ceil(S_EFF / _keep(sigma, T_AGG))
            scramblers = -(-S_t // 100)
            d = int((overhead * S_EFF - 2 * S_t) // scramblers)
            if d >= 0:
                agg("8c", f"load={overhead:g}x", sigma, 100, d)
    for d in [0, 200] if quick else [0, 50, 200]:  # (d) utility at S = 10k consents
        for sigma in sigmas:
            agg("8d", f"d={d}", sigma, 100, d, sources=S_EFF)
    s_km, T_km, I = 60_000, 10, 10  # (e, f) K-means on MNIST, sigma = 0.9, I = 10
    for n in (100, 500):
        for d in ds:
            point = _point(
                acct, T=T_km, k=I, sigma=0.9, n=n, d=d, sources=s_km, baseline=s_km, cache=cache
            )
            rows.append({"panel": "8e", "curve": f"sigma=0.9, n={n}", **point})
    for n in ns:
        point = _point(
            acct, T=T_km, k=I, sigma=0.9, n=n, d=50, sources=s_km, baseline=s_km, cache=cache
        )
        rows.append({"panel": "8f", "curve": "sigma=0.9, d=50", **point})
    return rows


def _fig9_rows(acct: CountermeasureAccountant, quick: bool) -> list[dict[str, Any]]:
    cache: dict[tuple[Any, ...], Any] = {}
    ds = [0, 50, 200] if quick else [0, 10, 20, 50, 100, 200, 500, 1000]
    rows = []
    sigma, n = 0.1, 100
    S_t = math.ceil(S_EFF / _keep(sigma, T_AGG))
    for G in (1, 2, 3, 4):
        for d in ds:
            point = _point(
                acct, T=T_AGG, k=G, sigma=sigma, n=n, d=d, sources=S_t, baseline=S_EFF, cache=cache
            )
            rows.append({"panel": "9", "curve": f"G={G}", **point})
    return rows


def _plot(
    rows: list[dict[str, Any]],
    panels: Sequence[tuple[str, str, str]],
    path: Path,
    shape: tuple[int, int],
) -> Path:
    require("matplotlib", purpose="the figures of crowdhide reproduce").use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(*shape, figsize=(5 * shape[1], 3.8 * shape[0]), squeeze=False)
    for ax, (panel, xkey, title) in zip(axes.ravel(), panels, strict=True):
        sub = [r for r in rows if r["panel"] == panel]
        for curve in dict.fromkeys(r["curve"] for r in sub):
            pts = sorted((r for r in sub if r["curve"] == curve), key=lambda r: r[xkey])
            pts = [p for p in pts if math.isfinite(p["epsilon"])]
            ax.plot(
                [p[xkey] for p in pts], [p["epsilon"] for p in pts], marker="o", ms=3, label=curve
            )
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(xkey.replace("_", " "))
        ax.set_ylabel(f"ε (δ={DELTA:g})")
        ax.grid(alpha=0.3)
        legend_below(ax)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _engine_check(quick: bool) -> dict[str, Any]:
    """Execute one Fig. 8(a) configuration and compare messages with the cost formula."""
    from crowdhide.backends import execute
    from crowdhide.plans import protect
    from crowdhide.plans.aggregate import AggregateQuery, aggregate_plan
    from crowdhide.plans.data import synth_aggregate

    sigma, n, d = 0.1, 100, 50
    S_t = math.ceil((1000 if quick else S_EFF) / _keep(sigma, T_AGG))
    table = synth_aggregate(rows=S_t, attributes=1, intervals=T_AGG, rng=0)
    setup = aggregate_plan(
        table, AggregateQuery.from_sql("SELECT g1, AVG(v) FROM D GROUP BY g1"), compute_nodes=T_AGG
    )
    run = execute(protect(setup.plan, sigma=sigma, per_scrambler=n, dummies=d), rng=0)
    stats = run.routes["S->C0"]
    formula = route_costs(sources=S_t, targets=T_AGG, sigma=sigma, n=n, dummies=d)
    return {
        "sources": S_t,
        "messages_measured": stats.messages,
        "messages_formula": formula.messages,
        "real_used": stats.real_delivered,
        "real_expected": formula.expected_used,
    }


def _first(rows: list[dict[str, Any]], **match: Any) -> dict[str, Any] | None:
    for r in rows:
        if all(r.get(k) == v for k, v in match.items()):
            return r
    return None


def _fig8(out_dir: Path, quick: bool) -> ExperimentResult:
    acct = default_accountant()
    rows = _fig8_rows(acct, quick)
    files = [write_csv(out_dir / "fig8.csv", rows)]
    panels = [
        ("8a", "network_load", "(a) Aggregate: privacy vs network load (G=1)"),
        ("8b", "channels", "(b) Aggregate: privacy vs individual load"),
        ("8c", "extra_consents", "(c) Aggregate: privacy vs consents"),
        ("8d", "utility", "(d) Aggregate: privacy vs utility (S=10k)"),
        ("8e", "network_load", "(e) K-means: privacy vs global load"),
        ("8f", "channels", "(f) K-means: privacy vs individual load"),
    ]
    files.append(_plot(rows, panels, out_dir / "fig8.png", (2, 3)))
    check = _engine_check(quick)
    lines = _fig8_comparison(rows, acct.name, check)
    files.append(write_json(out_dir / "fig8_engine_check.json", check))
    a = _panel_8a(rows)
    data = {
        "accountant": acct.name,
        "engine_check": check,
        "panel_8a_sigma0.1_n100": [
            {"d": r["d"], "epsilon": r["epsilon"], "network_load": r["network_load"]} for r in a
        ],
    }
    return ExperimentResult(
        files=tuple(files),
        comparison=tuple(lines),
        data=data,
        verdicts=tuple(_fig8_verdicts(rows, check)),
    )


PAPER = "Ladjel et al."


def _fig8_verdicts(rows: list[dict[str, Any]], check: dict[str, Any]) -> list[Verdict]:
    """Fig. 8's qualitative statements (Sec. V-B), the cost formula against the engine's
    message count, and the recomputed reference ε."""
    return [
        *_fig8a_verdicts(rows),
        *_fig8b_verdicts(rows),
        _cost_verdict(check),
        *_reference_verdicts(rows),
    ]


def _fig8a_verdicts(rows: list[dict[str, Any]]) -> list[Verdict]:
    """Fig. 8(a): overhead without dummies, diminishing gain of dummies, ε <= 1 reachable."""
    a = _panel_8a(rows)
    eps = [r["epsilon"] for r in a]
    ds = [r["d"] for r in a]
    mid = len(ds) // 2
    early = (eps[0] - eps[mid]) / max(ds[mid] - ds[0], 1)
    late = (eps[mid] - eps[-1]) / max(ds[-1] - ds[mid], 1)
    good = [r for r in rows if r["panel"] == "8a" and r["epsilon"] <= 1.0]
    cheapest = min((r["network_load"] for r in good), default=math.inf)
    where = "Sec. V-B, Fig. 8a"
    return [
        better(
            Claim(PAPER, where, "network overhead exists even without dummies"),
            low=1.0,
            high=a[0]["network_load"],
            what="network load at d = 0 vs 1× (no countermeasure)",
        ),
        all_of(
            Claim(PAPER, where, "ε decreases with d, the first dummies matter most"),
            [
                (
                    "ε non-increasing in d",
                    all(y <= x + 1e-12 for x, y in itertools.pairwise(eps)),
                ),
                (f"gain/dummy {early:.3g} (first) > {late:.3g} (later)", early > late),
            ],
            what=f"σ=0.1, n=100, d={ds[0]}..{ds[-1]}",
        ),
        all_of(
            Claim(PAPER, where, "ε <= 1 is reachable with an acceptable network load"),
            [(f"cheapest ε <= 1 at {cheapest:.3g}× load", bool(good) and cheapest <= 10.0)],
            what="some grid point with ε <= 1 at <= 10× load",
            reason="no point of the grid reaches ε <= 1 at <= 10× load",
        ),
    ]


def _fig8b_verdicts(rows: list[dict[str, Any]]) -> list[Verdict]:
    """Fig. 8(b): the gain from more channels diminishes (judged with >= 3 points)."""
    b = [r for r in rows if r["panel"] == "8b" and r["curve"] == "sigma=0.1, d=50"]
    if len(b) < 3:
        return []
    half = len(b) // 2
    gain_1 = (b[0]["epsilon"] - b[half]["epsilon"]) / max(b[half]["channels"] - b[0]["channels"], 1)
    gain_2 = (b[half]["epsilon"] - b[-1]["epsilon"]) / max(
        b[-1]["channels"] - b[half]["channels"], 1
    )
    return [
        all_of(
            Claim(PAPER, "Sec. V-B, Fig. 8b", "the gain from more channels diminishes"),
            [(f"gain/channel {gain_1:.3g} (first) > {gain_2:.3g} (later)", gain_1 > gain_2)],
            what="σ=0.1, d=50",
        )
    ]


def _cost_verdict(check: dict[str, Any]) -> Verdict:
    """Sec. V-A: the engine's message count equals the cost formula."""
    return match(
        Claim(PAPER, "Sec. V-A (cost model)", "messages of a plan = the cost formula"),
        measured=float(check["messages_measured"]),
        paper=float(check["messages_formula"]),
        rtol=0.0,
        what=f"engine messages ({check['sources']} sources) vs formula",
        reason="the engine sends a different number of messages",
    )


def _reference_verdicts(rows: list[dict[str, Any]]) -> list[Verdict]:
    """The technical note's ε of the Section-V configurations present in ``rows``."""
    refs = [
        (f"σ={sg} n={n} d={d}", hit["epsilon"], ref)
        for (sg, n, d), ref in NOTE_REFERENCE.items()
        if (
            hit := next(
                (
                    r
                    for r in rows
                    if r["panel"] in ("8a", "8b") and (r["sigma"], r["n"], r["d"]) == (sg, n, d)
                ),
                None,
            )
        )
        is not None
    ]
    if not refs:
        return []
    return [
        match_all(
            Claim("technical note", "Lemma 2, T = 20, δ = 1e-4", "ε of Section-V configurations"),
            refs,
            rtol=1e-3,
            what="certified ε",
            reason="the accountant differs from the note",
        )
    ]


def _panel_8a(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Fig. 8(a) curve σ = 0.1, n = 100 (network load as d grows)."""
    return [r for r in rows if r["panel"] == "8a" and r["curve"] == "sigma=0.1, n=100"]


def _fig8_comparison(
    rows: list[dict[str, Any]], accountant: str, check: dict[str, Any]
) -> list[str]:
    """The paper's qualitative statements on Fig. 8 checked, then the engine's message count
    and independently recomputed reference values."""
    methods = sorted({r["method"] for r in rows})
    a = _panel_8a(rows)
    ds = [r["d"] for r in a]
    eps = [r["epsilon"] for r in a]
    lines = [
        f"accountant: {accountant} (methods {', '.join(methods)}); paper: no numbers, qualitative",
        f"8a overhead at d=0 (scramblers alone): {a[0]['network_load']:.2f}x "
        f"(paper: 'network overhead exists even without dummy') -> "
        f"{'holds' if a[0]['network_load'] > 1 else 'differs'}",
        f"8a sigma=0.1 n=100: eps(d={ds[0]})={eps[0]:.3f}, eps(d={ds[len(ds) // 2]})="
        f"{eps[len(ds) // 2]:.3f}, eps(d={ds[-1]})={eps[-1]:.3f} "
        f"(paper: eps decreases with d, first dummies matter most)",
    ]
    mid = len(ds) // 2
    early = (eps[0] - eps[mid]) / max(ds[mid] - ds[0], 1)
    late = (eps[mid] - eps[-1]) / max(ds[-1] - ds[mid], 1)
    lines.append(
        f"8a eps gain per dummy: {early:.4f} for the first {ds[mid]} dummies vs {late:.4f} "
        f"after -> {'holds' if early > late else 'differs'} (first dummies matter most)"
    )
    good = [r for r in rows if r["panel"] == "8a" and r["epsilon"] <= 1.0]
    if good:
        best = min(good, key=lambda r: r["network_load"])
        lines.append(
            f"8a cheapest eps<=1: {best['curve']} d={best['d']} at {best['network_load']:.2f}x "
            "(paper: 'eps <= 1 with acceptable network load')"
        )
    else:
        lines.append("8a: no configuration reaches eps <= 1 on this grid (paper: reachable)")
    b = [r for r in rows if r["panel"] == "8b" and r["curve"] == "sigma=0.1, d=50"]
    lines.append(
        "8b eps vs channels: "
        + ", ".join(f"{r['channels']}->{r['epsilon']:.3f}" for r in b)
        + " (paper: gains diminish; tens to hundreds of channels suffice)"
    )
    c = [r for r in rows if r["panel"] == "8c" and r["curve"] == "load=4x"]
    lines.append(
        "8c at 4x load, eps vs extra consents: "
        + ", ".join(f"{r['extra_consents']}->{r['epsilon']:.3f}" for r in c)
        + " (paper: raising sigma beats raising d)"
    )
    e = [r for r in rows if r["panel"] == "8e"]
    lines.append(
        "8e K-means (I=10, sigma=0.9): eps "
        + ", ".join(f"n={r['n']},d={r['d']}->{r['epsilon']:.3f}" for r in e[:4])
    )
    lines.append(
        f"engine check ({check['sources']} sources, sigma=0.1, n=100, d=50): messages "
        f"{check['messages_measured']} vs formula {check['messages_formula']}; real tuples "
        f"{check['real_used']} vs expected {check['real_expected']:.0f}"
    )
    return lines + _note_checks(rows)


#: Reference values recomputed independently for Section-V-like configurations of the
#: paper (Lemma 2 with exact E, T = 20, per-cluster delta = 1e-4) — not printed
#: in the paper: (σ, n, d) -> ε.
NOTE_REFERENCE = {
    (0.1, 100, 0): 4.5805,
    (0.1, 100, 50): 3.1989,
    (0.1, 100, 200): 1.5632,
    (0.3, 100, 50): 1.7546,
    (0.1, 500, 50): 2.8095,
}


def _note_checks(rows: list[dict[str, Any]]) -> list[str]:
    lines = []
    for (sigma, n, d), ref in NOTE_REFERENCE.items():
        hit = next(
            (
                r
                for r in rows
                if r["panel"] in ("8a", "8b") and (r["sigma"], r["n"], r["d"]) == (sigma, n, d)
            ),
            None,
        )
        if hit is not None:
            lines.append(
                f"reference check sigma={sigma} n={n} d={d}: eps={hit['epsilon']:.4f} "
                f"vs {ref} ({hit['method']})"
            )
    return lines


@experiment(
    "ladjel-fig8",
    "Ladjel et al. Fig. 8: privacy vs load, channels, consents, utility",
    aliases=("seed000-fig8",),
)
def run_fig8(out_dir: Path, *, rng: np.random.Generator, quick: bool) -> ExperimentResult:
    """Figure 8 (a)-(f) of Ladjel et al.; see the module docstring."""
    del rng  # deterministic: certificates and cost formulas (engine check uses fixed seeds)
    return _fig8(out_dir, quick)


@experiment(
    "ladjel-fig9",
    "Ladjel et al. Fig. 9: Aggregate privacy vs network load for G = 1..4",
    aliases=("seed000-fig9",),
)
def run_fig9(out_dir: Path, *, rng: np.random.Generator, quick: bool) -> ExperimentResult:
    """Figure 9 of Ladjel et al.: the Aggregate trade-off for 1 to 4 grouping sets."""
    del rng
    acct = default_accountant()
    rows = _fig9_rows(acct, quick)
    files = [write_csv(out_dir / "fig9.csv", rows)]
    files.append(
        _plot(
            rows,
            [("9", "network_load", "Fig. 9: Aggregate, privacy vs network load")],
            out_dir / "fig9.png",
            (1, 1),
        )
    )
    lines = [f"accountant: {acct.name}; paper: no numbers (qualitative)"]
    for G in (1, 2, 3, 4):
        pts = [r for r in rows if r["curve"] == f"G={G}"]
        lines.append(
            f"G={G}: eps from {pts[0]['epsilon']:.3f} (d={pts[0]['d']}, "
            f"{pts[0]['network_load']:.2f}x) to {pts[-1]['epsilon']:.3f} (d={pts[-1]['d']}, "
            f"{pts[-1]['network_load']:.2f}x)"
        )
    one = _first(rows, curve="G=1", d=rows[-1]["d"])
    four = _first(rows, curve="G=4", d=rows[-1]["d"])
    if one and four:
        lines.append(
            f"eps grows with G at equal load: G=4/G=1 = {four['epsilon'] / one['epsilon']:.2f} "
            "(Theorem 1 gives ~G times the per-cluster eps at delta/G)"
        )
    verdicts = []
    if one and four:
        verdicts.append(
            better(
                Claim(
                    PAPER, "Sec. V-B, Fig. 9, Thm 1", "ε grows with the number G of grouping sets"
                ),
                low=one["epsilon"],
                high=four["epsilon"],
                what=f"ε at G=1 vs G=4 (d={one['d']})",
                reason="more grouping sets do not cost privacy",
            )
        )
    return ExperimentResult(
        files=tuple(files),
        comparison=tuple(lines),
        data={"accountant": acct.name, "rows": len(rows)},
        verdicts=tuple(verdicts),
    )
