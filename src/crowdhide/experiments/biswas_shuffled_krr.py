"""Biswas, Jung, Palamidessi, "Tight differential privacy guarantees for the shuffle model with
k-randomized response": the shuffled k-RR bound and histogram utility.

* ``biswas-table2`` — Table II: the paper's δ̂ (eq. (6), published ``v'_s``) reproduced,
  side by side with the corrected formula, with a rigorous lower bound on the true δ of
  shuffled k-RR (the exact divergence of the x0-count — a post-processing of the histogram —
  maximized over n_x0) and with the shared accountant's certificate (smallest valid upper
  bound) for the same (n, k, ε0, ε). Published values below the lower bound are flagged:
  they are not privacy guarantees.
* ``biswas-fig1`` — Fig. 1: δ̂ over (ε, ε0) (n = 100, k = 10, n_x0 = 80), published vs
  corrected.
* ``biswas-fig2`` — Fig. 2: TVD vs n on the synthetic N(0, 2) data (k = 15) for the raw
  shuffled histogram, shuffle+INV and the central Gaussian, all at the same (ε, δ) certified
  by the exact curve (the paper's ε = ε0 = 4 setting is inconsistent, see the note §0.4).
* ``biswas-gowalla`` — the utility gap between shuffle+INV and the central Gaussian on the
  Gowalla San Francisco and Paris grids at ε ∈ {0.5, 1, 2}, δ = 1e-6.

The exact curve and the ε0 calibration come from the shared shuffle accountant.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from crowdhide._extras import require
from crowdhide._output import write_csv, write_json
from crowdhide.experiments._formatting import fmt_log10 as _fmt
from crowdhide.experiments._formatting import log10_of_log as _log10
from crowdhide.experiments._formatting import progress
from crowdhide.experiments.claims import Claim, Verdict, all_of, better, match_all
from crowdhide.experiments.registry import ExperimentResult, experiment
from crowdhide.protocols import krr_accounting
from crowdhide.protocols.biswas import biswas_log_delta
from crowdhide.protocols.data import as_categories, load_column
from crowdhide.protocols.histogram import simulate_histogram

__all__ = ["run_fig1", "run_fig2", "run_gowalla", "run_table2"]

TABLE2_EPS0 = 0.49
TABLE2_EPSILONS = (0.01, 0.1, 0.2, 0.3, 0.4)
#: Biswas et al. Table II as published: n -> (Erlingsson [11], Balle [10], Feldman [12], "our δ").
TABLE2_PUBLISHED: dict[int, tuple[tuple[float, float, float, float], ...]] = {
    100: (
        (0.999, 0.996, 0.984, 1.18e-14),
        (0.97, 0.68, 0.2, 1.26e-28),
        (0.89, 0.22, 1.78e-3, 2.69e-43),
        (0.77, 0.03, 6.580e-7, 1.39e-57),
        (0.62, 2.2e-3, 1.02e-11, 9.46e-73),
    ),
    1000: (
        (0.997, 0.963, 0.853, 6.66e-58),
        (0.75, 0.02, 2.02e-7, 3.82e-93),
        (0.32, 4.06e-7, 1.66e-27, 6.02e-143),
        (0.08, 4.17e-15, 5.60e-61, 4.46e-207),
        (0.01, 2.73e-26, 7.69e-108, 3.61e-292),
    ),
}
#: k and n_x0 are not stated in the paper; k = 10, n_x0 = 0.8 n reproduces the n = 100 row
#: (found by searching n_x0); the n = 1000 row is not reproduced by any tried n_x0.
TABLE2_K = 10
TABLE2_NX0 = {100: 80, 1000: 800}


@experiment(
    "biswas-table2",
    "Biswas et al. Table II: published δ̂ vs corrected vs exact k-RR",
    aliases=("seed003-table2",),
)
def run_table2(out_dir: Path, *, rng: np.random.Generator, quick: bool) -> ExperimentResult:
    rows: list[dict[str, Any]] = []
    for n, published_rows in TABLE2_PUBLISHED.items():
        # Rigorous lower bound on the worst-case δ: the x0-count is a post-processing of the
        # histogram, so its exact divergence for any dataset pair is <= the true δ; we take the
        # max over a set of n_x0 (all of them for n = 100).
        if quick:
            nx0_grid: Sequence[int] = sorted({0, 1, n - 2, n - 1, TABLE2_NX0[n]})
        elif n <= 200:
            nx0_grid = range(n)
        else:
            nx0_grid = sorted({*range(11), *range(n - 11, n), 100, 500, TABLE2_NX0[n]})
        for eps, published in zip(TABLE2_EPSILONS, published_rows, strict=True):
            rows.append(_table2_row(n, eps, published, nx0_grid))
    csv_path = out_dir / "biswas_table2.csv"
    write_csv(csv_path, rows)
    json_path = out_dir / "biswas_table2.json"
    write_json(json_path, rows, infinities="strings")
    png_path = out_dir / "biswas_table2.png"
    _plot_table2(rows, png_path)
    return ExperimentResult(
        files=(csv_path, json_path, png_path),
        comparison=tuple(_table2_comparison(rows)),
        data={"rows": rows},
        verdicts=tuple(_table2_verdicts(rows)),
    )


PAPER = "Biswas et al."
#: Table II's literature columns recomputed with crowdhide's bounds: column -> (bound, k).
TABLE2_RECOMPUTED = {
    "balle_bennett_krr": ("balle2019_bennett", TABLE2_K),
    "balle_hoeffding_krr": ("balle2019_hoeffding", TABLE2_K),
    "feldman2021_clone": ("feldman2021", None),
}


def _recomputed_columns(n: int, eps: float) -> dict[str, float]:
    """Table II's Balle and Feldman columns from crowdhide's implementations of those bounds
    (the paper quotes them; k-RR blanket parameters with k = 10, FMT21 numerical clones)."""
    from crowdhide.accounting.shuffle.generic import shuffle_delta

    out = {}
    for column, (bound, k) in TABLE2_RECOMPUTED.items():
        statement = shuffle_delta(eps0=TABLE2_EPS0, n=n, epsilon=eps, k=k, bound=bound, lower=False)
        out[column] = statement.delta if statement.conditions_met else math.nan
    return out


def _table2_verdicts(rows: list[dict[str, Any]]) -> list[Verdict]:
    def cell(r: dict[str, Any]) -> str:
        return f"n={r['n']} ε={r['epsilon']:g}"

    where = "Table II"
    verdicts = [
        all_of(
            Claim(PAPER, where, "its δ̂ is a valid δ, orders of magnitude below [10]–[12]"),
            [(cell(r), not r["published_below_exact"]) for r in rows],
            what="published 'our δ' >= rigorous lower bound on the true δ",
            reason="published values lie below a lower bound on the true δ of shuffled 10-RR "
            "(the printed v' carries an extra factor)",
        ),
        match_all(
            Claim(PAPER, where, "column [11] is Erlingsson et al.'s bound"),
            [(cell(r), r["erlingsson_formula"], r["paper_erlingsson"]) for r in rows],
            rtol=0.1,
            what="exp(-n ε²/(144 ε0²)) vs printed",
        ),
    ]
    for column, printed, label in (
        ("balle_bennett_krr", "paper_balle", "column [10] is Balle et al.'s bound (k-RR blanket)"),
        ("feldman2021_clone", "paper_feldman", "column [12] is Feldman et al.'s clone bound"),
    ):
        verdicts.append(
            match_all(
                Claim(PAPER, where, label),
                [(cell(r), r[column], r[printed]) for r in rows],
                rtol=0.1,
                what="recomputed vs printed δ",
                reason="the printed column matches none of the published bounds (note §4.6: "
                "close to constant-free asymptotic forms)",
            )
        )
    return verdicts


def _table2_row(
    n: int, eps: float, published: tuple[float, float, float, float], nx0_grid: Sequence[int]
) -> dict[str, Any]:
    """One cell of Table II: the paper's values, the printed and corrected δ̂, the lower bound
    on the true δ (max over ``nx0_grid``) and the accountant's certificate."""
    nx0 = TABLE2_NX0[n]
    log_pub, log_cor = (
        biswas_log_delta(epsilon=eps, eps0=TABLE2_EPS0, n=n, k=TABLE2_K, n_x0=nx0, published=flag)
        for flag in (True, False)
    )
    log_lower = max(
        biswas_log_delta(epsilon=eps, eps0=TABLE2_EPS0, n=n, k=TABLE2_K, n_x0=j, published=False)
        for j in nx0_grid
    )
    cert_delta, cert_bound = krr_accounting.krr_delta_certificate(
        eps0=TABLE2_EPS0, n=n, k=TABLE2_K, epsilon=eps
    )
    erlingsson = math.exp(-n * (eps / (12 * TABLE2_EPS0)) ** 2)
    row: dict[str, Any] = {
        "n": n,
        "epsilon": eps,
        "k": TABLE2_K,
        "n_x0": nx0,
        "paper_erlingsson": published[0],
        "erlingsson_formula": erlingsson,
        "paper_balle": published[1],
        "paper_feldman": published[2],
        "paper_our_delta": published[3],
        "log10_published_formula": _log10(log_pub),
        "log10_corrected_x0_count": _log10(log_cor),
        "log10_lower_bound": _log10(log_lower),
        "certificate_delta": cert_delta,
        "certificate_bound": cert_bound,
        **_recomputed_columns(n, eps),
    }
    row["reproduced"] = abs(row["log10_published_formula"] - math.log10(published[3])) < (
        math.log10(1.015)
    )
    row["published_below_exact"] = bool(math.log10(published[3]) < row["log10_lower_bound"])
    return row


