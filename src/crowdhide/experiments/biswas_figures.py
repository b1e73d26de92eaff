"""Biswas, Jung, Palamidessi, "Tight differential privacy guarantees for the shuffle model with
k-randomized response": the Gowalla figures 3–7 reproduced.

* ``biswas-fig3`` — Fig. 3: check-in maps (lat/lon scatter, no map tiles) and heatmaps on the
  paper's grids (San Francisco 24 × 17, Paris 16 × 12).
* ``biswas-fig4-5`` — Figs. 4 and 5: heatmaps of the original distribution, the central
  Gaussian estimate and the shuffle+INV estimate (SF, Paris) at ε = 4.
* ``biswas-fig6-7`` — Figs. 6 and 7: TVD box plots (10 runs per n) of the Gaussian, the raw
  shuffled histogram and shuffle+INV vs n (SF 10,000–100,000; Paris 1,000–10,000) at ε = 4
  and 6, with the conclusion compared with the paper's text.

Utility comparisons run both models at the same certified (ε, δ = 1e-6); see
:mod:`crowdhide.experiments._biswas_common`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._extras import require
from crowdhide._output import write_csv, write_json
from crowdhide.experiments._biswas_common import (
    UTILITY_DELTA,
    CertifiedSetting,
    CityData,
    certified_setting,
    load_city,
    run_estimates,
)
from crowdhide.experiments._formatting import legend_below, progress
from crowdhide.experiments.claims import Claim, Verdict, all_of, better, match_all
from crowdhide.experiments.registry import ExperimentResult, experiment
from crowdhide.mechanisms import total_variation_distance
from crowdhide.protocols.data import load_gowalla_points

__all__ = ["FIG3_GRIDS", "run_fig3", "run_fig4_5", "run_fig6_7"]

CITIES = ("gowalla-sf", "gowalla-paris")
#: The paper's grids (§V-D): (cells along longitude, cells along latitude).
FIG3_GRIDS = {"gowalla-sf": (24, 17), "gowalla-paris": (16, 12)}
#: Check-ins the paper reports (§V-D).
PAPER_CHECKINS = {"gowalla-sf": 123_108, "gowalla-paris": 10_260}
_TITLES = {"gowalla-sf": "San Francisco", "gowalla-paris": "Paris"}


def _pyplot() -> Any:
    require("matplotlib", purpose="the figures of crowdhide reproduce").use("Agg")
    import matplotlib.pyplot as plt

    return plt


# ---- Fig. 3 --------------------------------------------------------------------------------


def _grid_counts(name: str) -> tuple[npt.NDArray[np.float64], dict[str, Any], str | None]:
    points = load_gowalla_points(name)
    south, north, west, east = points.box
    nx, ny = FIG3_GRIDS[name]
    counts, _, _ = np.histogram2d(
        points.latitude,
        points.longitude,
        bins=(ny, nx),
        range=((south, north), (west, east)),
    )
    share = counts / max(counts.sum(), 1.0)
    record = {
        "dataset": name,
        "paper_checkins": PAPER_CHECKINS[name],
        "checkins": int(points.latitude.size),
        "inside_box": int(counts.sum()),
        "grid": f"{nx} x {ny}",
        "cells": nx * ny,
        "nonempty_cells": int((counts > 0).sum()),
        "top_cell_share": float(share.max()),
        "cells_for_half_the_checkins": int(
            np.searchsorted(np.cumsum(np.sort(share.ravel())[::-1]), 0.5) + 1
        ),
        "stand_in": points.note is not None,
    }
    # The authors' grid files (used by the utility targets) are a separate discretisation.
    city = load_city(name)
    record["grid_file_rows"] = int(city.values.size)
    record["grid_file_nonempty_cells"] = int(np.unique(city.values).size)
    record["grid_file_cells"] = city.k
    return counts, record, points.note


@experiment(
    "biswas-fig3",
    "Biswas et al. Fig. 3: Gowalla SF/Paris check-in maps and heatmaps",
    aliases=("seed003-fig3",),
)
def run_fig3(out_dir: Path, *, rng: np.random.Generator, quick: bool) -> ExperimentResult:
    plt = _pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(12, 9))
    records, notes = [], []
    with progress("Fig. 3", len(CITIES)) as bar:
        for col, name in enumerate(CITIES):
            record, note = _fig3_city(fig, axes, col, name, rng=rng, quick=quick)
            records.append(record)
            if note:
                notes.append(note)
            bar.advance(name)
    fig.tight_layout()
    files = (
        write_csv(out_dir / "biswas_fig3.csv", records),
        write_json(out_dir / "biswas_fig3.json", records, infinities="strings"),
        out_dir / "biswas_fig3.png",
    )
    fig.savefig(files[2], dpi=110)
    plt.close(fig)
    lines = [
        f"{_TITLES[r['dataset']]}: paper {r['paper_checkins']:,} check-ins, here "
        f"{r['checkins']:,} ({r['inside_box']:,} inside the box); grid {r['grid']}: "
        f"{r['nonempty_cells']}/{r['cells']} cells non-empty, top cell {r['top_cell_share']:.1%}"
        f", half of the check-ins in {r['cells_for_half_the_checkins']} cells; the authors' grid "
        f"file (utility targets): {r['grid_file_rows']:,} rows, "
        f"{r['grid_file_nonempty_cells']}/{r['grid_file_cells']} cells used"
        for r in records
    ]
    lines.append("no map tiles (offline): panels (a), (b) are lat/lon scatters of the check-ins")
    verdicts = (
        match_all(
            Claim(PAPER, "Sec. V-D, Fig. 3", "SF has 123,108 check-ins and Paris 10,260"),
            [(r["dataset"], float(r["checkins"]), float(r["paper_checkins"])) for r in records],
            rtol=0.01,
            what="check-ins in the offline data",
            reason="the offline subsets differ from the paper's",
        ),
    )
    return ExperimentResult(
        files=files, comparison=tuple(lines + notes), data={"rows": records}, verdicts=verdicts
    )


def _fig3_city(
    fig: Any, axes: Any, col: int, name: str, *, rng: np.random.Generator, quick: bool
) -> tuple[dict[str, Any], str | None]:
    """Column ``col`` of Fig. 3 (a check-in scatter above a heatmap); the city's record and
    note."""
    from matplotlib.ticker import MaxNLocator

    points = load_gowalla_points(name)
    counts, record, note = _grid_counts(name)
    south, north, west, east = points.box
    shown = min(points.latitude.size, 20_000 if quick else points.latitude.size)
    pick = rng.choice(points.latitude.size, size=shown, replace=False)
    ax = axes[0, col]
    ax.scatter(points.longitude[pick], points.latitude[pick], s=0.3, c="m", alpha=0.4)
    ax.set(xlim=(west, east), ylim=(south, north), xlabel="longitude", ylabel="latitude")
    ax.set_title(f"({'ab'[col]}) {_TITLES[name]}: {shown:,} check-ins", fontsize=9)
    ax.set_aspect(1.0 / math.cos(math.radians(0.5 * (south + north))))
    ax = axes[1, col]
    image = ax.imshow(np.log10(1.0 + counts), origin="lower", extent=(west, east, south, north))
    ax.set_aspect(1.0 / math.cos(math.radians(0.5 * (south + north))))
    ax.set_title(
        f"({'cd'[col]}) {_TITLES[name]} heatmap, {record['grid']} grid, log10(1 + count)",
        fontsize=9,
    )
    ax.set(xlabel="longitude", ylabel="latitude")
    ax.xaxis.set_major_locator(MaxNLocator(4))  # lon labels overlapped at 6+ ticks
    fig.colorbar(image, ax=ax, shrink=0.7)
    return record, note


PAPER = "Biswas et al."
#: "Slightly better": the Gaussian's TVD below shuffle+INV's by a factor in (1, 1.5].
SLIGHTLY = (1.25, 0.2)


# ---- Figs. 4 and 5 -------------------------------------------------------------------------


def _as_grid(vector: npt.NDArray[np.float64], city: CityData) -> npt.NDArray[np.float64]:
    # Cells count i from the north edge and j from the east edge: flip j so west is left.
    return np.asarray(vector.reshape(city.rows, city.cols)[:, ::-1], dtype=np.float64)


@experiment(
    "biswas-fig4-5",
    "Biswas et al. Figs. 4–5: heatmaps original/Gaussian/shuffle+INV",
    aliases=("seed003-fig4-5",),
)
def run_fig4_5(out_dir: Path, *, rng: np.random.Generator, quick: bool) -> ExperimentResult:
    epsilon = 4.0
    records, notes, files = [], [], []
    with progress("Figs. 4-5", len(CITIES)) as bar:
        for fig_no, name in zip((4, 5), CITIES, strict=True):
            city = load_city(name)
            if city.note:
                notes.append(city.note)
            setting = certified_setting(n=city.values.size, k=city.k, epsilon=epsilon, fast=quick)
            est = run_estimates(city.values, setting, rng=rng)
            files.append(_plot_fig45(out_dir, fig_no, name, city, setting, est))
            records.append(_fig45_record(fig_no, name, setting, est))
            bar.advance(name)
    files += [
        write_csv(out_dir / "biswas_fig4_5.csv", records),
        write_json(out_dir / "biswas_fig4_5.json", records, infinities="strings"),
    ]
    lines = [
        f"Fig. {r['figure']} {_TITLES[r['dataset']]}: TVD Gaussian {r['tvd_gaussian']:.4f}, "
        f"shuffle+INV {r['tvd_shuffle_inv']:.4f} "
        f"(paper's eps0=4: {r['tvd_shuffle_inv_eps0_4']:.4f}), "
        f"raw shuffle {r['tvd_shuffle']:.4f}; eps0 = {r['eps0_calibrated']:.3f}"
        for r in records
    ]
    lines.append(
        "paper: 'Gaussian approximates the original slightly better than shuffle+INV, but it is "
        "comparable'; here both heatmaps are close to the original at the certified "
        f"(4, {UTILITY_DELTA:g}) and the Gaussian's TVD is smaller (ratio in the CSV)"
    )
    verdicts = tuple(
        better(
            Claim(
                PAPER,
                f"Sec. V-C, Fig. {r['figure']}",
                "the Gaussian approximates the "
                "original slightly better than shuffle+INV (comparable)",
            ),
            low=r["tvd_gaussian"],
            high=r["tvd_shuffle_inv"],
            paper_ratio=SLIGHTLY[0],
            rtol=SLIGHTLY[1],
            what=f"{_TITLES[r['dataset']]}: TVD Gaussian vs shuffle+INV",
            reason="the gap is not 'slight' (ratio outside 1.0–1.5)",
        )
        for r in records
    )
    return ExperimentResult(
        files=tuple(files),
        comparison=tuple(lines + notes),
        data={"rows": records},
        verdicts=verdicts,
    )


def _plot_fig45(
    out_dir: Path,
    fig_no: int,
    name: str,
    city: CityData,
    setting: CertifiedSetting,
    est: dict[str, npt.NDArray[np.float64]],
) -> Path:
    """One of Figs. 4-5: the original heatmap beside the Gaussian and shuffle+INV estimates."""
    plt = _pyplot()
    panels = {
        "original": est["truth"],
        "Gaussian (H/n)": est["gaussian"],
        "shuffle+INV": est["shuffle_inv"],
    }
    vmax = float(max(v.max() for v in panels.values()))
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for ax, (label, vector) in zip(axes, panels.items(), strict=True):
        image = ax.imshow(_as_grid(vector, city), vmin=0.0, vmax=vmax, cmap="hot_r")
        tvd = total_variation_distance(vector, est["truth"])
        ax.set_title(f"{label}  (TVD {tvd:.4f})", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set(xlabel="grid column (longitude)", ylabel="grid row (latitude)")
    fig.colorbar(image, ax=list(axes), shrink=0.8)
    fig.suptitle(
        f"Fig. {fig_no}: {_TITLES[name]}, n = {city.values.size:,}, k = {city.k}, "
        f"certified (ε = {setting.certified_epsilon:.3f}, δ = {UTILITY_DELTA:g}), "
        f"ε0 = {setting.eps0:.3f}",
        fontsize=10,
    )
    png = out_dir / f"biswas_fig{fig_no}.png"
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png


def _fig45_record(
    fig_no: int, name: str, setting: CertifiedSetting, est: dict[str, npt.NDArray[np.float64]]
) -> dict[str, Any]:
    record: dict[str, Any] = {"figure": fig_no, "dataset": name, **setting.as_record()}
    for key in ("gaussian", "gaussian_projected", "shuffle", "shuffle_inv", "shuffle_inv_eps0_4"):
        record[f"tvd_{key}"] = total_variation_distance(est[key], est["truth"])
    record["ratio_shuffle_inv_to_gaussian"] = record["tvd_shuffle_inv"] / record["tvd_gaussian"]
    return record


# ---- Figs. 6 and 7 -------------------------------------------------------------------------

FIG67_EPSILONS = (4.0, 6.0)
FIG67_N = {
    "gowalla-sf": tuple(range(10_000, 100_001, 10_000)),
    "gowalla-paris": tuple(range(1_000, 10_001, 1_000)),
}
FIG67_QUICK_N = {"gowalla-sf": (10_000, 50_000), "gowalla-paris": (1_000, 5_000)}
_BOXES = (("gaussian", "Gaussian"), ("shuffle", "shuffle"), ("shuffle_inv", "shuffle+INV"))


def _tvd_runs(
    city: CityData, n: int, epsilon: float, runs: int, rng: np.random.Generator, fast: bool
) -> dict[str, Any]:
    """``runs`` fresh samples of n check-ins (without replacement), each privatized once."""
    setting = certified_setting(n=n, k=city.k, epsilon=epsilon, fast=fast, paper_eps0=False)
    tvds: dict[str, list[float]] = {key: [] for key, _ in _BOXES}
    for _ in range(runs):
        sample = rng.choice(city.values, size=n, replace=False)
        est = run_estimates(sample, setting, rng=rng, paper_eps0=False)
        for key, _ in _BOXES:
            tvds[key].append(total_variation_distance(est[key], est["truth"]))
    record: dict[str, Any] = {"dataset": city.name, **setting.as_record(), "runs": runs}
    for key, _ in _BOXES:
        record[f"tvd_{key}"] = tvds[key]
        record[f"tvd_{key}_median"] = float(np.median(tvds[key]))
    record["median_ratio_inv_to_gaussian"] = (
        record["tvd_shuffle_inv_median"] / record["tvd_gaussian_median"]
    )
    record["median_gap_inv_minus_gaussian"] = (
        record["tvd_shuffle_inv_median"] - record["tvd_gaussian_median"]
    )
    return record


def _trend_lines(records: list[dict[str, Any]]) -> list[str]:
    lines = []
    for name in CITIES:
        for eps in FIG67_EPSILONS:
            sub = [r for r in records if r["dataset"] == name and r["epsilon"] == eps]
            first, last = sub[0], sub[-1]
            order = all(
                r["tvd_gaussian_median"] < r["tvd_shuffle_inv_median"] < r["tvd_shuffle_median"]
                for r in sub
            )
            lines.append(
                f"{_TITLES[name]} eps={eps:g}: median TVD n={first['n']:,}: G "
                f"{first['tvd_gaussian_median']:.4f} INV {first['tvd_shuffle_inv_median']:.4f} "
                f"shuffle {first['tvd_shuffle_median']:.3f}; n={last['n']:,}: G "
                f"{last['tvd_gaussian_median']:.4f} INV {last['tvd_shuffle_inv_median']:.4f}; "
                f"INV/G {first['median_ratio_inv_to_gaussian']:.2f}x -> "
                f"{last['median_ratio_inv_to_gaussian']:.2f}x, INV-G "
                f"{first['median_gap_inv_minus_gaussian']:.4f} -> "
                f"{last['median_gap_inv_minus_gaussian']:.4f}; G < INV < shuffle at every n: "
                f"{'yes' if order else 'no'}"
            )
    return lines


def _conclusion(records: list[dict[str, Any]]) -> list[str]:
    groups = [
        [r for r in records if r["dataset"] == name and r["epsilon"] == eps]
        for name in CITIES
        for eps in FIG67_EPSILONS
    ]
    ratio_grows = sum(
        g[-1]["median_ratio_inv_to_gaussian"] > g[0]["median_ratio_inv_to_gaussian"] for g in groups
    )
    gap_shrinks = sum(
        g[-1]["median_gap_inv_minus_gaussian"] < g[0]["median_gap_inv_minus_gaussian"]
        for g in groups
    )
    at6 = [g for g in groups if g[0]["epsilon"] == 6.0]
    at4 = [g for g in groups if g[0]["epsilon"] == 4.0]
    closer6 = sum(
        g6[0]["median_ratio_inv_to_gaussian"] < g4[0]["median_ratio_inv_to_gaussian"]
        for g4, g6 in zip(at4, at6, strict=True)
    )
    return [
        "paper's text contradicts itself: abstract/conclusion say the gap 'tends to vanish as "
        "the number of samples increases'; SecV-C2 and Figs. 6-7 say the models are comparable "
        "'when n is small' and the Gaussian clearly better at large n",
        f"here: the absolute gap INV - G shrinks with n in {gap_shrinks}/{len(groups)} panels "
        f"(both errors go to 0), but the ratio INV/G grows with n in {ratio_grows}/{len(groups)} "
        "panels (the Gaussian's TVD falls like 1/n, shuffle+INV's more slowly even though the "
        "calibrated eps0 grows with n): relative to the Gaussian the gap does NOT vanish, it "
        "widens -- as SecV-C2 says and the abstract/conclusion deny",
        f"paper: comparable 'when the privacy level is low (eps = 6)'; here eps = 6 brings "
        f"shuffle+INV closer to the Gaussian at the smallest n in {closer6}/{len(at6)} cities "
        "(ratio in the CSV)",
        "calibrated eps0 at the smallest n, eps = 4 -> 6: "
        + ", ".join(
            f"{_TITLES[g4[0]['dataset']]} {g4[0]['eps0_calibrated']:.2f} -> "
            f"{g6[0]['eps0_calibrated']:.2f}"
            for g4, g6 in zip(at4, at6, strict=True)
        )
        + ": the valid certificates grow steeply in eps0 there, so the shuffle model can spend "
        "little of the extra budget while the Gaussian spends all of it; part of the gap at "
        "eps = 6 is looseness of the certificates, not of the mechanism",
    ]


@experiment(
    "biswas-fig6-7",
    "Biswas et al. Figs. 6–7: TVD box plots vs n, Gowalla, ε = 4, 6",
    aliases=("seed003-fig6-7",),
)
def run_fig6_7(out_dir: Path, *, rng: np.random.Generator, quick: bool) -> ExperimentResult:
    runs = 3 if quick else 10
    grids = FIG67_QUICK_N if quick else FIG67_N
    records: list[dict[str, Any]] = []
    notes: list[str] = []
    total = sum(len(v) for v in grids.values()) * len(FIG67_EPSILONS)
    with progress("Figs. 6-7", total) as bar:
        for name in CITIES:
            city = load_city(name)
            if city.note:
                notes.append(city.note)
            for eps in FIG67_EPSILONS:
                for n in grids[name]:
                    records.append(_tvd_runs(city, n, eps, runs, rng, quick))
                    bar.advance(f"{name} eps={eps:g} n={n:,} done")
    files = [
        write_csv(out_dir / "biswas_fig6_7.csv", [_flat(r) for r in records]),
        write_json(out_dir / "biswas_fig6_7.json", records, infinities="strings"),
    ]
    for fig_no, name in zip((6, 7), CITIES, strict=True):
        files.append(out_dir / f"biswas_fig{fig_no}.png")
        _plot_boxes([r for r in records if r["dataset"] == name], files[-1], fig_no, name)
    lines = [
        f"certified (eps, delta = {UTILITY_DELTA:g}) for both models, eps0 calibrated per n; "
        f"{runs} runs per n, each a fresh sample of n check-ins without replacement",
        *_trend_lines(records),
        *_conclusion(records),
    ]
    return ExperimentResult(
        files=tuple(files),
        comparison=tuple(lines + notes),
        data={"rows": records},
        verdicts=tuple(_fig67_verdicts(records)),
    )


def _fig67_verdicts(records: list[dict[str, Any]]) -> list[Verdict]:
    panels = [
        (
            f"{_TITLES[name]} ε={eps:g}",
            [r for r in records if r["dataset"] == name and r["epsilon"] == eps],
        )
        for name in CITIES
        for eps in FIG67_EPSILONS
    ]
    return [
        all_of(
            Claim(
                PAPER, "abstract, Sec. VII", "the gap to the Gaussian tends to vanish as n grows"
            ),
            [
                (
                    f"{label}: INV/G {g[0]['median_ratio_inv_to_gaussian']:.2f}× -> "
                    f"{g[-1]['median_ratio_inv_to_gaussian']:.2f}×",
                    g[-1]["median_ratio_inv_to_gaussian"] <= g[0]["median_ratio_inv_to_gaussian"],
                )
                for label, g in panels
            ],
            what="median TVD ratio shuffle+INV / Gaussian at the largest n <= at the smallest",
            reason="relative to the Gaussian the gap widens with n (as Sec. V-C2 says)",
        ),
        all_of(
            Claim(PAPER, "Sec. V-C2, Figs. 6-7", "Gaussian < shuffle+INV < raw shuffle in TVD"),
            [
                (
                    f"{label} n={r['n']}",
                    r["tvd_gaussian_median"]
                    < r["tvd_shuffle_inv_median"]
                    < r["tvd_shuffle_median"],
                )
                for label, g in panels
                for r in g
            ],
            what="median TVD order at every n",
            reason="the order changes at these n",
        ),
    ]


def _flat(record: dict[str, Any]) -> dict[str, Any]:
    return {
        k: (";".join(f"{x:.6g}" for x in v) if isinstance(v, list) else v)
        for k, v in record.items()
    }


def _plot_boxes(records: list[dict[str, Any]], path: Path, fig_no: int, name: str) -> None:
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(FIG67_EPSILONS), figsize=(14, 4.5))
    for ax, eps in zip(axes, FIG67_EPSILONS, strict=True):
        sub = [r for r in records if r["epsilon"] == eps]
        positions = np.arange(len(sub), dtype=float)
        for i, (key, label) in enumerate(_BOXES):
            parts = ax.boxplot(
                [r[f"tvd_{key}"] for r in sub],
                positions=positions + (i - 1) * 0.27,
                widths=0.24,
                patch_artist=True,
                manage_ticks=False,
                medianprops={"color": "black"},
            )
            for box in parts["boxes"]:
                box.set_facecolor(f"C{i}")
            ax.plot([], [], color=f"C{i}", lw=6, label=label)
        ax.set_xticks(positions, [f"{r['n'] // 1000}k" for r in sub])
        ax.set_yscale("log")
        ax.set_xlabel("n")
        ax.set_ylabel("TVD to the original distribution")
        ax.set_title(
            f"Fig. {fig_no}: {_TITLES[name]}, ε = {eps:g}, δ = {UTILITY_DELTA:g} (certified)",
            fontsize=9,
        )
        legend_below(ax, ncol=3, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
