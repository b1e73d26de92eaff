"""Quantitative information flow (QIF): what an uninformed or an informed adversary learns.

* :mod:`crowdhide.qif.core` — channels, priors, gain functions, vulnerability, leakage,
  hyper-distributions, Bayes capacity, cascade (float or exact ``Fraction`` arithmetic);
* :mod:`crowdhide.qif.channels` — k-RR, full/reduced shuffles and their cascades as explicit
  channels (small instances), adapter for :mod:`crowdhide.mechanisms` randomizers;
* :mod:`crowdhide.qif.shuffle` — exact single-target vulnerability of k-RR and shuffling
  against uninformed and informed adversaries, computed from histograms (no ``k^n`` matrix);
* :mod:`crowdhide.qif.shuffle_capacity` — multiplicative Bayes capacity of the same channels
  on whole datasets;
* :mod:`crowdhide.qif.scrambler` — the scrambler countermeasure viewed as a channel.

See ``docs/qif.md``.
"""

from crowdhide.qif.channels import (
    krr_channel,
    krr_dataset_channel,
    local_randomizer_channel,
    reduced_krr_channel,
    reduced_shuffle_channel,
    shuffle_channel,
    shuffled_krr_channel,
    shuffled_product_channel,
)
from crowdhide.qif.core import (
    Channel,
    Gain,
    HyperDistribution,
    Prior,
    additive_leakage,
    bayes_capacity,
    cascade,
    hyper,
    joint,
    multiplicative_leakage,
    posterior_vulnerability,
    prior_vulnerability,
    refines,
)
from crowdhide.qif.scrambler import ScramblerVulnerability, scrambler_vulnerability
from crowdhide.qif.shuffle import (
    VulnerabilityResult,
    informed_vulnerability,
    shuffle_vulnerability,
    uninformed_vulnerability,
)
from crowdhide.qif.shuffle_capacity import CapacityResult, shuffled_krr_capacity

__all__ = [
    "CapacityResult",
    "Channel",
    "Gain",
    "HyperDistribution",
    "Prior",
    "ScramblerVulnerability",
    "VulnerabilityResult",
    "additive_leakage",
    "bayes_capacity",
    "cascade",
    "hyper",
    "informed_vulnerability",
    "joint",
    "krr_channel",
    "krr_dataset_channel",
    "local_randomizer_channel",
    "multiplicative_leakage",
    "posterior_vulnerability",
    "prior_vulnerability",
    "reduced_krr_channel",
    "reduced_shuffle_channel",
    "refines",
    "scrambler_vulnerability",
    "shuffle_channel",
    "shuffle_vulnerability",
    "shuffled_krr_capacity",
    "shuffled_krr_channel",
    "shuffled_product_channel",
    "uninformed_vulnerability",
]
