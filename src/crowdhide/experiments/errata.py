"""Errata found in the reproduced papers and the places where crowdhide's reproductions
deviate from them, with the reason: listed in the reproducibility report (``reproduce all``).

Each entry is an :class:`Erratum`: the paper, where, what, and either what is wrong in the
paper (``kind="erratum"``) or what the reproduction does differently and why
(``kind="deviation"``).

Examples
--------
>>> {e.kind for e in ERRATA} == {"erratum", "deviation"}
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["ERRATA", "Erratum"]


@dataclass(frozen=True)
class Erratum:
    """One erratum of a paper or one deviation of a reproduction (``target``: the
    ``reproduce`` target concerned, empty when it concerns the paper only)."""

    paper: str
    where: str
    kind: Literal["erratum", "deviation"]
    text: str
    why: str
    target: str = ""


_L, _C, _CH, _B, _J = (
    "Ladjel et al.",
    "Cyffers & Bellet",
    "Cheu et al.",
    "Biswas et al.",
    "Jurado et al.",
)

ERRATA: tuple[Erratum, ...] = (
    Erratum(_L, "Thm 3, Fig. 5", "erratum",
            "Theorem 3 understates the pure ε of the capped scrambler.",
            "exhaustive enumeration on small instances gives a larger ε", "ladjel-fig5"),
    Erratum(_L, "Fig. 5 caption", "erratum",
            "The local baseline 'adds nd dummy messages in total' conflicts with the text's "
            "'equal total number of dummies' and with d <= T − 1.",
            "the two readings cannot both hold", "ladjel-fig5"),
    Erratum(_L, "Fig. 5", "deviation",
            "The comparison at equal total dummies uses the certified (ε, δ = 1e-6) scrambler "
            "accountant at the paper's scale and exhaustive pure ε on small instances, not "
            "Theorem 3.",
            "Theorem 3 needs d <= n − 1 (equal totals give n·d_loc) and is not a valid bound",
            "ladjel-fig5"),
    Erratum(_L, "Sec. V-B", "deviation",
            "K-means quick mode runs 3000 MNIST sources and I = 4 iterations (full mode: 60k, "
            "I = 10); the certificate covers the communication pattern given the centroids.",
            "quick mode must finish in seconds; the paper's guarantee has the same scope",
            "ladjel-kmeans"),
    Erratum(_L, "Sec. III-A, App. B", "erratum",
            "ω(t') = 1/k is a typo for 1/T; the utility S_t = S/(1 − σ) ignores footnote 5 "
            "(the true target is kept w.p. 1 − σ + σ/T).",
            "the corrected forms are used", "ladjel-fig8"),
    Erratum(_L, "Fig. 7", "erratum",
            "Fig. 7 overlays Theorem 3 (capped scrambler) with Theorem 4 / Monte Carlo "
            "(uncapped): different mechanisms.",
            "the curves are labelled by mechanism", "ladjel-fig7"),
    Erratum(_C, "Fig. 2", "deviation",
            "Each side uses crowdhide's tightest valid accounting, the authors' as a second "
            "series; step sizes are chosen on a validation split.",
            "the authors' local σ is 3.8× the tight value, so their comparison is not like "
            "for like", "cyffers-fig2"),
    Erratum(_C, "authors' code", "erratum",
            "The code clips the noisy gradient, which is not the algorithm the paper analyses.",
            "clipping after noise bounds every step whatever σ is", "cyffers-fig2"),
    Erratum(_C, "Fig. 1a, authors' code", "erratum",
            "The code's visit bound is T/n + √(3T/2 · ln(1/δ̂)), not the paper's "
            "T/n + √(3(T/n) ln(1/δ̂)); with it the LDP curve grows with n.",
            "both visit bounds are plotted, with the fixed T/n curves", "cyffers-fig1"),
    Erratum(_C, "Fig. 1b", "deviation",
            "Bands are ±1 sd over walks (the paper's bars are best and worst cases); the "
            "certified per-pair PLD accountant is shown beside the authors' accounting.",
            "an sd summarises the spread of the mean; the authors' accounting is not a bound",
            "cyffers-fig1"),
    Erratum(_C, "Thm 5", "erratum", "'n >= 100' is probably a typo for 1000 (Thm 2, code).",
            "the authors' code uses min_n = 1000"),
    Erratum(_CH, "Lemma 4.8", "deviation",
            "The exact λ (smallest λ certified over all datasets) is shown beside the paper's.",
            "the paper's constants are conservative by about 14× in λ", "cheu-error"),
    Erratum(_CH, "Secs. 2.2, 6.2", "deviation",
            "Selection composes the d bit sums with the better of basic and advanced "
            "composition; the lower-bound chain sets the unknown constants to 1.",
            "the paper states the rates only up to constants", "cheu-multibit"),
    Erratum(_CH, "App. C", "erratum", "'Corollary 5.4' is Theorem 5.4 of Sec. 5.3.",
            "numbering typo"),
    Erratum(_B, "Tables II, IV", "erratum",
            "The δ̂ of several cells lies below a rigorous lower bound on the true δ.",
            "checked against crowdhide's lower bound", "biswas-table2"),
    Erratum(_B, "Thm IV.1, (15)", "erratum",
            "v_s is mis-printed (an extra factor in the last line).",
            "the first three lines of (15) are used"),
    Erratum(_B, "Fig. 1", "deviation",
            "The 2e-101 the formula returns at ε = ε0 is drawn as δ = 0.",
            "it is rounding: δ = 0 exactly for ε >= ε0", "biswas-fig1"),
    Erratum(_J, "Def. 8", "erratum",
            "The reduced shuffle channel's text refers to itself ('as per Def. 8').",
            "typo; the definition is used as stated"),
)  # fmt: skip
