"""Section 8 of ``bench_net.py``: a line ``peak = a + b * users`` through the peak RSS of
section 7 runs at several sizes, projected (``--memory-slope``, ``--fit``)."""

from __future__ import annotations

from typing import Any


def memory_fit(runs: list[dict[str, Any]], project: int) -> dict[str, Any]:
    """Least-squares ``peak = a + b * users`` through the section 7 runs (at least two
    sizes): of the busiest host's peak RSS, and of each host's; the projection to
    ``project`` users, against 1 GB (10^9 bytes) per process. Linear is the pessimistic
    reading of terms that grow slower (a fit through the larger sizes weighs them more)."""
    import numpy as np

    users = np.array([r["rows"] for r in runs], dtype=float)
    if len(set(users.tolist())) < 2:
        raise SystemExit("--fit / --memory-slope: runs at two sizes at least")

    def line(peaks: list[float]) -> dict[str, float]:
        b, a = np.polyfit(users, np.array(peaks, dtype=float), 1)
        return {
            "a_mib": a / 2**20,
            "b_bytes_per_user": b,
            "at_project_mib": (a + b * project) / 2**20,
        }

    busiest = line([max(r["hosts_rss_each"]) for r in runs])
    each = [
        line([r["hosts_rss_each"][h] for r in runs]) for h in range(len(runs[0]["hosts_rss_each"]))
    ]
    worst = max(busiest["at_project_mib"], *(e["at_project_mib"] for e in each))
    return {
        "users": users.astype(int).tolist(),
        "peaks_mib": [[round(x / 2**20) for x in r["hosts_rss_each"]] for r in runs],
        "busiest": busiest,
        "each": each,
        "project": project,
        "worst_projected_mib": worst,
        "within_1gb": worst * 2**20 <= 1e9,
    }


def fit_table(fit: dict[str, Any]) -> None:
    print("| users | peak RSS per host (MiB, hosts 0..) | busiest |")
    print("|---|---|---|")
    for n, peaks in zip(fit["users"], fit["peaks_mib"], strict=True):
        print(f"| {n:,} | {' '.join(str(p) for p in peaks)} | {max(peaks)} |")
    b = fit["busiest"]
    print(
        f"busiest host: peak = {b['a_mib']:.0f} MiB + {b['b_bytes_per_user']:.0f} B x users "
        f"-> {b['at_project_mib']:.0f} MiB at {fit['project']:,} users"
    )
    per = ", ".join(
        f"h{h}: {e['b_bytes_per_user']:.0f} B/user -> {e['at_project_mib']:.0f}"
        for h, e in enumerate(fit["each"])
    )
    print(f"per host (slope, MiB at {fit['project']:,}): {per}")
    verdict = "holds" if fit["within_1gb"] else "does NOT hold"
    worst = fit["worst_projected_mib"]
    print(f"worst projection {worst:.0f} MiB: <= 1 GB (10^9 B = 954 MiB) per process {verdict}")