def _table2_comparison(rows: list[dict[str, Any]]) -> list[str]:
    comparison = [
        "n     eps   paper 'our delta'  published formula  corrected x0-count  true-delta lower"
        "  certificate (upper bound)",
    ]
    for r in rows:
        comparison.append(
            f"{r['n']:<5} {r['epsilon']:<5} {r['paper_our_delta']:<18.3g} "
            f"{_fmt(r['log10_published_formula']):<18} {_fmt(r['log10_corrected_x0_count']):<19} "
            f"{_fmt(r['log10_lower_bound']):<17} {r['certificate_delta']:.3g} "
            f"({r['certificate_bound']})"
            + ("  <- published BELOW the truth" if r["published_below_exact"] else "")
        )
    comparison.append(
        "n     eps   Balle [10]: paper / Bennett k-RR / Hoeffding k-RR   "
        "Feldman [12]: paper / clones (recomputed by crowdhide)"
    )
    for r in rows:
        comparison.append(
            f"{r['n']:<5} {r['epsilon']:<5} {r['paper_balle']:.3g} / "
            f"{r['balle_bennett_krr']:.3g} / {r['balle_hoeffding_krr']:.3g}   "
            f"{r['paper_feldman']:.3g} / {r['feldman2021_clone']:.3g}"
        )
    reproduced = sum(1 for r in rows if r["reproduced"])
    comparison.append(
        f"published formula reproduces {reproduced}/{len(rows)} 'our delta' cells within 1.5% "
        "(n=100 row with k=10, n_x0=80; the n=1000 row's k and n_x0 are unknown)"
    )
    below = sum(1 for r in rows if r["published_below_exact"])
    comparison.append(
        f"{below}/{len(rows)} published values are below a rigorous lower bound on the true "
        "delta of shuffled 10-RR (exact x0-count divergence, max over n_x0): Biswas et al.'s "
        "delta-hat is NOT a privacy certificate; utility comparisons use the accountant's "
        "certificates"
    )
    return comparison


