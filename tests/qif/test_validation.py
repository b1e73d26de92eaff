"""Every public qif entry point refuses invalid input with a named, echoed message."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from crowdhide.qif import channels as ch
from crowdhide.qif import combinatorics as cb
from crowdhide.qif import scrambler as sc
from crowdhide.qif import shuffle as sh
from crowdhide.qif import shuffle_capacity as cap

CASES: list[tuple[Callable[..., Any], dict[str, Any], type, str]] = [
    (ch.shuffle_channel, {"n": 0, "k": 2}, ValueError, "n must be >= 1"),
    (ch.shuffle_channel, {"n": 2, "k": 1}, ValueError, "k must be >= 2"),
    (ch.reduced_shuffle_channel, {"n": 2, "k": "3"}, TypeError, "k must be an integer"),
    (ch.krr_dataset_channel, {"n": 0, "k": 2, "eps0": 1.0}, ValueError, "n must be >= 1"),
    (ch.reduced_krr_channel, {"n": 2, "k": 2, "eps0": -0.5}, ValueError, "eps0 must be >= 0"),
    (ch.krr_channel, {"k": 2, "keep_probability": float("nan")}, ValueError, "NaN"),
    (cb.datasets, {"n": 0, "k": 2}, ValueError, "n must be >= 1"),
    (cb.histograms, {"n": -1, "k": 2}, ValueError, "n must be >= 0"),
    (cb.n_histograms, {"n": 3, "k": 0}, ValueError, "k must be >= 1"),
    (sh.binary_shuffle_vulnerability, {"n": 0}, ValueError, "n must be >= 1"),
    (sh.expected_max_load, {"n": -1, "k": 3}, ValueError, "n must be >= 0"),
    (sh.shuffle_vulnerability, {"n": 5, "k": 1}, ValueError, "k must be >= 2"),
    (
        sh.asymptotic_shuffle_vulnerability,
        {"n": 5, "k": 3, "c": -1.0},
        ValueError,
        "c must be >= 0",
    ),
    (sh.gaussian_shuffle_vulnerability, {"n": 0, "k": 3}, ValueError, "n must be >= 1"),
    (sh.asymptotic_vulnerability, {"n": 5, "k": 3}, ValueError, "exactly one"),
    (
        cap.shuffled_krr_capacity,
        {"n": 5, "k": 2, "channel": "x", "eps0": 1.0},
        ValueError,
        "channel must be",
    ),
    (cap.shuffled_krr_capacity, {"n": 5, "k": 2}, ValueError, "eps0 is required"),
    (
        sh.informed_vulnerability,
        {"n": 5, "k": 2, "eps0": 1.0, "others": (2, 2, 0)},
        ValueError,
        "others must be a histogram",
    ),
    (sc.scrambler_channel, {"targets": 2, "sigma": -0.1, "n": 2}, ValueError, "sigma must be"),
    (
        sc.scrambler_keep_probability,
        {"targets": 0, "sigma": 0.5},
        ValueError,
        "targets must be >= 2",
    ),
    (sc.scrambler_local_epsilon, {"targets": 3, "sigma": "0.5"}, TypeError, "sigma must be"),
]


@pytest.mark.parametrize(("func", "kwargs", "error", "match"), CASES)
def test_invalid_input(
    func: Callable[..., Any], kwargs: dict[str, Any], error: type, match: str
) -> None:
    with pytest.raises(error, match=match):
        func(**kwargs)


def test_dataset_histograms_rejects_out_of_range_values() -> None:
    with pytest.raises(ValueError, match="values in"):
        cb.dataset_histograms(np.array([[0, 3]]), k=2)
