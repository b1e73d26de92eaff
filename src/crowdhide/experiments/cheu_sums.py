"""Cheu, Smith, Ullman, Zeber, Zhilyaev, "Distributed differential privacy via shuffling"
(EUROCRYPT 2019): error of the shuffled bit sum vs n.

Compares, at (ε, δ = 1e-6), the standard deviation of the bit-sum estimate with

* the paper's Lemma 4.8 λ,
* the exact smallest λ (tight shuffle accountant),
* local randomized response at ε (no shuffler): ``√(n e^ε)/(e^ε − 1)``,
* the central Laplace mechanism: ``√2/ε``,

and checks one simulated run per point against the predicted standard deviation.
Reference numbers: values recomputed independently from the paper's formulas (kept in
this module).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from crowdhide._extras import require
from crowdhide._output import write_csv, write_json
from crowdhide.experiments.registry import ExperimentResult, experiment
from crowdhide.protocols.bitsum import (
    BitSumRandomizer,
    bitsum_estimate,
    bitsum_variance,
    calibrate_bit_sum,
    lemma48_lambda,
)
from crowdhide.protocols.realsum import run_real_sum, run_single_message_sum
from crowdhide.protocols.results import SumRun

__all__ = ["run_error"]

#: Technical note on Cheu et al., §5(a): (n, ε) -> (Lemma 4.8 λ, sd of the estimate).
NOTE_REFERENCE = {
    (10_000, 1.0): (972.916, 23.83),
    (10_000, 0.5): (3830.066, 63.77),
    (1_000_000, 1.0): (972.916, 22.07),
    (1_000_000, 0.5): (3891.662, 44.24),
}
#: Technical note on Cheu et al., §5(c): smallest λ with exact (ε, 1e-6)-DP.
NOTE_EXACT_LAMBDA = {(10_000, 1.0): 67.43, (10_000, 0.5): 175.26, (1_000_000, 1.0): 68.13}


@experiment(
    "cheu-error",
    "Cheu et al. bit sum: error vs n, paper λ vs exact λ vs local/central",
    aliases=("seed002-error",),
)
def run_error(out_dir: Path, *, rng: np.random.Generator, quick: bool) -> ExperimentResult:
    delta = 1e-6
    ns = [10_000, 100_000] if quick else [10_000, 30_000, 100_000, 300_000, 1_000_000]
    epsilons = [1.0, 0.5]
    rows = [_bit_sum_row(n, eps, delta, rng) for eps in epsilons for n in ns]
    real_rows = _real_sum_rows(ns[:2] if quick else ns[:4], delta, quick, rng)
    csv_path = write_csv(out_dir / "cheu_error.csv", rows)
    json_path = write_json(out_dir / "cheu_error.json", rows)
    png_path = out_dir / "cheu_error.png"
    _plot(rows, epsilons, png_path)
    real_path = out_dir / "cheu_realsum.csv"
    if real_rows:
        write_csv(real_path, real_rows)
    files = (csv_path, json_path, png_path) + ((real_path,) if real_rows else ())
    return ExperimentResult(
        files=files,
        comparison=tuple(_comparison(rows, real_rows)),
        data={"rows": rows, "real_sum_rows": real_rows},
    )


def _bit_sum_row(n: int, eps: float, delta: float, rng: np.random.Generator) -> dict[str, Any]:
    """Standard deviation of the bit-sum estimate with the paper's and the exact λ, next to
    local RR and central Laplace, and the error of one simulated run with the exact λ."""
    row: dict[str, Any] = {"n": n, "epsilon": eps, "delta": delta}
    try:
        lam_paper = lemma48_lambda(n=n, epsilon=eps, delta=delta)
        row["lambda_paper"] = lam_paper
        row["sd_paper"] = math.sqrt(bitsum_variance(n=n, lam=lam_paper))
    except ValueError:
        row["lambda_paper"] = math.nan
        row["sd_paper"] = math.nan
    lam_exact, cert = calibrate_bit_sum(n=n, epsilon=eps, delta=delta, calibration="exact")
    row["lambda_exact"] = lam_exact
    row["sd_exact"] = math.sqrt(bitsum_variance(n=n, lam=lam_exact))
    row["certified_epsilon_exact"] = cert.epsilon
    row["sd_local_rr"] = math.sqrt(n * math.exp(eps)) / math.expm1(eps)
    row["sd_central_laplace"] = math.sqrt(2.0) / eps
    bits = (rng.random(n) < 0.3).astype(np.int64)
    reports = BitSumRandomizer(n=n, lam=lam_exact).randomize(bits, rng=rng)
    est = bitsum_estimate(ones=float(reports.sum()), messages=n, n=n, lam=lam_exact)
    row["simulated_error"] = est - float(bits.sum())
    return row


def _real_sum_rows(
    ns: list[int], delta: float, quick: bool, rng: np.random.Generator
) -> list[dict[str, Any]]:
    """Real sums on [0, 1] (ε = 1): multi-message (Cheu et al.) and single-message blanket
    (Balle et al.) runs, with their standard errors, against the central Laplace √2/ε."""
    real_rows: list[dict[str, Any]] = []
    for n in ns:
        values = rng.beta(2.0, 5.0, size=n)
        for messages in (1, 4) if quick else (1, 4, 16):
            try:
                run = run_real_sum(
                    values,
                    lower=0.0,
                    upper=1.0,
                    epsilon=1.0,
                    delta=delta,
                    messages=messages,
                    calibration="exact",
                    rng=rng,
                )
            except ValueError:
                continue  # outside Lemma 4.8's range
            real_rows.append(_real_row("multi", n, messages, run))
        for levels in (4, 16) if quick else (4, 16, 64):
            run = run_single_message_sum(
                values, lower=0.0, upper=1.0, epsilon=1.0, delta=delta, levels=levels, rng=rng
            )
            real_rows.append(_real_row("single", n, levels, run))
    return real_rows


def _comparison(rows: list[dict[str, Any]], real_rows: list[dict[str, Any]]) -> list[str]:
    comparison = []
    for (n, eps), (lam_ref, sd_ref) in NOTE_REFERENCE.items():
        match = [r for r in rows if r["n"] == n and r["epsilon"] == eps]
        if match:
            r = match[0]
            comparison.append(
                f"n={n:.0e} eps={eps}: paper lambda {r['lambda_paper']:.3f} (note {lam_ref}), "
                f"sd {r['sd_paper']:.2f} (note {sd_ref})"
            )
    for (n, eps), lam_ref in NOTE_EXACT_LAMBDA.items():
        match = [r for r in rows if r["n"] == n and r["epsilon"] == eps]
        if match:
            r = match[0]
            comparison.append(
                f"n={n:.0e} eps={eps}: exact lambda {r['lambda_exact']:.2f} (note {lam_ref}); "
                f"sd {r['sd_exact']:.2f} vs paper {r['sd_paper']:.2f} "
                f"({r['sd_paper'] / r['sd_exact']:.2f}x smaller error)"
            )
    for r in real_rows:
        comparison.append(
            f"real sum [0,1], n={r['n']:.0e}, {r['protocol']} ({r['parameter']}): std "
            f"{r['std_error']:.1f}, error {r['error']:+.1f}, certified eps {r['epsilon']:.3f} "
            f"({r['bound']}); central Laplace std {math.sqrt(2):.2f}"
        )
    return comparison


def _real_row(protocol: str, n: int, parameter: int, run: SumRun) -> dict[str, Any]:
    return {
        "protocol": protocol,
        "n": n,
        "parameter": f"{'messages' if protocol == 'multi' else 'levels'}={parameter}",
        "std_error": run.std_error,
        "error": run.error,
        "epsilon": run.privacy.epsilon,
        "bound": run.privacy.source,
        "messages": run.messages,
    }


def _plot(rows: list[dict[str, Any]], epsilons: list[float], path: Path) -> None:
    require("matplotlib", purpose="the figures of crowdhide reproduce").use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(epsilons), figsize=(5 * len(epsilons), 4), squeeze=False)
    for ax, eps in zip(axes[0], epsilons, strict=True):
        sub = [r for r in rows if r["epsilon"] == eps]
        ns = [r["n"] for r in sub]
        for key, label in (
            ("sd_local_rr", "local RR"),
            ("sd_paper", "shuffle, paper λ (Lemma 4.8)"),
            ("sd_exact", "shuffle, exact λ"),
            ("sd_central_laplace", "central Laplace"),
        ):
            ax.loglog(ns, [r[key] for r in sub], marker="o", label=label)
        ax.set_title(f"bit sum, ε = {eps}, δ = 1e-6")
        ax.set_xlabel("n")
        ax.set_ylabel("standard deviation of the estimate")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