def _plot_table2(rows: list[dict[str, Any]], path: Path) -> None:
    require("matplotlib", purpose="the figures of crowdhide reproduce").use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 5))
    for ax, n in zip(axes, (100, 1000), strict=True):
        sub = [r for r in rows if r["n"] == n]
        eps = [r["epsilon"] for r in sub]
        for key, style, label in (
            ("paper_balle", "P", "paper's [10] Balle column"),
            ("balle_bennett_krr", "P--", "Balle et al. (Bennett, k-RR), recomputed"),
            ("paper_feldman", "D", "paper's [12] Feldman column"),
            ("feldman2021_clone", "D--", "Feldman et al. 2021 (clones), recomputed"),
        ):
            ax.plot(eps, [math.log10(r[key]) for r in sub], style, alpha=0.7, label=label)
        ax.plot(eps, [math.log10(r["paper_our_delta"]) for r in sub], "o-", label="paper")
        ax.plot(eps, [r["log10_published_formula"] for r in sub], "x--", label="published formula")
        ax.plot(eps, [r["log10_corrected_x0_count"] for r in sub], "s-", label="corrected")
        ax.plot(eps, [r["log10_lower_bound"] for r in sub], "^-", label="lower bound on true δ")
        ax.plot(
            eps,
            [math.log10(max(r["certificate_delta"], 1e-320)) for r in sub],
            "v:",
            label="certificate (best valid bound)",
        )
        ax.set_title(f"Biswas et al. Table II, n = {n}, ε0 = 0.49, k = 10")
        ax.set_xlabel("ε")
        ax.set_ylabel("log10 δ")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


