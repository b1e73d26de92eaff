"""Cheu, Smith, Ullman, Zeber, Zhilyaev, Sections 2.2 and 6.2: the multi-message histogram and
selection protocols built from repeated bit sums, and the one-message lower-bound chain.

* Histogram (ε = 1, δ = 1e-6): the largest count error against n and D, beside the
  simultaneous Bernstein bound at β = 0.05 (union over D). The paper: error
  O(√(log(1/δ)·log D)/ε), independent of n.
* Selection (ε = 1, δ = 1e-6; one coordinate Ber(0.6), the others Ber(0.4), success as in the
  paper's (9): the chosen coordinate's sum is within n/10 of the largest): the smallest n of a
  grid with success >= 90%, against d. The paper: n = Õ(√d) in the general shuffled model.
* Lower-bound chain: Theorem 6.2 on the bit-sum randomizer at the exact λ (R is
  (ε + ln n, δ)-DP), and the exponent 1/17 of Corollaries 6.6 and 6.8 recomputed from
  ε_L = 8(ε + ln n) and Theorems 6.5 / 6.7 (their unknown constants set to 1).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from crowdhide._extras import require
from crowdhide._output import write_csv, write_json
from crowdhide.experiments._formatting import plain_log_ticks, progress
from crowdhide.experiments.claims import Claim, Verdict, all_of, match
from crowdhide.experiments.registry import ExperimentResult, experiment
from crowdhide.protocols.bitsum import calibrate_bit_sum, eps0_from_lambda
from crowdhide.protocols.multibit import run_bitsum_histogram, run_bitsum_selection

__all__ = ["chain_exponent", "chain_rows", "run_multibit"]

PAPER = "Cheu et al."
EPS, DELTA, BETA = 1.0, 1e-6, 0.05


def _histogram_rows(quick: bool, rng: np.random.Generator) -> list[dict[str, Any]]:
    ns = (1000, 10_000) if quick else (1000, 10_000, 100_000)
    domains = (10, 100) if quick else (10, 100, 1000)
    trials = 10 if quick else 30
    rows = []
    cells = [(n, D) for n in ns for D in domains if n * D <= 10**7]
    with progress("histogram", len(cells)) as bar:
        for n, D in cells:
            values = rng.integers(0, D, size=n)
            runs = [
                run_bitsum_histogram(values, domain=D, epsilon=EPS, delta=DELTA, beta=BETA, rng=rng)
                for _ in range(trials)
            ]
            errors = np.array([r.max_error for r in runs])
            rows.append(
                {
                    "n": n,
                    "D": D,
                    "trials": trials,
                    "lambda": runs[0].lam,
                    "mean_max_error": float(errors.mean()),
                    "sd_max_error": float(errors.std(ddof=1)),
                    "bound_at_beta": runs[0].error_bound,
                    "exceed_fraction": float((errors > runs[0].error_bound).mean()),
                    "sqrt_logD_log1_delta": math.sqrt(math.log(1 / DELTA) * math.log(D)) / EPS,
                }
            )
            bar.advance(f"n={n} D={D}")
    return rows


def _selection_rows(quick: bool, rng: np.random.Generator) -> list[dict[str, Any]]:
    ds = (4, 16, 64) if quick else (4, 16, 64, 256)
    ns = [125 * 2**k for k in range(10)]
    trials = 10 if quick else 20
    rows = []
    with progress("selection", len(ds)) as bar:
        for d in ds:
            for n in ns:
                if n * d > 2 * 10**7:
                    break
                wins = 0
                for _ in range(trials):
                    x = (rng.random((n, d)) < 0.4).astype(np.uint8)
                    x[:, 0] = rng.random(n) < 0.6
                    chosen, run = run_bitsum_selection(x, epsilon=EPS, delta=DELTA, rng=rng)
                    wins += run.exact[chosen] >= run.exact.max() - n / 10
                rows.append(
                    {
                        "d": d,
                        "n": n,
                        "success": wins / trials,
                        "trials": trials,
                        "run_epsilon": run.run_epsilon,
                        "rule": run.rule,
                        "lambda": run.lam,
                    }
                )
                if wins / trials >= 0.9:
                    break
            bar.advance(f"d={d}")
    return rows


def chain_exponent(kind: str, log_ln_d: float) -> float:
    """ln of the smallest n the one-message chain allows for a domain d with ln(ln d) =
    ``log_ln_d``: ε_L = 8(1 + ln n) (Thm 6.1 at ε = 1), then Thm 6.5 (selection:
    n >= d ln d/(e^ε_L − 1)²) or Thm 6.7 (histogram: n >= ln D/(e^ε_L − 1)²), constants 1.
    Found by bisection on ln n (0 when n = 1 already satisfies it)."""
    need = math.exp(log_ln_d) + log_ln_d if kind == "selection" else log_ln_d
    lo, hi = 0.0, 1e6
    for _ in range(200):
        mid = (lo + hi) / 2.0  # mid = ln n
        eps_l = 8.0 * (1.0 + mid)
        gap = mid + 2.0 * (eps_l + math.log(-math.expm1(-eps_l))) - need
        lo, hi = (lo, mid) if gap >= 0 else (mid, hi)
    return hi


def _first_forcing() -> float:
    """The smallest ln ln D at which the histogram chain forces n >= 2 (bisection)."""
    lo, hi = 0.0, 1000.0
    for _ in range(100):
        mid = (lo + hi) / 2.0
        lo, hi = (lo, mid) if chain_exponent("histogram", mid) >= math.log(2.0) else (mid, hi)
    return hi


def chain_rows() -> list[dict[str, Any]]:
    """Theorem 6.2 on the bit-sum randomizer: R's ε at δ against the shuffled ε + ln n."""
    rows = []
    for n in (100, 1000, 10_000, 100_000):
        lam, cert = calibrate_bit_sum(n=n, epsilon=EPS, delta=DELTA)
        eps0 = eps0_from_lambda(n=n, lam=lam)
        p = 1.0 / (1.0 + math.exp(-eps0))  # binary RR: δ(ε) = p − e^ε (1 − p) below ε0
        eps_r = max(0.0, math.log((p - DELTA) / (1.0 - p)))
        rows.append(
            {
                "n": n,
                "lambda": lam,
                "eps0_R": eps0,
                "eps_R_at_delta": eps_r,
                "eps_shuffled": cert.epsilon,
                "thm62_bound": cert.epsilon + math.log(n),
            }
        )
    return rows


