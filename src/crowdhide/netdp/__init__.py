"""Network differential privacy for token walks (Cyffers & Bellet, AISTATS 2022).

Users pass a token on a graph (a public ring or a hidden random walk on the complete graph);
each user sees only the token values it receives and sends. This package provides

* :mod:`~crowdhide.netdp.walks` — vectorized walks and visit/cycle indexes;
* :mod:`~crowdhide.netdp.views` — transcripts, user and coalition views;
* :mod:`~crowdhide.netdp.noise` — noise calibrations and samplers of the protocols;
* :mod:`~crowdhide.netdp.protocols` — the paper's algorithms 1, 2, 3 and 5, with transcripts;
* :mod:`~crowdhide.netdp.sgd` — algorithm 4, private SGD on the token;
* :mod:`~crowdhide.netdp.guarantees` — the paper's walk bounds (corrected forms, published
  forms under explicit names), baselines;
* :mod:`~crowdhide.netdp.sgd_guarantees` — network DP-SGD: Lemma 1 RDP, Theorem 4, σ
  calibration, the authors' ``findSigma``;
* :mod:`~crowdhide.netdp.cycle_privacy` — the privacy profile of one cycle of a hidden walk;
* :mod:`~crowdhide.netdp.walk_pld` — per-cycle PLDs (dp_accounting's algorithms) and their
  composition;
* :mod:`~crowdhide.netdp.walk_accounting` — per-pair accounting of a realised walk.
"""

from crowdhide.netdp.protocols import (
    WalkHistogramRun,
    WalkSumRun,
    complete_histogram,
    complete_sum,
    debias_histogram,
    debias_published,
    ring_histogram,
    ring_noise_additions,
    ring_sum,
)
from crowdhide.netdp.sgd import SgdRun, complete_sgd, logistic_gradients
from crowdhide.netdp.views import (
    View,
    WalkTranscript,
    check_coalition,
    coalition_view,
    network_dp_curve,
    user_view,
)
from crowdhide.netdp.walks import (
    VisitIndex,
    complete_walk,
    contribution_rank,
    ring_walk,
    visit_index,
)

__all__ = [
    "SgdRun",
    "View",
    "VisitIndex",
    "WalkHistogramRun",
    "WalkSumRun",
    "WalkTranscript",
    "check_coalition",
    "coalition_view",
    "complete_histogram",
    "complete_sgd",
    "complete_sum",
    "complete_walk",
    "contribution_rank",
    "debias_histogram",
    "debias_published",
    "logistic_gradients",
    "network_dp_curve",
    "ring_histogram",
    "ring_noise_additions",
    "ring_sum",
    "ring_walk",
    "user_view",
    "visit_index",
]
