"""The rows of a group that one shard or host holds: some of its blocks, at their global rows.

A backend that places blocks on shards or hosts (:mod:`crowdhide.engine.backend`, the tls
node daemons) gives each a copy of the plan whose source groups carry only the blocks it
serves, as a :class:`BlockRows`; :func:`block_rows` reads a block from either form.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from crowdhide.errors import InvalidParameterError

if TYPE_CHECKING:
    from crowdhide.engine.plan import NodeGroup, State

__all__ = ["BlockRows", "block_rows"]


class BlockRows(Mapping[str, npt.NDArray[Any]]):
    """A group's ``data`` restricted to some of its blocks: what one shard or host holds.

    ``parts`` maps the global first row of each held block to that block's columns; rows
    keep their global position, so node ids and counter-based randomness are unchanged.
    As a mapping it gives, per column, the held rows in row order (not ``size`` rows).

    Examples
    --------
    >>> rows = BlockRows({4: {"a": np.array([7, 8])}})
    >>> rows.rows(4, 6)["a"].tolist(), rows["a"].tolist(), list(rows)
    ([7, 8], [7, 8], ['a'])
    """

    def __init__(self, parts: Mapping[int, State], columns: Sequence[str] = ()) -> None:
        self.parts = {int(k): dict(v) for k, v in sorted(parts.items())}
        self.columns = tuple(columns) or next((tuple(v) for v in self.parts.values()), ())

    def check(self, name: str, size: int) -> None:
        """Raise unless every part has the declared columns and lies within ``size`` rows."""
        for start, part in self.parts.items():
            lengths = {len(part[c]) for c in self.columns if c in part}
            if set(part) != set(self.columns) or len(lengths) > 1:
                raise InvalidParameterError(
                    f"{name}: block at row {start} must have columns {self.columns}"
                )
            stop = start + (lengths.pop() if lengths else 0)
            if start < 0 or stop > size:
                raise InvalidParameterError(
                    f"{name}: rows {start}..{stop - 1} lie outside 0..{size - 1}"
                )

    def rows(self, start: int, stop: int) -> State:
        """The columns of rows ``start .. stop-1``, which must be one held block."""
        part = self.parts.get(start)
        if part is None or any(len(v) != stop - start for v in part.values()):
            raise KeyError(f"rows {start}..{stop - 1} are not held here (held: {list(self.parts)})")
        return part

    def __getitem__(self, column: str) -> npt.NDArray[Any]:
        if column not in self.columns:
            raise KeyError(column)
        values = [np.asarray(p[column]) for p in self.parts.values()]
        return np.concatenate(values) if values else np.zeros(0)

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)


def block_rows(group: NodeGroup, start: int, stop: int) -> State:
    """Rows ``start .. stop-1`` of ``group.data`` (full or :class:`BlockRows`)."""
    if group.data is None:
        return {}
    if isinstance(group.data, BlockRows):
        return group.data.rows(start, stop)
    return {k: np.asarray(v)[start:stop] for k, v in group.data.items()}
