"""Quantitative information flow (QIF): what an uninformed or an informed adversary learns."""
