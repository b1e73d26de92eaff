"""crowdhide: differential privacy for decentralized and shuffled computation.

crowdhide runs computations as plans of user-side nodes, hides what their messages and their
communication pattern reveal with DP countermeasures (shuffling, target sampling, dummy
messages, scramblers, randomized response, token walks), and certifies the resulting
(ε, δ) with the tightest valid bound it knows.

The top-level import is light: subpackages are imported on demand
(``crowdhide.accounting``, ``crowdhide.mechanisms``, ...).
"""

__version__ = "0.2.0"

__all__ = ["__version__"]
