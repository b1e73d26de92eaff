"""The variation-ratio refinement's cells evaluated ahead (issue 32, s29-piecewise): the same
floats whatever was asked before, with fewer batched calls."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from crowdhide.accounting.shuffle import _cell_memo, _split_clone
from crowdhide.accounting.shuffle import variation_ratio as module
from crowdhide.accounting.shuffle.mechanisms import MECHANISMS

_Request = tuple[tuple[float, float], int]


def _clear() -> None:
    module._clear_caches()
    _split_clone._layout.cache_clear()


def _mu_max(eps0: float) -> float:
    return MECHANISMS["piecewise"].params(eps0, 0, 1)[1]


def _counted(calls: list[int]) -> object:
    inner = module._cells_log_delta

    def counting(n: int, eps0: float, requests: Sequence[_Request], *rest: float) -> list[float]:
        calls.append(len(requests))
        return inner(n, eps0, requests, *rest)

    return counting


#: (ε0, n, log δ target, ε of the answer and of a nearby earlier refinement): piecewise cells
#: whose refinement splits many cells (δ = 1e-300) and few (δ = 1e-6).
CASES = [
    (2.0, 10**4, math.log(1e-300), 1.3138836657854767, 1.3140714929437884),
    (2.0, 10**4, math.log(1e-6), 0.10376361470387307, 0.10376064328116456),
]


@pytest.mark.parametrize(("eps0", "n", "target", "eps", "before"), CASES)
def test_refinement_is_the_same_after_a_nearby_one(
    eps0: float, n: int, target: float, eps: float, before: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The value, partition and bottom edge of a refinement from cold caches equal, to the bit,
    those after a refinement at a nearby ε (its log evaluated ahead), with and without the
    split hints, in fewer batched calls where the refinement splits many cells."""
    mu_max, log_tail = _mu_max(eps0), target - 40.0
    _clear()
    cold_calls: list[int] = []
    with monkeypatch.context() as patch:
        patch.setattr(module, "AHEAD", 0)
        patch.setattr(module, "_cells_log_delta", _counted(cold_calls))
        cold = module._supremum(n, eps0, mu_max, eps, log_tail)
        _clear()
        module._supremum(n, eps0, mu_max, before, log_tail)
        module._supremum.cache_clear()
        assert module._supremum(n, eps0, mu_max, eps, log_tail) == cold  # log only
    _clear()
    module._supremum(n, eps0, mu_max, before, log_tail)
    module._supremum.cache_clear()
    warm_calls: list[int] = []
    with monkeypatch.context() as patch:
        patch.setattr(module, "_cells_log_delta", _counted(warm_calls))
        assert module._supremum(n, eps0, mu_max, eps, log_tail) == cold  # log and hints
    assert len(warm_calls) <= len(cold_calls)
    if target < -600.0:
        assert 2 * len(warm_calls) < len(cold_calls)
    _clear()


def test_memo_evaluates_at_its_own_epsilon() -> None:
    """A prior log and hints only choose what is evaluated along: every value is the
    evaluation of its own request by this memo's function; a memo bound to another ε
    gives other values (the comparison can fail)."""
    eps0, n, log_tail = 2.0, 10**4, math.log(1e-6) - 40.0
    requests: list[_Request] = [
        ((math.log(0.9), math.log(0.95)), 0),
        ((math.log(0.8), math.log(0.9)), 1),
    ]
    prior: list[_Request] = [*requests, ((math.log(0.5), math.log(0.7)), 0)]

    def at(eps: float) -> _cell_memo.CellMemo:
        def evaluate(batch: Sequence[_Request]) -> list[float]:
            return module._cells_log_delta(n, eps0, batch, eps, log_tail)

        return _cell_memo.CellMemo(evaluate, prior)

    memo = at(0.1)
    memo.hint([((math.log(0.3), math.log(0.5)), 0)])
    calls: list[int] = []
    inner = memo.evaluate
    memo.evaluate = lambda batch: calls.append(len(batch)) or inner(batch)  # type: ignore[func-returns-value]
    values = memo(requests[:1]) + memo(requests[1:])
    alone = [module._cells_log_delta(n, eps0, [r], 0.1, log_tail)[0] for r in requests]
    assert values == alone
    assert calls == [4]  # the rest of the prior's log and the hint came along, in one call
    assert memo.asked == requests
    assert at(0.1001)(requests) != alone


def test_request_logs_keep_the_nearest_and_drop_the_oldest() -> None:
    logs = _cell_memo.RequestLogs(keys=2, per_key=2)
    cell: _Request = ((-1.0, 0.0), 0)
    logs.remember(("a",), 1.0, [cell])
    logs.remember(("a",), 2.0, [cell, cell])
    logs.remember(("a",), 3.0, [])
    assert logs.nearest(("a",), 1.1) == (cell, cell)  # 1.0 dropped (per_key = 2)
    logs.remember(("b",), 1.0, [cell])
    logs.remember(("c",), 1.0, [cell])
    assert logs.nearest(("a",), 1.0) == ()  # the least recently used key dropped
    logs.clear()
    assert logs.nearest(("c",), 1.0) == ()
