"""Biswas, Jung, Palamidessi, "Tight differential privacy guarantees for the shuffle model with
k-randomized response": Tables IV, V and VI reproduced and corrected.

* ``biswas-table4`` — Table IV, the "tight δ" for ε ∈ {0.1, …, 3} in three panels (vary ε0,
  n, k). Every cell: the paper's value, eq. (6) with the printed ``v'_s``, the corrected
  eq. (6) (exact divergence of the x0-count), a rigorous lower bound on the true δ of shuffled
  k-RR, and the δ crowdhide certifies (the shared accountant's smallest valid upper bound).
* ``biswas-table5`` — Table V, individual-specific utility ``|π̂_x0 − π_x0|`` on the
  synthetic N(0, 2) data (k = 15, n = 1,000 and 100,000), plus the community TVDs quoted in
  §V-C2.
* ``biswas-table6`` — Table VI, the same on the Gowalla grids (San Francisco, Paris).

The paper's utility setting ε = ε0 = 4 makes its δ̂ zero; see
:mod:`crowdhide.experiments._biswas_common` for the δ used instead and why.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from crowdhide._extras import require
from crowdhide._output import write_csv, write_json
from crowdhide.experiments._biswas_common import (
    PAPER_EPS0,
    UTILITY_DELTA,
    CertifiedSetting,
    certified_setting,
    formula_deltas,
    load_city,
    run_estimates,
    synthetic_sample,
)
from crowdhide.experiments._formatting import fmt_log10, legend_below, log10_of_log, progress
from crowdhide.experiments.claims import Claim, Verdict, all_of, match_all
from crowdhide.experiments.registry import ExperimentResult, experiment
from crowdhide.protocols import krr_accounting
from crowdhide.protocols.biswas import biswas_log_delta

__all__ = ["TABLE4_PAPER", "run_table4", "run_table5", "run_table6", "table4_rows"]

TABLE4_EPSILONS = (0.1, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
#: Table IV as published: (panel, label, ε0, n, k, n_x0) -> δ for TABLE4_EPSILONS. Panel (b)
#: prints "n_x0 = 80" for every n, impossible at n = 50; its values match n_x0 = 0.8 n.
TABLE4_PAPER: dict[tuple[str, str, float, int, int, int], tuple[float, ...]] = {
    ("a", "eps0=1", 1.0, 100, 10, 80): (2.08e-20, 3.42e-43, 0, 0, 0, 0, 0),
    ("a", "eps0=2", 2.0, 100, 10, 80): (2.49e-15, 3.25e-22, 2.20e-30, 1.57e-40, 0, 0, 0),
    ("a", "eps0=3", 3.0, 100, 10, 80): (
        8.79e-11,
        5.73e-13,
        3.52e-16,
        4.49e-20,
        1.09e-25,
        4.52e-33,
        0,
    ),
    ("b", "n=50", 2.0, 50, 10, 40): (1.91e-08, 5.02e-12, 2.40e-15, 4.49e-21, 0, 0, 0),
    ("b", "n=100", 2.0, 100, 10, 80): (2.49e-15, 3.25e-22, 2.20e-30, 1.57e-40, 0, 0, 0),
    ("b", "n=150", 2.0, 150, 10, 120): (6.58e-22, 7.83e-32, 2.75e-44, 6.99e-59, 0, 0, 0),
    ("c", "k=5", 2.0, 100, 5, 80): (1.96e-10, 2.51e-14, 1.08e-19, 2.02e-27, 0, 0, 0),
    ("c", "k=10", 2.0, 100, 10, 80): (2.49e-15, 3.25e-22, 2.20e-30, 1.57e-40, 0, 0, 0),
    ("c", "k=15", 2.0, 100, 15, 80): (1.66e-18, 7.13e-28, 1.49e-38, 7.35e-50, 0, 0, 0),
}
#: Relative tolerance of "reproduced by the printed formula": the printed formula, evaluated
#: independently, matches the paper's cells to this relative error where it matches at all.
TABLE4_TOLERANCE = 0.015


def _lower_bound_log(eps0: float, n: int, k: int, nx0_grid: Sequence[int]) -> list[float]:
    """log of a rigorous lower bound on the true δ at every ε of Table IV: the x0-count is a
    post-processing of the histogram, so its exact divergence for any n_x0 — and the exact
    curves of the accountant's canonical datasets — are <= the worst-case δ."""
    best = [-math.inf] * len(TABLE4_EPSILONS)
    for nx0 in nx0_grid:  # n_x0 outer: the ε-independent terms are cached per n_x0
        for i, eps in enumerate(TABLE4_EPSILONS):
            value = biswas_log_delta(epsilon=eps, eps0=eps0, k=k, n=n, n_x0=nx0, published=False)
            best[i] = max(best[i], value)
    canonical = krr_accounting.krr_lower_curve(eps0=eps0, n=n, k=k)
    return [max(b, canonical.log_delta(eps)) for b, eps in zip(best, TABLE4_EPSILONS, strict=True)]


