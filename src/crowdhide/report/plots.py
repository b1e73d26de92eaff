"""Pictures of accountants' answers, kept out of the accounting layer (matplotlib, extra ``plot``).

:func:`plot_epsilon_vs_n` draws the data of
:func:`crowdhide.accounting.shuffle.calibration.epsilon_vs_n` (``crowdhide shuffle plot``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from crowdhide._extras import require

__all__ = ["plot_epsilon_vs_n"]


def plot_epsilon_vs_n(
    grid: Sequence[int], series: Mapping[str, Sequence[float]], *, title: str, out: str | Path
) -> Path:
    """Write ε against n (log-log, one line per bound; ``nan`` points left out) to ``out``.

    A bound evaluated on part of the grid is drawn through its finite points; a bound with
    none is not drawn. ``krr_lower`` (a lower bound) is dashed. Returns the path written.
    """
    require("matplotlib", purpose="shuffle plot").use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, values in series.items():
        if all(math.isnan(v) for v in values):
            continue
        style = "--" if name == "krr_lower" else "-"
        # Finite points only, so a bound evaluated on part of the grid draws a joined line.
        xs = [x for x, v in zip(grid, values, strict=True) if math.isfinite(v)]
        ys = [v for v in values if math.isfinite(v)]
        ax.plot(xs, ys, style, marker="o", markersize=3, label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (users)")
    ax.set_ylabel("epsilon after shuffling")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
