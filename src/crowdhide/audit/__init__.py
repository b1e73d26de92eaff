"""Empirical privacy audits: attack a mechanism's outputs and lower-bound its ε.

A certified (ε, δ) is an *upper* bound on privacy loss; an audit runs a concrete
distinguishing attack on samples of M(x) and M(x') and turns its error rates into a
high-confidence *lower* bound on ε (Kairouz, Oh, Viswanath 2015; Jagielski, Ullman, Oprea
2020; Nasr et al. 2021). A lower bound above a certificate exposes an unsound certificate or
a broken implementation; a small gap shows the certificate is tight for that attack.
"""

from crowdhide.audit.hypothesis_test import (
    AuditResult,
    audit_scores,
    bayes_success_bound,
    clopper_pearson,
    epsilon_from_error_rates,
)
from crowdhide.audit.traffic import (
    host_of_nodes,
    link_attack,
    transcript_link_counts,
    wire_link_counts,
)

__all__ = [
    "AuditResult",
    "audit_scores",
    "bayes_success_bound",
    "clopper_pearson",
    "epsilon_from_error_rates",
    "host_of_nodes",
    "link_attack",
    "transcript_link_counts",
    "wire_link_counts",
]
