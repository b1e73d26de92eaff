"""Figure and table reproductions, run by ``crowdhide reproduce NAME``.

Each module of this package registers its experiments with :func:`experiment`; the registry is
filled by :func:`discover`, which imports every module of the package.
"""

from crowdhide.experiments.registry import Experiment, ExperimentResult, discover, experiment

__all__ = ["Experiment", "ExperimentResult", "discover", "experiment"]
