"""Cells of a variation-ratio refinement evaluated ahead, in batches (internal, issue 32).

An ε search evaluates :func:`crowdhide.accounting.shuffle.variation_ratio._supremum` for one
``(n, ε0, mu_max, log_tail)`` at a few ε, the last ones within 1e-4 of each other, and the
refinement then asks for the same cells in the same order: at (ε0, n, δ) = (2, 1e4, 1e-300)
155 cell evaluations a time, in 67 calls of 2-3 cells whose fixed cost was most of the time
(104 ms against 30 ms for the same 155 in one call). :class:`CellMemo` remembers the
requests of each refinement (:data:`LOGS`, requests only, never values) and, when a
refinement at a nearby ε asks for a cell it does not hold yet, evaluates the next requests
of the nearest earlier refinement with it, *at this call's own ε*, in the same batched call;
so are the children of the next few cells the refinement would split (:meth:`CellMemo.hint`,
from :func:`~crowdhide.accounting.shuffle.variation_ratio._refine`): the first refinement of
that cell went from 68 calls to 27.

Nothing here changes a value: every request is evaluated by the same function at the same
``(n, ε0, ε, log_tail)``, and the batched cell evaluation gives each cell the floats it gets
alone (:func:`~crowdhide.accounting.shuffle.variation_ratio._cells_log_delta`, tested in
tests/accounting/test_split_clone_batch.py). The refinement's decisions (which cell is split,
the tiers, the evaluations counted) see the same values in the same order, so the result and
the partition are those of the refinement without it; only the work done ahead depends on
what was asked before, and a request logged but not asked costs time, never a value.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

__all__ = ["LOGS", "CellMemo", "RequestLogs"]

_Request = tuple[tuple[float, float], int]

#: Requests evaluated ahead at a refinement's first miss; doubled at every later miss
#: whose requests the earlier refinement asked for too (the two still agree), back to this
#: at one it did not (they have parted: little more of the log is wasted).
FIRST_CHUNK = 8
MAX_CHUNK = 512


class RequestLogs:
    """The requests of recent refinements per ``(n, ε0, mu_max, log_tail)`` and ε, the
    least recently used key dropped beyond ``keys`` and the oldest ε beyond ``per_key``."""

    def __init__(self, keys: int = 64, per_key: int = 8) -> None:
        self.keys, self.per_key = keys, per_key
        self.held: OrderedDict[tuple[object, ...], dict[float, tuple[_Request, ...]]] = (
            OrderedDict()
        )
        self.lock = threading.Lock()

    def clear(self) -> None:
        with self.lock:
            self.held.clear()

    def nearest(self, key: tuple[object, ...], eps: float) -> tuple[_Request, ...]:
        """The requests of the refinement at the ε nearest ``eps`` under ``key`` (none if
        there was none)."""
        with self.lock:
            logs = self.held.get(key)
            if not logs:
                return ()
            self.held.move_to_end(key)
            return logs[min(logs, key=lambda e: abs(e - eps))]

    def remember(self, key: tuple[object, ...], eps: float, asked: Sequence[_Request]) -> None:
        with self.lock:
            logs = self.held.setdefault(key, {})
            self.held.move_to_end(key)
            logs.pop(eps, None)
            logs[eps] = tuple(asked)
            while len(logs) > self.per_key:
                del logs[next(iter(logs))]
            while len(self.held) > self.keys:
                self.held.popitem(last=False)


#: The logs :func:`~crowdhide.accounting.shuffle.variation_ratio._supremum` keeps.
LOGS = RequestLogs()


class CellMemo:
    """``evaluate(requests)`` of one refinement (one ε), called as it; each request asked is
    logged in :attr:`asked`. A request not held yet is evaluated together with the next
    requests of ``prior`` (an earlier refinement's log) past the last one asked that it
    holds, and all values are kept for the rest of the refinement."""

    def __init__(
        self,
        evaluate: Callable[[Sequence[_Request]], list[float]],
        prior: Sequence[_Request] = (),
    ) -> None:
        self.evaluate = evaluate
        self.prior = list(prior)
        self.where = {request: i for i, request in reversed(list(enumerate(self.prior)))}
        self.values: dict[_Request, float] = {}
        self.asked: list[_Request] = []
        self.cursor, self.chunk = 0, FIRST_CHUNK
        self.hinted: list[_Request] = []

    def hint(self, requests: Sequence[_Request]) -> None:
        """Requests the refinement may ask for next: evaluated along with the next requests
        it asks for that are not held (replacing earlier hints)."""
        self.hinted = list(requests)

    def __call__(self, requests: Sequence[_Request]) -> list[float]:
        self.asked += requests
        missing = list(dict.fromkeys(r for r in requests if r not in self.values))
        if missing:
            ahead = self._ahead(missing)
            wanted = set(missing + ahead)
            held = self.values
            hinted = [r for r in dict.fromkeys(self.hinted) if r not in held and r not in wanted]
            batch = missing + ahead + hinted
            self.values.update(zip(batch, self.evaluate(batch), strict=True))
        for request in requests:  # the earlier log's place: past the last request it holds
            self.cursor = max(self.cursor, self.where.get(request, -1) + 1)
        return [self.values[r] for r in requests]

    def _ahead(self, missing: list[_Request]) -> list[_Request]:
        """The next :attr:`chunk` requests of the earlier log not held or missing, the chunk
        doubled if the earlier log holds every missing request, else reset."""
        if not self.prior:
            return []
        if all(request in self.where for request in missing):
            start = max([self.cursor] + [self.where[r] + 1 for r in missing])
        else:
            self.chunk, start = FIRST_CHUNK, self.cursor
        wanted = set(missing)
        ahead = []
        for request in self.prior[start : start + self.chunk]:
            if request not in self.values and request not in wanted:
                wanted.add(request)
                ahead.append(request)
        self.chunk = min(2 * self.chunk, MAX_CHUNK)
        return ahead
