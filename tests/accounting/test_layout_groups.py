"""Two speed changes of the piecewise certificate that change no float (s31-pw, issue 32).

* ``_split_clone._build_layouts`` computes the blocks of a stack of split systems in groups
  padded alike (``_layout_columns.column_groups``): the piecewise mechanism's revealed-class
  cells at n = 1e3 use 46 to 160 s-block columns, and one stack padded every row to 160.
  Every layout must have the floats it has in one stack (and alone: the existing
  tests/accounting/test_split_clone_batch.py); the comparison is shown to see a 1 % change
  of one rate, and the grouping to be the cheapest split of its cost model.
* ``_lazy_least.Least`` starts a member that searches from a known point (the one-rate curve
  from the capped search's floor, ``MemberCurve.known_floor``) at that point: it is never
  probed where the capped search answers its floor's ε, and the least is the float every
  certificate solved in full gives.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from crowdhide.accounting.logmath import rate_up
from crowdhide.accounting.shuffle import _layout_columns as lc
from crowdhide.accounting.shuffle import _split_clone as sc
from crowdhide.accounting.shuffle import mechanisms as mech
from crowdhide.accounting.shuffle._member_curve import MemberCurve
from crowdhide.accounting.shuffle.randomizers import MECHANISMS, piecewise_reveal_cells
from tests.accounting.test_mechanism_least import _full_least

FloatArray = npt.NDArray[np.float64]


def _reveal_systems(eps0: float) -> list[sc.SplitSystem]:
    out = []
    for mu, c_inf, w, gamma in piecewise_reveal_cells(eps0)[1]:
        system = mech._reveal_system(mu, c_inf, (w, gamma))
        if system is not None:
            mu_cond, c_zero = system[1]
            mu_up = rate_up(mu_cond, ulps=sc.PARAMETER_ULPS)
            out.append((mu_up, c_inf, c_zero, sc.SPLIT_C_POINTS, sc.SPLIT_S_POINTS, 0.05))
    return out


def _same(a: Sequence[FloatArray | float], b: Sequence[FloatArray | float]) -> bool:
    return all(
        np.shape(x) == np.shape(y) and np.array_equal(np.asarray(x), np.asarray(y))
        for x, y in zip(a, b, strict=True)
    )


def _one_group(used: Sequence[int], rows: Sequence[int]) -> list[list[int]]:
    """The former stack: every system in one group."""
    return [list(range(len(used)))]


@pytest.mark.parametrize(("eps0", "log_tail"), [(4.0, -63.0), (8.0, -54.0)])
def test_grouped_layouts_have_the_floats_of_one_stack(eps0: float, log_tail: float) -> None:
    n, systems = 1000, _reveal_systems(eps0)[::2]
    seen: list[list[list[int]]] = []

    def spy(used: Sequence[int], rows: Sequence[int]) -> list[list[int]]:
        seen.append(lc.column_groups(used, rows))
        return seen[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sc, "column_groups", spy)
        grouped = sc._build_layouts(n, systems, log_tail)
    assert len(seen[0]) >= 2  # not vacuous: the stack is split
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sc, "column_groups", _one_group)
        stacked = sc._build_layouts(n, systems, log_tail)
    assert all(_same(a, b) for a, b in zip(grouped, stacked, strict=True))
    # the comparison sees one system's informative rate 1 % lower
    changed = list(systems)
    mu, c_inf, *rest = changed[-1]
    changed[-1] = (mu, 0.99 * c_inf, *rest)  # type: ignore[assignment]
    perturbed = sc._build_layouts(n, changed, log_tail)
    same = [_same(a, b) for a, b in zip(perturbed, stacked, strict=True)]
    assert same == [i != len(systems) - 1 for i in range(len(systems))]


def _cost(groups: Sequence[Sequence[int]], used: Sequence[int], rows: Sequence[int]) -> float:
    return sum(
        lc.GROUP_COST_BLOCKS + sum(rows[i] for i in g) * max(used[i] for i in g) for g in groups
    )


def test_column_groups_is_the_cheapest_split() -> None:
    """Against every split of the sorted systems into runs (small random stacks)."""
    rng = np.random.default_rng(7)
    for _ in range(40):
        k = int(rng.integers(1, 7))
        used = [int(u) for u in rng.integers(1, 200, size=k)]
        rows = [int(r) for r in rng.integers(1, 600, size=k)]
        groups = lc.column_groups(used, rows)
        assert sorted(i for g in groups for i in g) == list(range(k))
        order = sorted(range(k), key=lambda i: (used[i], i))
        best = math.inf
        for cuts in itertools.product((False, True), repeat=k - 1):
            runs, run = [], [order[0]]
            for i, cut in zip(order[1:], cuts, strict=True):
                if cut:
                    runs.append(run)
                    run = []
                run.append(i)
            best = min(best, _cost([*runs, run], used, rows))
        assert _cost(groups, used, rows) == best


def test_the_reveal_batch_is_cheaper_grouped() -> None:
    """The cost model's reason: the 46 revealed-class systems of the sweep at ε0 = 4,
    n = 1e3 pad to 160 columns in one stack, about twice the blocks of the groups."""
    used = [160, 149, 139, 130, 122, 114, 107, 101, 95, 90, 85, 81, 78, 74, 71, 68, 65, 63]
    used += [61, 59, 53, 49, 47] + [46] * 23
    rows = [228] * len(used)
    groups = lc.column_groups(used, rows)
    assert _cost(groups, used, rows) < 0.55 * _cost([list(range(len(used)))], used, rows)


def _linear(eps: float, tail: float) -> float:
    return -10.0 * eps


def test_known_floor_is_the_search_start() -> None:
    curve = MemberCurve([_linear], 8.0, lower=False)
    assert curve.known_floor(1e-6, 0.2) == -math.inf  # no start of its own: unknown
    curve.start = lambda delta: 0.5
    assert curve.known_floor(1e-6, 0.2) == 0.5
    assert curve.known_floor(1e-6, 0.7) == 0.7
    answer = curve.epsilon_until(1e-6, math.inf, 0.2)
    assert answer >= 0.5
    assert curve.known_floor(1e-6, 0.2) == -math.inf  # progress made: the Least asks it


def _counted_least(
    eps0: float, n: int, delta: float, monkeypatch: pytest.MonkeyPatch
) -> tuple[float, list[float]]:
    """The piecewise certificate's Least at δ (as ``MechanismBound.certificate`` builds it,
    from start 0) and the one-rate curve's evaluations."""
    calls: list[float] = []
    original = mech._krr_fast.clone_noise_log_delta

    def counted(*args: float, **kwargs: float) -> float:
        calls.append(args[4])
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(mech._krr_fast, "clone_noise_log_delta", counted)
    pw = MECHANISMS["piecewise"]
    raw = MemberCurve(mech._certificate_members(pw, n, eps0, 0, 1), eps0, lower=False)
    capped = mech._capped_curve(n, eps0, pw.params(eps0, 0, 1)[1])
    raw.start = capped.floor_epsilon
    least = mech._Least([capped, raw]).epsilon(delta)
    monkeypatch.undo()
    return least, calls


