"""Shuffle-model protocols on the decentralized engine: users → shuffler → analyzer.

The shuffle model (Cheu et al., EUROCRYPT 2019, Def. 3.4; the ESA / Prochlo architecture of
Bittau et al., SOSP 2017) as a three-stage plan of :mod:`crowdhide.plans`:

* ``users`` — one source node per user; its program runs the protocol's local randomizer on
  the user's own tuple and sends the report (route ``users->shuffler``, kind ``fixed``: every
  user talks to the one shuffler, independently of the data). Multi-message protocols
  (``messages_per_user = r > 1``, e.g. Cheu et al.'s real sum) send r messages per user on
  the routes ``users->shuffler#0 … #r−1``, which the shuffler permutes *individually*;
* ``shuffler`` — one compute node; it collects its inbox, permutes it with the CSPRNG
  permutation of :func:`~crowdhide.protocols.shuffler.shuffle_messages` and forwards the
  permuted multiset (route ``shuffler->analyzer``, kind ``stream``: one message per report);
* ``analyzer`` — the result node; its program runs the protocol's estimator on what it
  receives. The messages it gets index the *shuffler's* state (positions in the permuted
  batch), so it sees the multiset and nothing about who sent what.

The engine records the observer's transcript (both hops, message counts, sizes). The
communication pattern is data-independent (every route is ``fixed`` or ``stream``), so the
plan's certificate for the traffic (the communication-pattern bound of Ladjel, Anciaux,
Bellet, Scerri) is ε = 0; the privacy of the *contents* is the shuffle accountant's
certificate of the protocol (shuffled randomizers).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._validation import as_rng, check_int
from crowdhide.backends import execute
from crowdhide.engine import DEFAULT_BLOCK_SIZE, Backend, Execution, Inbox, Transcript
from crowdhide.errors import InvalidParameterError
from crowdhide.plans.model import ExecutionPlan, PlanBuilder, State
from crowdhide.protocols.shuffler import shuffle_messages

__all__ = [
    "ANALYZER",
    "SHUFFLER",
    "SHUFFLER_TO_ANALYZER",
    "USERS",
    "USERS_TO_SHUFFLER",
    "EngineRun",
    "run_on_engine",
    "shuffle_plan",
    "user_routes",
]

USERS = "users"
SHUFFLER = "shuffler"
ANALYZER = "analyzer"
USERS_TO_SHUFFLER = f"{USERS}->{SHUFFLER}"
SHUFFLER_TO_ANALYZER = f"{SHUFFLER}->{ANALYZER}"
#: Column of the users' and the shuffler's state holding the reports.
REPORT = "report"
#: Bytes of one encrypted report on the wire (a fixed-size ciphertext; illustrative).
DEFAULT_MESSAGE_SIZE = 64

#: ``randomize(data) -> reports``: the local randomizer, vectorized over the users' columns.
Randomizer = Callable[[State], npt.NDArray[Any]]
#: ``analyze(reports) -> state``: the estimator, run on the shuffled multiset.
Analyzer = Callable[[npt.NDArray[Any]], State]


@dataclass(frozen=True)
class EngineRun:
    """A shuffle-model protocol executed on the engine.

    Attributes
    ----------
    result
        The analyzer's state (what ``analyze`` returned).
    execution
        The engine's :class:`~crowdhide.engine.Execution` (states, transcript, route stats).
    secure
        Whether the shuffler used the OS CSPRNG (False for seeded simulations).
    """

    result: State = field(repr=False)
    execution: Execution = field(repr=False)
    secure: bool

    @property
    def transcript(self) -> Transcript:
        """What the network observer saw."""
        return self.execution.transcript

    @property
    def users_to_shuffler(self) -> int:
        """Messages on the users → shuffler hop (all r routes of a multi-message protocol)."""
        return sum(
            stats.messages
            for name, stats in self.execution.routes.items()
            if name.split("#")[0] == USERS_TO_SHUFFLER
        )

    @property
    def shuffler_to_analyzer(self) -> int:
        """Messages on the shuffler → analyzer hop."""
        return self.execution.routes[SHUFFLER_TO_ANALYZER].messages

    def traffic(self) -> dict[str, Any]:
        """Message counts per hop and bytes on the wire (JSON-able)."""
        return {
            "users_to_shuffler": self.users_to_shuffler,
            "shuffler_to_analyzer": self.shuffler_to_analyzer,
            "bytes_on_wire": self.transcript.bytes_on_wire,
            "secure_shuffle": self.secure,
        }


def user_routes(messages_per_user: int) -> tuple[str, ...]:
    """Names of the users → shuffler routes for ``messages_per_user`` messages per user."""
    if messages_per_user == 1:
        return (USERS_TO_SHUFFLER,)
    return tuple(f"{USERS_TO_SHUFFLER}#{j}" for j in range(messages_per_user))


def shuffle_plan(
    users: Mapping[str, npt.ArrayLike],
    *,
    randomize: Randomizer,
    analyze: Analyzer,
    shuffle_rng: Any = None,
    message_size: int = DEFAULT_MESSAGE_SIZE,
    messages_per_user: int = 1,
) -> ExecutionPlan:
    """The plan users → shuffler → analyzer (module docstring).

    Parameters
    ----------
    users
        The users' tuples: named columns, one row per user (one source node each).
    randomize
        Local randomizer, ``randomize(columns) -> reports`` with one report per user (a
        report may be a vector: then ``reports`` has one row per user). It runs in the
        users' program, i.e. on their devices.
    analyze
        Estimator, ``analyze(shuffled reports) -> state`` (a mapping of arrays); it runs in
        the analyzer's program on the shuffler's output only.
    shuffle_rng
        ``None`` (default): the shuffler's permutation comes from the OS CSPRNG
        (:func:`~crowdhide.protocols.shuffler.secure_permutation`). A Generator or seed: a
        reproducible permutation, for simulations only.
    message_size
        Bytes of one report on the wire (the same for every message of a hop).
    messages_per_user
        r: with r > 1, ``randomize`` returns an ``(n, r)`` array (column j is every user's
        j-th message), each user sends r messages and the shuffler permutes all n·r of them
        individually (the analyzer receives a flat array of n·r messages).

    Examples
    --------
    >>> import numpy as np
    >>> plan = shuffle_plan(
    ...     {"bit": np.array([0, 1, 1])},
    ...     randomize=lambda cols: cols["bit"],
    ...     analyze=lambda reports: {"sum": np.array([reports.sum()])},
    ... )
    >>> [(r.name, r.kind) for r in plan.routes]
    [('users->shuffler', 'fixed'), ('shuffler->analyzer', 'stream')]
    >>> [c.data_dependent for c in plan.clusters()]
    [False, False, False]
    """
    size = check_int("message_size", message_size, low=1)
    per_user = check_int("messages_per_user", messages_per_user, low=1)
    routes = user_routes(per_user)
    permutation_rng = None if shuffle_rng is None else as_rng(shuffle_rng)
    columns = {name: np.asarray(values) for name, values in users.items()}

    def shuffler_program(inbox: Inbox, rng: np.random.Generator) -> State:
        if per_user == 1:
            collected = inbox.only(USERS_TO_SHUFFLER).gather(REPORT)
        else:
            collected = np.concatenate(
                [inbox.only(route).gather(f"{REPORT}#{j}") for j, route in enumerate(routes)]
            )
        return {REPORT: shuffle_messages(collected, rng=permutation_rng).messages}

    def analyzer_program(inbox: Inbox, rng: np.random.Generator) -> State:
        return analyze(inbox.only(SHUFFLER_TO_ANALYZER).gather(REPORT))

    builder = PlanBuilder()
    builder.sources(USERS, columns, process=_user_program(randomize, per_user))
    builder.compute(SHUFFLER, size=1, process=shuffler_program)
    builder.result(ANALYZER, process=analyzer_program)
    for j, route in enumerate(routes):
        column = REPORT if per_user == 1 else f"{REPORT}#{j}"
        builder.route(
            USERS, SHUFFLER, kind="fixed", name=route, message_size=size, columns=(column,)
        )
    builder.route(SHUFFLER, ANALYZER, kind="stream", message_size=size)
    return builder.build()


def _user_program(
    randomize: Randomizer, per_user: int
) -> Callable[[Inbox, np.random.Generator], State]:
    """The users' program: run the local randomizer on this block's users; one report column
    (or ``per_user`` columns ``report#j``) of one row per user."""

    def user_program(inbox: Inbox, rng: np.random.Generator) -> State:
        assert inbox.state is not None
        mine = dict(inbox.state)  # this block's users only
        reports = np.asarray(randomize(mine))
        count = next(iter(mine.values())).shape[0]
        if reports.ndim == 0 or reports.shape[0] != count:
            raise InvalidParameterError(
                f"randomize must return one report per user ({count}), got shape {reports.shape}"
            )
        if per_user == 1:
            return {REPORT: reports}
        if reports.shape[1:] != (per_user,):
            raise InvalidParameterError(
                f"randomize must return {per_user} messages per user, shape ({count}, "
                f"{per_user}), got shape {reports.shape}"
            )
        return {f"{REPORT}#{j}": reports[:, j] for j in range(per_user)}

    return user_program


def run_on_engine(
    users: Mapping[str, npt.ArrayLike],
    *,
    randomize: Randomizer,
    analyze: Analyzer,
    shuffle_rng: Any = None,
    message_size: int = DEFAULT_MESSAGE_SIZE,
    messages_per_user: int = 1,
    backend: Backend | None = None,
) -> EngineRun:
    """Build :func:`shuffle_plan` and execute it; the analyzer's state is the result.

    ``randomize`` and ``analyze`` carry their own randomness (closures over the protocol's
    ``rng``), so the reports are the same as on the direct path for the same ``rng``. The
    engine's own generator only drives send orders, which the ``fixed`` and ``stream``
    routes of this plan do not randomize; it is seeded with 0.

    Examples
    --------
    >>> import numpy as np
    >>> run = run_on_engine(
    ...     {"bit": np.array([0, 1, 1, 1])},
    ...     randomize=lambda cols: cols["bit"],
    ...     analyze=lambda reports: {"ones": np.array([reports.sum()])},
    ... )
    >>> int(run.result["ones"][0]), run.users_to_shuffler, run.shuffler_to_analyzer, run.secure
    (3, 4, 4, True)
    """
    plan = shuffle_plan(
        users,
        randomize=randomize,
        analyze=analyze,
        shuffle_rng=shuffle_rng,
        message_size=message_size,
        messages_per_user=messages_per_user,
    )
    # ``randomize`` draws from the protocol's own generator: keep the users in one block so
    # it is called once, in the same order as on the direct path.
    users_count = plan.group(USERS).size
    execution = execute(
        plan, rng=0, backend=backend or "local", block_size=max(DEFAULT_BLOCK_SIZE, users_count)
    )
    return EngineRun(
        result=execution.states[ANALYZER], execution=execution, secure=shuffle_rng is None
    )
