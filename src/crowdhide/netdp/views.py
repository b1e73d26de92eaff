"""Transcripts of token protocols and the views of users and coalitions.

Definitions (Cyffers & Bellet 2022):

* Transcript ``A(D) = ((u, m, v))`` (:class:`WalkTranscript`): every message m sent by u to v;
  in a token protocol the messages are the token values, stored per step: ``holders[t]`` receives
  ``received[t]`` from ``holders[t−1]`` and sends ``sent[t] = received[t+1]`` to
  ``holders[t+1]``.
* View of a user (Eq. 1): the messages it sends or receives. On the ring the peers are public;
  on the complete graph they are hidden (Section 4) unless ``known_peers=True`` (App. G).
* View of a coalition ``V'`` (Definition 2): the union of its members' views.
* Network DP (Definition 1): for all u ≠ v, v's view is (ε, δ)-indistinguishable under a change
  of u's data; with collusions (Definition 2) for every coalition of at most c users **not
  containing u** (the paper omits this condition; :func:`check_coalition` enforces it).

The final token is *not* broadcast: a user only sees what it receives and sends.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from crowdhide._validation import check_bool, check_int
from crowdhide.accounting import DiscretePairCurve
from crowdhide.errors import InvalidParameterError

__all__ = [
    "View",
    "WalkTranscript",
    "check_coalition",
    "coalition_view",
    "network_dp_curve",
    "user_view",
]


@dataclass(frozen=True)
class WalkTranscript:
    """The messages of one run of a token protocol.

    Parameters
    ----------
    n
        Number of users.
    holders
        ``holders[t]`` holds the token at step t (0-based steps, length T).
    received
        ``received[t]``: token value received by ``holders[t]`` (shape ``(T,)`` for sums,
        ``(T, L)`` for histograms, ``(T, d)`` for SGD). ``received[0]`` is the initial token.
    final
        Token after the last step (kept by the last holder, not broadcast).
    topology
        ``"ring"`` or ``"complete"``.

    See Also
    --------
    user_view : What one user sees of it.
    """

    n: int
    holders: npt.NDArray[np.int64]
    received: npt.NDArray[np.float64]
    final: npt.NDArray[np.float64]
    topology: str

    @property
    def steps(self) -> int:
        """Number of steps T."""
        return int(self.holders.size)

    def sent(self) -> npt.NDArray[np.float64]:
        """``sent[t]``: the token sent at step t (``received[t+1]``, then ``final``)."""
        return np.concatenate([self.received[1:], np.asarray(self.final)[None, ...]], axis=0)

    def messages(self) -> list[tuple[int, npt.NDArray[np.float64], int]]:
        """The full transcript ``[(sender, content, receiver), ...]`` (for small runs)."""
        sent = self.sent()
        return [
            (int(self.holders[t]), sent[t], int(self.holders[t + 1])) for t in range(self.steps - 1)
        ]


@dataclass(frozen=True)
class View:
    """What a user (or a coalition) sees of a transcript.

    Parameters
    ----------
    members
        The observing users (one user, or a coalition).
    times
        Steps (0-based) at which a member held the token.
    received
        Token values received at those steps (the first step's receipt is the initial
        token when a member starts the walk).
    sent
        Token values sent at those steps.
    senders, receivers
        Peer identities, or ``None`` when the path is hidden (complete graph without
        ``known_peers``). ``-1`` marks "no peer" (start / end of the walk).

    See Also
    --------
    user_view, coalition_view : Produce it.
    """

    members: tuple[int, ...]
    times: npt.NDArray[np.int64]
    received: npt.NDArray[np.float64]
    sent: npt.NDArray[np.float64]
    senders: npt.NDArray[np.int64] | None
    receivers: npt.NDArray[np.int64] | None


def check_coalition(
    members: Iterable[int], *, n: int, target: int | None = None
) -> tuple[int, ...]:
    """Validate a coalition: distinct users in ``[0, n)``, not containing ``target``.

    Parameters
    ----------
    members
        The colluding users.
    n
        Number of users.
    target
        The protected user, who may not be a member (``None``: no such check).

    Returns
    -------
    tuple of int
        The members, sorted.

    See Also
    --------
    coalition_view : The view of a coalition.

    Examples
    --------
    >>> check_coalition([3, 1], n=5, target=0)
    (1, 3)
    >>> check_coalition([0, 1], n=5, target=0)
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: members must not contain the protected user u=0 ...
    """
    n = check_int("n", n, low=2)
    users = tuple(sorted(check_int("member", m, low=0, high=n - 1) for m in members))
    if not users:
        raise InvalidParameterError("members must not be empty, got ()")
    if len(set(users)) != len(users):
        raise InvalidParameterError(f"members must be distinct, got {users}")
    if target is not None and target in users:
        raise InvalidParameterError(
            f"members must not contain the protected user u={target} (Definition 2), got {users}"
        )
    if len(users) >= n:
        raise InvalidParameterError(
            f"a coalition must leave at least one honest user, got {len(users)}"
        )
    return users


def coalition_view(
    transcript: WalkTranscript, members: Iterable[int], *, known_peers: bool | None = None
) -> View:
    """The union of the views of ``members`` (Definition 2).

    Parameters
    ----------
    transcript
        A protocol run.
    members
        Colluding users.
    known_peers
        Whether peers' identities are visible; default: True on the ring (public order),
        False on the complete graph (hidden path, Section 4).

    Returns
    -------
    View
        What the members see together.

    See Also
    --------
    user_view : One user's view.

    Examples
    --------
    >>> import numpy as np
    >>> tr = WalkTranscript(n=3, holders=np.array([0, 1, 2, 1]), received=np.arange(4.0),
    ...                 final=np.array(4.0), topology="complete")
    >>> v = coalition_view(tr, [1])
    >>> v.times.tolist(), v.received.tolist(), v.sent.tolist(), v.senders is None
    ([1, 3], [1.0, 3.0], [2.0, 4.0], True)
    """
    users = check_coalition(members, n=transcript.n)
    known = (
        transcript.topology == "ring"
        if known_peers is None
        else check_bool("known_peers", known_peers)
    )
    mask = np.isin(transcript.holders, np.asarray(users, dtype=np.int64))
    times = np.flatnonzero(mask).astype(np.int64)
    sent = transcript.sent()
    senders: npt.NDArray[np.int64] | None = None
    receivers: npt.NDArray[np.int64] | None = None
    if known:
        padded = np.r_[-1, transcript.holders, -1]
        senders = padded[times]
        receivers = padded[times + 2]
    return View(
        members=users,
        times=times,
        received=transcript.received[times],
        sent=sent[times],
        senders=senders,
        receivers=receivers,
    )


def user_view(transcript: WalkTranscript, user: int, *, known_peers: bool | None = None) -> View:
    """The view ``O_v`` of a single user (Eq. 1); see :func:`coalition_view`.

    Parameters
    ----------
    transcript
        A protocol run.
    user
        The observing user v.
    known_peers
        Whether peers' identities are visible (see :func:`coalition_view`).

    Returns
    -------
    View
        What v sees.

    See Also
    --------
    coalition_view : The view of several users together.
    """
    return coalition_view(transcript, [user], known_peers=known_peers)


def network_dp_curve(
    view_d: Mapping[Hashable, float], view_d_prime: Mapping[Hashable, float]
) -> DiscretePairCurve:
    """Exact privacy curve of one (u, v) pair from the two distributions of v's view.

    Definition 1 (network DP) asks, for every pair u ≠ v and every ``D ~_u D'``, that the
    distributions of ``O_v(A(D))`` and ``O_v(A(D'))`` be (ε, δ)-close; given both as
    ``{view: probability}`` (e.g. enumerated by brute force on a tiny graph), this returns the
    exact curve δ(ε) (both directions). For a coalition pass the coalition's view (Def. 2).

    Parameters
    ----------
    view_d, view_d_prime
        The distributions of v's view on D and on D', as ``{view: probability}``.

    Returns
    -------
    DiscretePairCurve
        The exact curve δ(ε), both directions.

    See Also
    --------
    user_view : The view of one user in one run.

    Examples
    --------
    >>> curve = network_dp_curve({"a": 0.75, "b": 0.25}, {"a": 0.25, "b": 0.75})
    >>> round(curve.epsilon(1e-9), 6) == round(float(np.log(3)), 6)
    True
    """
    keys = sorted(set(view_d) | set(view_d_prime), key=repr)
    p = np.array([float(view_d.get(k, 0.0)) for k in keys])
    q = np.array([float(view_d_prime.get(k, 0.0)) for k in keys])
    return DiscretePairCurve.from_probabilities(p, q)