@pytest.mark.parametrize(
    ("eps0", "n", "delta", "probes"), [(1.0, 10_000, 1e-6, 0), (2.0, 10_000, 1e-6, 1)]
)
def test_the_one_rate_curve_is_probed_only_above_the_floor(
    eps0: float, n: int, delta: float, probes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(1, 1e4, 1e-6): the capped search answers its floor's ε, which the one-rate curve's
    answer is never below: no evaluation (one before). (2, 1e4, 1e-6): the search goes past
    the floor; one probe at its answer (two before). The least is that of every certificate
    solved in full."""
    least, calls = _counted_least(eps0, n, delta, monkeypatch)
    mu_max = MECHANISMS["piecewise"].params(eps0, 0, 1)[1]
    floor = mech._capped_curve(n, eps0, mu_max).floor_epsilon(delta)
    assert (least == floor) == (probes == 0)
    assert len(calls) == probes
    assert least == _full_least(eps0, n, delta)


@pytest.mark.parametrize(
    ("name", "eps0", "n", "delta"),
    [("laplace", 1.0, 10_000, 1e-6), ("piecewise", 0.5, 10**9, 1e-6)],
)
def test_the_probe_value_is_handed_to_the_search(
    name: str, eps0: float, n: int, delta: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lower bound's probed member starts its root search with the probe's value: one
    evaluation fewer per member solved after the probe, the same float."""
    calls: list[float] = []
    inner = mech._lower_member

    def counted(*args: float) -> float:
        calls.append(args[2])
        return inner(*args)  # type: ignore[arg-type]

    def run() -> tuple[float, int]:
        calls.clear()
        mech._lower_curve.cache_clear()
        value = mech.mechanism_lower_curve(mechanism=name, eps0=eps0, n=n).epsilon(delta)
        return value, len(calls)

    monkeypatch.setattr(mech, "_lower_member", counted)
    handed, fewer = run()
    solve = MemberCurve._solve_member

    def without(self: MemberCurve, *args: object, **kwargs: object) -> float:
        return solve(self, *args[:3], **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(MemberCurve, "_solve_member", without)
    plain, more = run()
    assert handed == plain
    assert fewer < more
    mech._lower_curve.cache_clear()