def selection_n90(rows: list[dict[str, Any]]) -> float:
    """The n at which success first reaches 90%, interpolated in ln n between the last grid
    point below and the first at or above (``inf`` when never reached).

    Examples
    --------
    >>> round(selection_n90([{"n": 100, "success": 0.5}, {"n": 400, "success": 1.0}]))
    303
    """
    pts = sorted(rows, key=lambda r: r["n"])
    for below, above in zip([None, *pts], pts, strict=False):
        if above["success"] < 0.9:
            continue
        if below is None:
            return float(above["n"])
        w = (0.9 - below["success"]) / (above["success"] - below["success"])
        return float(math.exp(math.log(below["n"]) + w * math.log(above["n"] / below["n"])))
    return math.inf


def _verdicts(
    hist: list[dict[str, Any]], sel: list[dict[str, Any]], chain: list[dict[str, Any]]
) -> list[Verdict]:
    return [*_histogram_verdicts(hist), _selection_verdict(sel), *_chain_verdicts(chain)]


def _histogram_verdicts(hist: list[dict[str, Any]]) -> list[Verdict]:
    """Sec. 2.2: the histogram's error is within the bound, flat in n, ~√log D in D."""
    by_d: dict[int, list[dict[str, Any]]] = {}
    for r in hist:
        by_d.setdefault(r["D"], []).append(r)
    flat = [(D, rs[-1]["mean_max_error"] / rs[0]["mean_max_error"]) for D, rs in by_d.items()]
    worst_flat = max(flat, key=lambda t: abs(math.log(t[1])))
    dd = sorted(by_d)
    grow = by_d[dd[-1]][0]["mean_max_error"] / by_d[dd[0]][0]["mean_max_error"]
    paper_grow = math.sqrt(math.log(dd[-1]) / math.log(dd[0]))
    return [
        all_of(
            Claim(PAPER, "Sec. 2.2 (histogram)", "error within the bit-sum bound at 1 − β"),
            [(f"n={r['n']} D={r['D']}", r["exceed_fraction"] <= 2 * BETA + 0.1) for r in hist],
            what=f"fraction of runs above the union bound (β = {BETA}) <= 2β + 0.1",
        ),
        match(
            Claim(PAPER, "Sec. 2.2 (histogram)", "the error does not depend on n"),
            measured=worst_flat[1],
            paper=1.0,
            rtol=0.25,
            what=f"error ratio largest/smallest n at D={worst_flat[0]}",
            reason="the error changes with n",
        ),
        match(
            Claim(PAPER, "Sec. 2.2 (histogram)", "error O(√(log(1/δ)·log D)/ε)"),
            measured=grow,
            paper=paper_grow,
            rtol=0.3,
            what=f"error ratio D={dd[-1]} vs D={dd[0]} against √(log D ratio)",
            reason="the growth in D differs from √log D (constants and the union bound)",
        ),
    ]


