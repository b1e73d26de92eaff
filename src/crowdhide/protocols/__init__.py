"""Shuffle-model protocols end to end: shuffler, bit sums, real sums, histograms.

* :mod:`~crowdhide.protocols.shuffler` — the shuffler (CSPRNG permutation).
* :mod:`~crowdhide.protocols.bitsum` — Cheu et al.'s shuffled bit sum (paper λ and exact λ).
* :mod:`~crowdhide.protocols.realsum` — Cheu et al.'s multi-message real sum and Balle et
  al.'s single-message blanket sum.
* :mod:`~crowdhide.protocols.histogram` — shuffled k-RR histograms vs the central Gaussian.
* :mod:`~crowdhide.protocols.biswas` — Biswas, Jung, Palamidessi's δ̂(ε), as published
  and corrected.
* :mod:`~crowdhide.protocols.data` — loading user data (files and built-in data sets).
* :mod:`~crowdhide.protocols.krr_accounting` — calibration and certification of shuffled
  k-RR (the adapter to the shared shuffle accountant); every run's ``privacy`` statement.
* :mod:`~crowdhide.protocols.results` — run records (:class:`SumRun`, the central baseline).
* :mod:`~crowdhide.protocols.engine_plan` — the protocols as a plan users → shuffler →
  analyzer on the engine.
"""

from crowdhide.protocols.bitsum import (
    BitSumRandomizer,
    bitsum_error_bound,
    bitsum_estimate,
    bitsum_variance,
    calibrate_bit_sum,
    corollary47_epsilon,
    lemma48_lambda,
    run_bit_sum,
)
from crowdhide.protocols.histogram import HistogramRun, run_histogram
from crowdhide.protocols.realsum import run_real_sum, run_single_message_sum
from crowdhide.protocols.results import SumRun
from crowdhide.protocols.shuffler import ShuffledBatch, Shuffler, secure_permutation

__all__ = [
    "BitSumRandomizer",
    "HistogramRun",
    "ShuffledBatch",
    "Shuffler",
    "SumRun",
    "bitsum_error_bound",
    "bitsum_estimate",
    "bitsum_variance",
    "calibrate_bit_sum",
    "corollary47_epsilon",
    "lemma48_lambda",
    "run_bit_sum",
    "run_histogram",
    "run_real_sum",
    "run_single_message_sum",
    "secure_permutation",
]