def _table4_cell(
    key: tuple[str, str, float, int, int, int], eps: float, paper: float, log_lower: float
) -> dict[str, Any]:
    panel, label, eps0, n, k, nx0 = key
    printed, corrected = (
        log10_of_log(biswas_log_delta(epsilon=eps, eps0=eps0, k=k, n=n, n_x0=nx0, published=flag))
        for flag in (True, False)
    )
    cert, bound = krr_accounting.krr_delta_certificate(eps0=eps0, n=n, k=k, epsilon=eps)
    paper_log10 = math.log10(paper) if paper > 0 else -math.inf
    lower = log10_of_log(log_lower)
    if paper == 0:
        reproduced = printed == -math.inf
        rel = 0.0 if reproduced else math.inf
    else:
        rel = abs(10 ** (printed - paper_log10) - 1.0)
        reproduced = rel <= TABLE4_TOLERANCE
    return {
        "panel": panel,
        "row": label,
        "eps0": eps0,
        "n": n,
        "k": k,
        "n_x0": nx0,
        "epsilon": eps,
        "paper": paper,
        "log10_printed_formula": printed,
        "printed_vs_paper_rel_diff": rel,
        "printed_reproduces_paper": reproduced,
        "log10_corrected": corrected,
        "log10_lower_bound_true_delta": lower,
        "certified_delta": cert,
        "certificate_bound": bound,
        "paper_below_true_delta": bool(paper_log10 < lower),
    }


def table4_rows(*, quick: bool = False) -> list[dict[str, Any]]:
    """Every cell of Table IV (see the module docstring). ``quick`` maximizes the lower bound
    over a few n_x0 instead of all of them (still a valid lower bound)."""
    rows: list[dict[str, Any]] = []
    with progress("Table IV", len(TABLE4_PAPER)) as bar:
        for key, paper_row in TABLE4_PAPER.items():
            _, label, eps0, n, k, nx0 = key
            grid = sorted({0, 1, nx0, n - 2, n - 1}) if quick else range(n)
            lowers = _lower_bound_log(eps0, n, k, grid)
            for eps, paper, low in zip(TABLE4_EPSILONS, paper_row, lowers, strict=True):
                rows.append(_table4_cell(key, eps, paper, low))
            bar.advance(label)
    return rows


