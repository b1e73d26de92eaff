"""The synthetic populations are deterministic and keep their documented shapes."""

from __future__ import annotations

import numpy as np

from crowdhide.plans.data import synth_diabetes


def test_diabetes_age_ranges_are_the_decade_labels_of_the_ages() -> None:
    table = synth_diabetes(rows=5000, rng=7)
    labels = table["age_range"]
    assert labels.dtype == object
    assert all(isinstance(v, str) for v in labels[:10])
    # Ages 18-89: the first range starts at 18, the others at their decade.
    assert sorted(set(labels.tolist())) == [
        "18-19", "20-29", "30-39", "40-49", "50-59", "60-69", "70-79", "80-89"
    ]  # fmt: skip
    again = synth_diabetes(rows=5000, rng=7)
    assert all(np.array_equal(table[k], again[k]) for k in table)
    # Pinned draw: the generator's stream is unchanged (ages first, then BMI, insulin).
    ages = np.random.default_rng(7).integers(18, 90, size=5000)
    low = np.maximum(ages // 10 * 10, 18)
    assert labels.tolist() == [f"{a}-{b}" for a, b in zip(low, ages // 10 * 10 + 9, strict=True)]