def _selection_verdict(sel: list[dict[str, Any]]) -> Verdict:
    """Sec. 2.2, 6.2: the smallest n that selects with 90% success grows like √d."""
    n90 = {d: selection_n90([r for r in sel if r["d"] == d]) for d in {r["d"] for r in sel}}
    found = {d: n for d, n in n90.items() if math.isfinite(n)}
    slope = math.nan
    if len(found) >= 2:  # least-squares slope of ln n90 against ln d
        x, y = np.log(list(found)), np.log(list(found.values()))
        slope = float(np.polyfit(x, y, 1)[0])
    return match(
        Claim(PAPER, "Sec. 2.2, 6.2 (selection)", "n = Õ(√d) in the general shuffled model"),
        measured=slope,
        paper=0.5,
        rtol=0.3,
        loose=0.5,  # an exponent, not a constant: 0.25..0.75 is still "about √d"
        what="least-squares slope of ln n90 (90% success, interpolated) against ln d",
        reason=(
            "over the measured d the smallest n grows faster than √d: each run's λ grows"
            " like 1/ε_r² ∝ d and must stay below n"
        ),
    )


def _chain_verdicts(chain: list[dict[str, Any]]) -> list[Verdict]:
    """Thm 6.2 on the bit-sum randomizer and the exponents of Cor. 6.6 and 6.8."""
    # Slopes d ln n / d ln d (selection, d = e^500..e^700) and d ln n / d ln ln D
    # (histogram, ln ln D = 300..600): far out, where the chain is not vacuous.
    lo_d, hi_d = math.log(500.0), math.log(700.0)
    s66 = (chain_exponent("selection", hi_d) - chain_exponent("selection", lo_d)) / 200.0
    s68 = (chain_exponent("histogram", 600.0) - chain_exponent("histogram", 300.0)) / 300.0
    return [
        all_of(
            Claim(
                PAPER, "Thm 6.2", "R is (ε + ln n, δ)-DP when the shuffled protocol is (ε, δ)-DP"
            ),
            [(f"n={r['n']}", r["eps_R_at_delta"] <= r["thm62_bound"]) for r in chain],
            what="bit-sum randomizer at the exact λ: ε_R(δ) <= certified ε + ln n",
        ),
        match(
            Claim(PAPER, "Cor. 6.6", "one-message selection needs n = Ω(d^{1/17})"),
            measured=s66,
            paper=1 / 17,
            rtol=0.02,
            what="chain exponent d(ln n)/d(ln d) at ln d = 500..700",
        ),
        match(
            Claim(PAPER, "Cor. 6.8", "one-message histograms need n = Ω(log^{1/17} D)"),
            measured=s68,
            paper=1 / 17,
            rtol=0.1,
            what="chain exponent d(ln n)/d(ln ln D) at ln ln D = 300..600",
        ),
    ]