@experiment(
    "biswas-table4",
    "Biswas et al. Table IV: tight δ, paper vs printed vs corrected",
    aliases=("seed003-table4",),
)
def run_table4(out_dir: Path, *, rng: np.random.Generator, quick: bool) -> ExperimentResult:
    rows = table4_rows(quick=quick)
    files = (
        write_csv(out_dir / "biswas_table4.csv", rows),
        write_json(out_dir / "biswas_table4.json", rows, infinities="strings"),
        out_dir / "biswas_table4.png",
    )
    _plot_table4(rows, files[2])
    lines = [
        "cell              paper     printed   corrected true>=    certified",
    ]
    for r in rows:
        paper = "0" if r["paper"] == 0 else f"{r['paper']:.3g}"
        cert = fmt_log10(
            math.log10(r["certified_delta"]) if r["certified_delta"] > 0 else -math.inf
        )
        lines.append(
            f"({r['panel']}) {r['row']:<7}e={r['epsilon']:<4}{paper:<10}"
            f"{fmt_log10(r['log10_printed_formula']):<10}{fmt_log10(r['log10_corrected']):<10}"
            f"{fmt_log10(r['log10_lower_bound_true_delta']):<11}{cert:<9}"
            + ("!" if r["paper_below_true_delta"] else "")
        )
    lines.append(
        "printed = eq. (6) with Theorem IV.1's v'_s; corrected = true v_s (x0-count divergence); "
        "true>= = rigorous lower bound on the true delta; certified = what crowdhide certifies "
        "(shuffle accountant, smallest valid upper bound; bound names in the CSV); "
        "! = paper value below the true delta"
    )
    nonzero = [r for r in rows if r["paper"] > 0]
    hits = sum(r["printed_reproduces_paper"] for r in nonzero)
    zeros = [r for r in rows if r["paper"] == 0]
    below = sum(r["paper_below_true_delta"] for r in nonzero)
    lines += [
        f"printed formula reproduces {hits}/{len(nonzero)} non-zero cells within 1.5 % and "
        f"{sum(r['printed_reproduces_paper'] for r in zeros)}/{len(zeros)} zero cells "
        "(zeros: eps >= eps0, where shuffled k-RR is (eps0, 0)-DP and the certificate is 0 too)",
        f"{below}/{len(nonzero)} non-zero paper values lie below a rigorous lower bound on the "
        "true delta: they are not privacy guarantees; crowdhide certifies only the last column",
    ]
    data = {"rows": rows, "reproduced_nonzero": hits, "nonzero": len(nonzero), "below": below}
    return ExperimentResult(
        files=files, comparison=tuple(lines), data=data, verdicts=tuple(_table4_verdicts(rows))
    )


PAPER = "Biswas et al."


def _table4_verdicts(rows: list[dict[str, Any]]) -> list[Verdict]:
    nonzero = [r for r in rows if r["paper"] > 0]

    def cell(r: dict[str, Any]) -> str:
        return f"({r['panel']}) {r['row']} ε={r['epsilon']}"

    return [
        all_of(
            Claim(PAPER, "Thm IV.1, Table IV", "the tabulated δ are valid (tight) guarantees"),
            [(cell(r), not r["paper_below_true_delta"]) for r in nonzero],
            what="paper δ >= rigorous lower bound on the true δ",
            reason="the printed v' makes δ too small: below the truth",
        ),
        match_all(
            Claim(PAPER, "Table IV", "the values follow eq. (6) with the printed v'"),
            [(cell(r), 10.0 ** r["log10_printed_formula"], r["paper"]) for r in nonzero],
            rtol=0.015,
            what="eq. (6) as printed vs the table",
            reason="some cells differ (typos or unstated parameters)",
        ),
    ]


def _individual_verdicts(
    rows: list[dict[str, Any]], where: str, tvd: list[tuple[str, float, float]]
) -> list[Verdict]:
    """The per-cell winner (Gaussian or shuffle+INV) against the paper's, and the community
    TVDs against the paper's where it prints them."""
    verdicts = [
        all_of(
            Claim(PAPER, where, "which mechanism has the smaller individual error, per cell"),
            [(f"{r['dataset']} x0={r['x0']}", r["winner"] == r["paper_winner"]) for r in rows],
            what="winner here = the paper's winner",
            reason="at the certified (4, δ) the comparison turns in these cells",
        )
    ]
    if tvd:
        verdicts.append(
            match_all(
                Claim(PAPER, where, "community TVD of the Gaussian and shuffle+INV"),
                tvd,
                rtol=0.25,
                what="TVD",
                reason="the paper's ε0 = 4 setting is not certified at ε = 4 with δ > 0",
            )
        )
    return verdicts