@experiment(
    "biswas-fig1",
    "Biswas et al. Fig. 1: δ̂ over (ε, ε0), published vs corrected",
    aliases=("seed003-fig1",),
)
def run_fig1(out_dir: Path, *, rng: np.random.Generator, quick: bool) -> ExperimentResult:
    size = 6 if quick else 15
    epsilons = np.linspace(0.1, 3.0, size)
    eps0s = np.linspace(0.1, 3.0, size)
    rows = []
    grids = {
        "published": np.full((size, size), -np.inf),
        "corrected": np.full((size, size), -np.inf),
    }
    for i, e0 in enumerate(eps0s):
        for j, e in enumerate(epsilons):
            row: dict[str, Any] = {"eps0": float(e0), "epsilon": float(e)}
            for name in grids:
                # ε >= ε0: shuffled k-RR is ε0-DP, so δ = 0 exactly; the formula evaluated at
                # ε = ε0 returns a rounding residue (2e-101), drawn as the darkest cell before
                value = (
                    -math.inf
                    if e >= e0 * (1.0 - 1e-12)
                    else _log10(
                        biswas_log_delta(
                            epsilon=float(e),
                            eps0=float(e0),
                            k=10,
                            n=100,
                            n_x0=80,
                            published=name == "published",
                        )
                    )
                )
                grids[name][i, j] = value
                row[f"log10_{name}"] = value
            rows.append(row)
    csv_path = write_csv(out_dir / "biswas_fig1.csv", rows)
    png_path = _plot_fig1(grids, epsilons, eps0s, out_dir / "biswas_fig1.png")
    finite = np.isfinite(grids["published"]) & np.isfinite(grids["corrected"])
    gap = float(np.max(grids["corrected"][finite] - grids["published"][finite]))
    comparison = (
        "Fig. 1 (n=100, k=10, n_x0=80): caption: delta decreases in eps and increases in eps0",
        f"largest gap corrected vs published: {gap:.1f} orders of magnitude (published too small)",
        "delta = 0 exactly for eps >= eps0 (white cells)",
    )
    return ExperimentResult(
        files=(csv_path, png_path),
        comparison=comparison,
        data={"gap": gap},
        verdicts=tuple(_fig1_verdicts(grids, epsilons, eps0s)),
    )