def _plot(hist: list[dict[str, Any]], sel: list[dict[str, Any]], path: Path) -> Path:
    require("matplotlib", purpose="the figures of crowdhide reproduce").use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 5.4))
    for i, D in enumerate(dict.fromkeys(r["D"] for r in hist)):
        pts = [r for r in hist if r["D"] == D]
        x = [r["n"] for r in pts]
        m = np.array([r["mean_max_error"] for r in pts])
        s = np.array([r["sd_max_error"] for r in pts])
        a.plot(x, m, "o-", color=f"C{i}", label=f"D = {D}: max error (mean ± sd)")
        a.fill_between(x, m - s, m + s, color=f"C{i}", alpha=0.2)
        a.plot(
            x,
            [r["bound_at_beta"] for r in pts],
            "--",
            color=f"C{i}",
            label=f"D = {D}: bound at β = {BETA}",
        )
    a.set(xscale="log", xlabel="n (users)", ylabel="max_j |ĥ_j − h_j|")
    a.set_title(f"Histogram from D bit sums (ε = {EPS:g}, δ = {DELTA:g})", fontsize=10)
    for i, d in enumerate(dict.fromkeys(r["d"] for r in sel)):
        pts = [r for r in sel if r["d"] == d]
        b.plot(
            [r["n"] for r in pts],
            [r["success"] for r in pts],
            "o-",
            color=f"C{i}",
            label=f"d = {d}",
        )
    b.axhline(0.9, color="k", ls=":", label="90%")
    b.set(xscale="log", xlabel="n (users)", ylabel="success rate (paper's (9))", ylim=(-0.05, 1.05))
    b.set_title("Selection from d bit sums", fontsize=10)
    for ax in (a, b):
        plain_log_ticks(ax.xaxis)  # n is an integer: plain labels, none overlapping
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


@experiment(
    "cheu-multibit",
    "Cheu et al. Secs. 2.2/6.2: histogram and selection from bit sums; lower-bound chain",
)
def run_multibit(out_dir: Path, *, rng: np.random.Generator, quick: bool) -> ExperimentResult:
    """Histograms over [D] and selection over {0,1}^d from repeated shuffled bit sums
    (the paper's multi-message upper bounds, Sec. 2.2), and a numeric check of the one-message
    lower-bound chain (Thm 6.2, Cor. 6.6, Cor. 6.8). ε = 1, δ = 1e-6."""
    hist = _histogram_rows(quick, rng)
    sel = _selection_rows(quick, rng)
    chain = chain_rows()
    files = [
        write_csv(out_dir / "cheu_histogram.csv", hist),
        write_csv(out_dir / "cheu_selection.csv", sel),
        write_csv(out_dir / "cheu_lower_bound_chain.csv", chain),
        _plot(hist, sel, out_dir / "cheu_multibit.png"),
    ]
    lines = [
        f"histogram n={r['n']} D={r['D']}: max error {r['mean_max_error']:.1f} ± "
        f"{r['sd_max_error']:.1f} (bound {r['bound_at_beta']:.1f} at β={BETA}, exceeded in "
        f"{r['exceed_fraction']:.0%}; λ per run {r['lambda']:.1f})"
        for r in hist
    ]
    lines += [
        f"selection d={r['d']} n={r['n']}: success {r['success']:.0%} ({r['rule']}, "
        f"ε per run {r['run_epsilon']:.4g}, λ {r['lambda']:.0f})"
        for r in sel
    ]
    vacuous = math.exp(chain_exponent("histogram", 16.0))
    lines.append(
        "Cor. 6.8 chain (constants 1): n >= 2 is forced only once ln ln D exceeds about "
        f"{_first_forcing():.1f} (at ln ln D = 16 the bound is n >= {vacuous:.3g})"
    )
    lines += [
        f"Thm 6.2 n={r['n']}: ε_R(δ) {r['eps_R_at_delta']:.3f} <= {r['eps_shuffled']:.3f} + "
        f"ln n = {r['thm62_bound']:.3f}"
        for r in chain
    ]
    verdicts = _verdicts(hist, sel, chain)
    data = {"histogram": hist, "selection": sel, "chain": chain}
    files.append(write_json(out_dir / "cheu_multibit.json", data))
    return ExperimentResult(
        files=tuple(files), comparison=tuple(lines), data=data, verdicts=tuple(verdicts)
    )