def _log10_or_nan(value: float) -> float:
    return math.log10(value) if value > 0 else math.nan


def _plot_table4(rows: list[dict[str, Any]], path: Path) -> None:
    require("matplotlib", purpose="the figures of crowdhide reproduce").use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    titles = {"a": "(a) vary ε0 (n=100, k=10)", "b": "(b) vary n (ε0=2, k=10)", "c": "(c) vary k"}
    for ax, panel in zip(axes, "abc", strict=True):
        labels = dict.fromkeys(r["row"] for r in rows if r["panel"] == panel)
        for colour, label in zip(("C0", "C1", "C2"), labels, strict=True):
            sub = [r for r in rows if r["panel"] == panel and r["row"] == label]
            eps = [r["epsilon"] for r in sub]
            ax.plot(eps, [_log10_or_nan(r["paper"]) for r in sub], "o", color=colour, label=label)
            for key, style in (("log10_printed_formula", "--"), ("log10_corrected", "-")):
                values = [r[key] if math.isfinite(r[key]) else math.nan for r in sub]
                ax.plot(eps, values, style, color=colour)
            certified = [_log10_or_nan(r["certified_delta"]) for r in sub]
            ax.plot(eps, certified, ":", color=colour, marker="v")
        ax.set_title(titles[panel] + "\no paper, -- printed formula, — corrected, ▽ certified")
        ax.set_xlabel("ε")
        ax.set_ylabel("log10 δ (missing: δ = 0)")
        legend_below(ax, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---- Tables V and VI: individual-specific utility ------------------------------------------

#: Table V as published: n -> x0 (1-based bin label) -> (Gaussian, shuffle+INV).
TABLE5_PAPER: dict[int, dict[int, tuple[float, float]]] = {
    1_000: {
        1: (3e-3, 1e-3),
        3: (6e-4, 2e-4),
        5: (12e-4, 11e-4),
        7: (1e-4, 4e-3),
        9: (9e-4, 3e-3),
        11: (6e-4, 1e-3),
        13: (15e-4, 15e-4),
    },
    100_000: {
        1: (6e-6, 3e-3),
        3: (1e-5, 5e-4),
        5: (1e-5, 5e-4),
        7: (8e-6, 3e-5),
        9: (7e-6, 8e-4),
        11: (6e-6, 7e-4),
        13: (2e-5, 4e-4),
    },
}
#: Community TVDs quoted in §V-C2 for the same setting: n -> (Gaussian, shuffle+INV).
TABLE5_TVD_PAPER = {1_000: (0.014, 0.026), 100_000: (0.0001, 0.0048)}
#: Table VI as published: city -> x0 (cell index) -> (Gaussian, shuffle+INV).
TABLE6_PAPER: dict[str, dict[int, tuple[float, float]]] = {
    "gowalla-sf": {
        40: (4e-6, 1e-3),
        80: (3e-5, 5e-4),
        120: (9e-6, 1e-3),
        160: (4e-5, 2e-4),
        200: (2e-5, 2e-4),
        240: (2e-5, 7e-4),
        280: (4e-6, 5e-4),
    },
    "gowalla-paris": {
        20: (2e-6, 3e-4),
        40: (3e-5, 2e-3),
        60: (4e-5, 2e-3),
        80: (5e-5, 4e-4),
        100: (7e-5, 1e-4),
        120: (3e-5, 2e-4),
        140: (1e-4, 1e-4),
    },
}
UTILITY_EPSILON = 4.0
_ESTIMATES = ("gaussian", "shuffle_inv", "shuffle_inv_eps0_4")


def _simulate(
    values: np.ndarray, setting: CertifiedSetting, runs: int, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """``runs`` × k absolute errors per estimate, and ``runs`` TVDs per estimate."""
    errors: dict[str, list[np.ndarray]] = {name: [] for name in _ESTIMATES}
    for _ in range(runs):
        est = run_estimates(values, setting, rng=rng)
        for name in _ESTIMATES:
            errors[name].append(np.abs(est[name] - est["truth"]))
    out = {f"err_{name}": np.array(v) for name, v in errors.items()}
    for name in _ESTIMATES:
        out[f"tvd_{name}"] = 0.5 * out[f"err_{name}"].sum(axis=1)
    return out


def _individual_rows(
    dataset: str,
    values: np.ndarray,
    setting: CertifiedSetting,
    paper: dict[int, tuple[float, float]],
    *,
    label_offset: int,
    sims: dict[str, np.ndarray],
) -> list[dict[str, Any]]:
    counts = np.bincount(values, minlength=setting.k)
    rows = []
    for x0, (paper_gauss, paper_inv) in paper.items():
        cell = x0 - label_offset
        printed, corrected, how = formula_deltas(
            epsilon=setting.epsilon,
            eps0=PAPER_EPS0,
            k=setting.k,
            n=setting.n,
            n_x0=max(int(counts[cell]) - 1, 0),
        )
        row: dict[str, Any] = {"dataset": dataset, "x0": x0, "cell": cell}
        row |= {"pi_x0": counts[cell] / setting.n, "n_x0": max(int(counts[cell]) - 1, 0)}
        row |= {"paper_gaussian": paper_gauss, "paper_shuffle_inv": paper_inv}
        row |= {
            "log10_delta_x0_printed": log10_of_log(printed),
            "log10_delta_x0_corrected": log10_of_log(corrected),
            "delta_x0_how": how,
            **setting.as_record(),
        }
        for name in _ESTIMATES:
            err = sims[f"err_{name}"][:, cell]
            row[f"{name}_mean"] = float(err.mean())
            row[f"{name}_sd"] = float(err.std(ddof=1)) if err.size > 1 else 0.0
        row["paper_winner"] = "gaussian" if paper_gauss < paper_inv else "shuffle+INV"
        better = row["gaussian_mean"] < row["shuffle_inv_mean"]
        row["winner"] = "gaussian" if better else "shuffle+INV"
        rows.append(row)
    return rows


def _tvd_record(
    dataset: str, setting: CertifiedSetting, sims: dict[str, np.ndarray]
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "dataset": dataset,
        **setting.as_record(),
        "runs": len(sims["tvd_gaussian"]),
    }
    for name in _ESTIMATES:
        record[f"tvd_{name}_mean"] = float(sims[f"tvd_{name}"].mean())
        record[f"tvd_{name}_sd"] = float(sims[f"tvd_{name}"].std(ddof=1))
    return record


def _short(dataset: str) -> str:
    return {"gowalla-sf": "SF", "gowalla-paris": "Paris"}.get(
        dataset, dataset.replace("synthetic-n", "n=")
    )


def _e(value: float) -> str:
    """Compact scientific notation: 1.2e-3."""
    return f"{value:.1e}".replace("e-0", "e-").replace("e+0", "e")


def _individual_lines(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["data     x0   paper G/INV     d_x0 | here G ± sd     INV ± sd       INV@eps0=4"]
    for r in rows:
        deltas = (
            f"{fmt_log10(r['log10_delta_x0_printed'])}/{fmt_log10(r['log10_delta_x0_corrected'])}"
        )
        lines.append(
            f"{_short(r['dataset']):<8} {r['x0']:<4} {_e(r['paper_gaussian'])}/"
            f"{_e(r['paper_shuffle_inv'])} {deltas:<4} | {_e(r['gaussian_mean'])}±"
            f"{_e(r['gaussian_sd'])} {_e(r['shuffle_inv_mean'])}±{_e(r['shuffle_inv_sd'])} "
            f"{_e(r['shuffle_inv_eps0_4_mean'])}"
        )
    lines.append(
        "d_x0 = the paper's delta for that x0, printed formula/corrected (both 0: eps = eps0); "
        "G = Gaussian, INV = shuffle+INV at the calibrated eps0, INV@eps0=4 = the paper's eps0"
    )
    return lines


def _setting_line(dataset: str, setting: CertifiedSetting) -> str:
    return (
        f"{dataset}: n={setting.n}, k={setting.k}; both models certified "
        f"(eps={setting.certified_epsilon:.3f} <= {setting.epsilon}, delta={setting.delta:g}); "
        f"shuffle eps0 calibrated = {setting.eps0:.3f} ({setting.bound}); the paper's eps0 = 4 "
        f"is certified ({setting.paper_eps0_certified_epsilon:.3f}, {setting.delta:g}) and (4, 0)"
    )


DELTA_NOTE = (
    f"delta: the paper's eq. (6) gives delta = 0 at eps = eps0 = 4 (printed and corrected alike),"
    f" and no Gaussian is (4, 0)-DP; both models here run at the certified (4, {UTILITY_DELTA:g})"
    " with the shuffle model's eps0 calibrated by the accountant (ε0 >= 4); errors on the "
    "probability scale, mean (sd) over the runs; Gaussian = H/n with L2 sensitivity sqrt(2)"
)


def _individual_experiment(
    name: str,
    studies: list[tuple[str, np.ndarray, int, dict[int, tuple[float, float]], int]],
    *,
    out_dir: Path,
    runs: int,
    rng: np.random.Generator,
    fast: bool,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str], tuple[Path, ...]]:
    """Run each (dataset, values, k, paper table, label offset) study; write the files."""
    rows: list[dict[str, Any]] = []
    tvds: list[dict[str, Any]] = []
    settings: list[str] = []
    with progress(name, 2 * len(studies)) as bar:
        for dataset, values, k, paper, offset in studies:
            setting = certified_setting(n=values.size, k=k, epsilon=UTILITY_EPSILON, fast=fast)
            bar.advance(f"{dataset}: eps0 calibrated")
            sims = _simulate(values, setting, runs, rng)
            bar.advance(f"{dataset}: {runs} runs done")
            rows += _individual_rows(
                dataset, values, setting, paper, label_offset=offset, sims=sims
            )
            tvds.append(_tvd_record(dataset, setting, sims))
            settings.append(_setting_line(dataset, setting))
    stem = out_dir / name.replace("-", "_")
    files = (
        write_csv(stem.with_suffix(".csv"), rows),
        write_json(
            stem.with_suffix(".json"), {"rows": rows, "community_tvd": tvds}, infinities="strings"
        ),
        stem.with_suffix(".png"),
    )
    _plot_individual(rows, files[2], title=name)
    return rows, tvds, settings, files


def _agreement_line(rows: list[dict[str, Any]]) -> str:
    same = sum(r["winner"] == r["paper_winner"] for r in rows)
    gauss = sum(r["winner"] == "gaussian" for r in rows)
    return (
        f"the Gaussian has the smaller error in {gauss}/{len(rows)} cells here; the winner "
        f"agrees with the paper's in {same}/{len(rows)} cells"
    )


@experiment(
    "biswas-table5",
    "Biswas et al. Table V: individual utility, synthetic, ε = 4",
    aliases=("seed003-table5",),
)
def run_table5(out_dir: Path, *, rng: np.random.Generator, quick: bool) -> ExperimentResult:
    runs = 3 if quick else 20
    studies = [
        (f"synthetic-n{n}", synthetic_sample(n, rng), 15, paper, 1)
        for n, paper in TABLE5_PAPER.items()
    ]
    rows, tvds, settings, files = _individual_experiment(
        "biswas-table5", studies, out_dir=out_dir, runs=runs, rng=rng, fast=quick
    )
    lines = [*settings, DELTA_NOTE, *_individual_lines(rows), _agreement_line(rows)]
    for record, (n, (paper_g, paper_inv)) in zip(tvds, TABLE5_TVD_PAPER.items(), strict=True):
        lines.append(
            f"community TVD n={n}: paper Gaussian {paper_g} / shuffle+INV {paper_inv}; here "
            f"{record['tvd_gaussian_mean']:.4f} / {record['tvd_shuffle_inv_mean']:.4f} "
            f"(shuffle+INV at eps0=4: {record['tvd_shuffle_inv_eps0_4_mean']:.4f})"
        )
    lines.append(f"{runs} runs per n; x0 = bin label 1..15 of N(0, 2) cut on [-3 sqrt2, 3 sqrt2]")
    tvd_pairs = [
        pair
        for record, (n, (paper_g, paper_inv)) in zip(tvds, TABLE5_TVD_PAPER.items(), strict=True)
        for pair in (
            (f"n={n} Gaussian", record["tvd_gaussian_mean"], paper_g),
            (f"n={n} shuffle+INV", record["tvd_shuffle_inv_mean"], paper_inv),
        )
    ]
    return ExperimentResult(
        files=files,
        comparison=tuple(lines),
        data={"rows": rows, "community_tvd": tvds},
        verdicts=tuple(_individual_verdicts(rows, "Sec. VI, Table V", tvd_pairs)),
    )


@experiment(
    "biswas-table6",
    "Biswas et al. Table VI: individual utility, Gowalla, ε = 4",
    aliases=("seed003-table6",),
)
def run_table6(out_dir: Path, *, rng: np.random.Generator, quick: bool) -> ExperimentResult:
    runs = 3 if quick else 20
    studies = []
    notes = []
    for city, paper in TABLE6_PAPER.items():
        data = load_city(city)
        if data.note:
            notes.append(data.note)
        studies.append((city, data.values, data.k, paper, 0))
    rows, tvds, settings, files = _individual_experiment(
        "biswas-table6", studies, out_dir=out_dir, runs=runs, rng=rng, fast=quick
    )
    lines = [*settings, DELTA_NOTE, *_individual_lines(rows), _agreement_line(rows)]
    lines += [
        f"community TVD {r['dataset']}: Gaussian {r['tvd_gaussian_mean']:.4f}, shuffle+INV "
        f"{r['tvd_shuffle_inv_mean']:.4f} (at eps0=4: {r['tvd_shuffle_inv_eps0_4_mean']:.4f})"
        for r in tvds
    ]
    lines.append(
        f"{runs} runs, all check-ins (one row = one user); x0 = cell index i*cols + j of the "
        "grid files (the paper's cell numbering is not stated)"
    )
    return ExperimentResult(
        files=files,
        comparison=tuple(lines + notes),
        data={"rows": rows, "community_tvd": tvds},
        verdicts=tuple(_individual_verdicts(rows, "Sec. VI, Table VI", [])),
    )


def _plot_individual(rows: list[dict[str, Any]], path: Path, *, title: str) -> None:
    require("matplotlib", purpose="the figures of crowdhide reproduce").use("Agg")
    import matplotlib.pyplot as plt

    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    fig, axes = plt.subplots(1, len(datasets), figsize=(6 * len(datasets), 4), squeeze=False)
    series = (
        ("paper_gaussian", None, "paper: Gaussian"),
        ("paper_shuffle_inv", None, "paper: shuffle+INV"),
        ("gaussian_mean", "gaussian_sd", "here: Gaussian"),
        ("shuffle_inv_mean", "shuffle_inv_sd", "here: shuffle+INV"),
    )
    for ax, dataset in zip(axes[0], datasets, strict=True):
        sub = [r for r in rows if r["dataset"] == dataset]
        x = np.arange(len(sub))
        for i, (key, sd, label) in enumerate(series):
            ax.bar(
                x + (i - 1.5) * 0.2,
                [r[key] for r in sub],
                width=0.2,
                yerr=None if sd is None else [r[sd] for r in sub],
                label=label,
            )
        ax.set_xticks(x, [str(r["x0"]) for r in sub])
        ax.set_yscale("log")
        ax.set_xlabel("x0")
        ax.set_ylabel("|estimate_x0 − π_x0|")
        ax.set_title(f"{title}: {dataset}, ε = 4, δ = {UTILITY_DELTA:g}", fontsize=9)
        legend_below(ax, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