def _fig1_verdicts(
    grids: dict[str, np.ndarray], epsilons: np.ndarray, eps0s: np.ndarray
) -> list[Verdict]:
    """The caption's monotonicity, checked on every row (ε0 fixed) and column (ε fixed) of
    each surface, over the cells with δ > 0 (a tolerance of 1e-9 in log10 δ)."""
    down, up = [], []
    for name, grid in grids.items():
        for i, e0 in enumerate(eps0s):
            row = grid[i][np.isfinite(grid[i])]
            down.append((f"{name} ε0={e0:.2f}", bool(np.all(np.diff(row) <= 1e-9))))
        for j, e in enumerate(epsilons):
            col = grid[:, j][np.isfinite(grid[:, j])]
            up.append((f"{name} ε={e:.2f}", bool(np.all(np.diff(col) >= -1e-9))))
    return [
        all_of(Claim(PAPER, "Fig. 1", "δ̂ decreases as ε grows"), down, what="rows"),
        all_of(Claim(PAPER, "Fig. 1", "δ̂ grows with ε0"), up, what="columns"),
    ]


def _plot_fig1(
    grids: dict[str, np.ndarray], epsilons: np.ndarray, eps0s: np.ndarray, path: Path
) -> Path:
    require("matplotlib", purpose="the figures of crowdhide reproduce").use("Agg")
    import matplotlib.pyplot as plt

    finite = np.concatenate([g[np.isfinite(g)] for g in grids.values()])
    low, high = float(finite.min()), float(finite.max())
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    for ax, (name, grid) in zip(axes, grids.items(), strict=True):
        shown = np.ma.masked_invalid(np.where(np.isfinite(grid), grid, np.nan))
        image = ax.pcolormesh(
            epsilons, eps0s, shown, cmap="viridis", vmin=low, vmax=high, shading="nearest"
        )
        ax.set_facecolor("white")
        ax.set_title(f"Biswas et al. Fig. 1: log10 δ̂ ({name})\nwhite: δ = 0 (ε ≥ ε0)", fontsize=10)
        ax.set_xlabel("ε")
        ax.set_ylabel("ε0")
        fig.colorbar(image, ax=ax, label="log10 δ̂")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _utility_study(
    values: np.ndarray,
    *,
    k: int,
    epsilon: float,
    delta: float,
    runs: int,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """Calibrate once, certify once, then ``runs`` simulations; mean/sd of every TVD."""
    n = int(values.size)
    eps0 = krr_accounting.calibrate_krr_eps0(epsilon=epsilon, delta=delta, n=n, k=k)
    certified = min(krr_accounting.certify_krr(eps0=eps0, n=n, k=k, delta=delta)[0], eps0)
    tvds: dict[str, list[float]] = {}
    for _ in range(runs):
        result = simulate_histogram(values, k=k, eps0=eps0, epsilon=epsilon, delta=delta, rng=rng)
        for name, value in result.tvds().items():
            tvds.setdefault(name, []).append(value)
    summary: dict[str, Any] = {
        "n": n,
        "k": k,
        "epsilon": epsilon,
        "delta": delta,
        "eps0": eps0,
        "certified_epsilon": certified,
        "runs": runs,
    }
    for name, values_list in tvds.items():
        arr = np.array(values_list)
        summary[f"tvd_{name}_mean"] = float(arr.mean())
        summary[f"tvd_{name}_sd"] = float(arr.std(ddof=1)) if arr.size > 1 else 0.0
    summary["gap_inversion_vs_central_projected"] = (
        summary["tvd_shuffle_inversion_mean"] / summary["tvd_central_projected_mean"]
    )
    summary["gap_inversion_vs_central_raw"] = (
        summary["tvd_shuffle_inversion_mean"] / summary["tvd_central_raw_mean"]
    )
    return summary


@experiment(
    "biswas-fig2",
    "Biswas et al. Fig. 2: TVD vs n on synthetic data, shuffle vs central",
    aliases=("seed003-fig2",),
)
def run_fig2(out_dir: Path, *, rng: np.random.Generator, quick: bool) -> ExperimentResult:
    epsilon, delta = 4.0, 1e-6  # the paper's ε; its δ̂ is not stated, δ = 1e-6 here
    ns = (1_000, 10_000) if quick else (1_000, 3_000, 10_000, 30_000, 100_000)
    runs = 2 if quick else 10
    pool = as_categories(load_column("builtin:synthetic", column="category")).values
    rows = []
    with progress("biswas-fig2", len(ns)) as bar:
        for n in ns:
            values = rng.choice(pool, size=n, replace=n > pool.size)
            rows.append(
                _utility_study(values, k=15, epsilon=epsilon, delta=delta, runs=runs, rng=rng)
            )
            bar.advance(f"n={n}")
    csv_path = out_dir / "biswas_fig2.csv"
    write_csv(csv_path, rows)
    png_path = out_dir / "biswas_fig2.png"
    _plot_utility(
        rows,
        png_path,
        title=f"Biswas et al. Fig. 2: synthetic N(0,2), k = 15\nε = {epsilon:g}, δ = {delta:g}, "
        f"mean ± sd of {runs} runs",
    )
    comparison = [
        f"n={r['n']}: TVD shuffle {r['tvd_shuffle_raw_mean']:.4f}, shuffle+INV "
        f"{r['tvd_shuffle_inversion_mean']:.4f}, central Gaussian {r['tvd_central_raw_mean']:.4f} "
        f"(projected {r['tvd_central_projected_mean']:.4f}); eps0={r['eps0']:.3f}"
        for r in rows
    ]
    comparison.append(
        "paper (eps = eps0 = 4, inconsistent): shuffle+INV beats raw shuffle, the Gaussian is "
        "slightly better than shuffle+INV; here eps = 4 is certified by the accountant and "
        "eps0 calibrated to it"
    )
    return ExperimentResult(
        files=(csv_path, png_path),
        comparison=tuple(comparison),
        data={"rows": rows},
        verdicts=tuple(_fig2_verdicts(rows)),
    )


#: "Slightly better": the Gaussian's TVD is below shuffle+INV's by a factor in (1, 1.5].
SLIGHTLY = (1.25, 0.2)


def _fig2_verdicts(rows: list[dict[str, Any]]) -> list[Verdict]:
    """Fig. 2's two claims at the largest n simulated (where sampling noise is smallest)."""
    r = max(rows, key=lambda row: row["n"])
    at = f"n={r['n']}"
    return [
        better(
            Claim(PAPER, "Sec. VI, Fig. 2", "shuffle+INV beats the raw shuffled histogram"),
            low=r["tvd_shuffle_inversion_mean"],
            high=r["tvd_shuffle_raw_mean"],
            margin=0.1,
            what=f"{at}: TVD shuffle+INV vs raw shuffle",
            reason="inversion does not reduce the TVD",
        ),
        better(
            Claim(
                PAPER, "Sec. VI, Fig. 2", "the central Gaussian is slightly better than shuffle+INV"
            ),
            low=r["tvd_central_projected_mean"],
            high=r["tvd_shuffle_inversion_mean"],
            paper_ratio=SLIGHTLY[0],
            rtol=SLIGHTLY[1],
            what=f"{at}: TVD central Gaussian (projected) vs shuffle+INV",
            reason="the gap is not 'slight' (ratio outside 1.0–1.5)",
        ),
    ]


def _plot_utility(rows: list[dict[str, Any]], path: Path, *, title: str) -> None:
    require("matplotlib", purpose="the figures of crowdhide reproduce").use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 5))
    ns = [r["n"] for r in rows]
    for key, label in (
        ("shuffle_raw", "shuffle (raw k-RR histogram)"),
        ("shuffle_inversion", "shuffle+INV"),
        ("central_raw", "central Gaussian H/n"),
        ("central_projected", "central Gaussian, projected"),
    ):
        ax.errorbar(
            ns,
            [r[f"tvd_{key}_mean"] for r in rows],
            yerr=[r[f"tvd_{key}_sd"] for r in rows],
            marker="o",
            label=label,
            capsize=3,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel("total-variation distance")
    ax.set_title(title, fontsize=9)
    fig.legend(loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


@experiment(
    "biswas-gowalla",
    "Biswas et al., Gowalla SF/Paris: shuffle+INV vs central Gaussian at ε ∈ {0.5,1,2}",
    aliases=("seed003-gowalla",),
)
def run_gowalla(out_dir: Path, *, rng: np.random.Generator, quick: bool) -> ExperimentResult:
    delta = 1e-6
    epsilons = (0.5, 1.0, 2.0)
    runs = 2 if quick else 10
    rows = []
    notes = []
    for city in ("gowalla-sf", "gowalla-paris"):
        column = load_column(f"builtin:{city}", column="cell")
        if column.note:
            notes.append(column.note)
        cats = as_categories(column)
        values = cats.values
        if quick:
            values = rng.choice(values, size=min(values.size, 5_000), replace=False)
        for eps in epsilons:
            summary = _utility_study(values, k=cats.k, epsilon=eps, delta=delta, runs=runs, rng=rng)
            rows.append({"dataset": city, **summary})
    csv_path = out_dir / "biswas_gowalla.csv"
    write_csv(csv_path, rows)
    json_path = out_dir / "biswas_gowalla.json"
    write_json(json_path, rows, infinities="strings")
    png_path = _plot_gowalla(out_dir / "biswas_gowalla.png", rows, delta)
    comparison = [
        f"{r['dataset']} n={r['n']} k={r['k']} eps={r['epsilon']}: eps0={r['eps0']:.3f}, TVD "
        f"shuffle+INV {r['tvd_shuffle_inversion_mean']:.4f}±{r['tvd_shuffle_inversion_sd']:.4f}, "
        f"central {r['tvd_central_projected_mean']:.4f}±{r['tvd_central_projected_sd']:.4f} "
        f"(projected) / {r['tvd_central_raw_mean']:.4f} (raw); gap "
        f"{r['gap_inversion_vs_central_projected']:.2f}x"
        for r in rows
    ]
    verdicts = tuple(
        better(
            Claim(PAPER, "Sec. V-C, Gowalla", "shuffle+INV is comparable to the central Gaussian"),
            low=r["tvd_central_projected_mean"],
            high=r["tvd_shuffle_inversion_mean"],
            paper_ratio=SLIGHTLY[0],
            rtol=SLIGHTLY[1],
            what=f"{r['dataset']} ε={r['epsilon']:g}: TVD central Gaussian vs shuffle+INV",
            reason="the gap is not 'slight' (ratio outside 1.0–1.5)",
        )
        for r in rows
    )
    return ExperimentResult(
        files=(csv_path, json_path, png_path),
        comparison=tuple(comparison + notes),
        data={"rows": rows},
        verdicts=verdicts,
    )


def _plot_gowalla(png_path: Path, rows: list[dict[str, Any]], delta: float) -> Path:
    """TVD (mean ± sd over runs) against ε per city: shuffle+INV vs the central Gaussian."""
    require("matplotlib", purpose="the figures of crowdhide reproduce").use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, city in zip(axes, ("gowalla-sf", "gowalla-paris"), strict=True):
        sub = [r for r in rows if r["dataset"] == city]
        eps_axis = [r["epsilon"] for r in sub]
        for key, label in (
            ("shuffle_inversion", "shuffle+INV (exact calibration)"),
            ("central_projected", "central Gaussian, projected"),
            ("central_raw", "central Gaussian H/n"),
        ):
            ax.errorbar(
                eps_axis,
                [r[f"tvd_{key}_mean"] for r in sub],
                yerr=[r[f"tvd_{key}_sd"] for r in sub],
                marker="o",
                capsize=3,
                label=label,
            )
        # two lines at 10 pt: one line ran past the figure's edge
        ax.set_title(
            f"Biswas et al., {city}\nn = {sub[0]['n']}, k = {sub[0]['k']}, δ = {delta:.0e}".replace(
                "e-0", "e-"
            ),
            fontsize=10,
        )
        ax.set_xlabel("ε")
        ax.set_ylabel("TVD (mean ± sd)")
        ax.set_yscale("log")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(png_path, dpi=120)
    plt.close(fig)
    return png_path
