"""Traffic analysis of the captured wire: what an on-path observer learns from TLS records.

The network observer of Ladjel, Anciaux, Bellet, Scerri sees, per connection between node
hosts, the lengths and times of TLS records. With fixed-size frames every data record has the
same length, so what is left is *how many* frames cross each link. :func:`wire_link_counts`
extracts that from a capture (the relay's records), :func:`transcript_link_counts` computes
the same thing from an engine transcript and the node map (so many runs can be simulated
cheaply and checked against real captures), and :func:`link_attack` turns per-link counts of
runs on two neighbouring datasets into a distinguishing test audited with
:func:`audit_scores`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from crowdhide._validation import check_int
from crowdhide.audit.hypothesis_test import AuditResult, audit_scores

__all__ = ["host_of_nodes", "link_attack", "transcript_link_counts", "wire_link_counts"]

IntArray = npt.NDArray[np.int64]


def wire_link_counts(records: npt.ArrayLike, *, frame_record: int, hosts: int) -> IntArray:
    """Data frames per link ``(initiator host, acceptor host)`` seen in a capture.

    ``records`` rows are ``(initiator, acceptor, connection, direction, content type,
    length, time)``. Frame-length application records flow initiator → acceptor (welcome,
    data, one ``END`` per round) and back (welcome, one ``ACK`` per round); the difference
    of the two counts is the number of data frames, which the observer can compute too.

    Parameters
    ----------
    records
        The capture's records (see above), one row per record.
    frame_record
        Length of a frame-length application record.
    hosts
        The number of hosts H.

    Returns
    -------
    numpy.ndarray
        ``H × H`` data-frame counts, initiator host by acceptor host.

    See Also
    --------
    transcript_link_counts : What the transcript predicts the capture shows.

    Examples
    --------
    >>> r = np.array([[0, 1, 1, 0, 23, 145, 0]] * 5 + [[0, 1, 1, 1, 23, 145, 0]] * 2)
    >>> wire_link_counts(r, frame_record=145, hosts=2).tolist()
    [[0, 3], [0, 0]]
    """
    rec = np.asarray(records, dtype=np.int64).reshape(-1, 7)
    h = check_int("hosts", hosts, low=1)
    frames = (rec[:, 4] == 23) & (rec[:, 5] == frame_record)
    out = np.zeros((h, h), dtype=np.int64)
    for direction, sign in ((0, 1), (1, -1)):
        mask = frames & (rec[:, 3] == direction)
        np.add.at(out, (rec[mask, 0], rec[mask, 1]), sign)
    return out


def host_of_nodes(
    ids: npt.ArrayLike, *, groups: Mapping[str, tuple[int, int]], block_size: int, hosts: int
) -> IntArray:
    """Host of each global node id under the node map "block ``b`` on host ``b mod H``".

    Parameters
    ----------
    ids
        Global node ids.

    groups
        The plan's node groups: name → (first global id, size).
    block_size
        Nodes per block.
    hosts
        The number of hosts H.

    Returns
    -------
    numpy.ndarray
        The host of every id, in ``0 .. H−1``.

    See Also
    --------
    transcript_link_counts : Counts messages per host pair with this map.

    Examples
    --------
    >>> host_of_nodes([0, 1, 5, 6], groups={"S": (0, 5), "C": (5, 2)}, block_size=2,
    ...                hosts=2).tolist()
    [0, 0, 0, 0]
    """
    node = np.asarray(ids, dtype=np.int64)
    names = sorted(groups, key=lambda g: groups[g][0])
    starts = np.array([groups[g][0] for g in names], dtype=np.int64)
    first = starts[np.searchsorted(starts, node, side="right") - 1]
    return ((node - first) // block_size) % hosts


def transcript_link_counts(
    source: npt.ArrayLike,
    target: npt.ArrayLike,
    *,
    groups: Mapping[str, tuple[int, int]],
    block_size: int,
    hosts: int,
    node_hosts: npt.ArrayLike | None = None,
) -> IntArray:
    """Messages per host pair of a transcript: what :func:`wire_link_counts` would show.

    ``node_hosts`` (the host of every global node id, e.g. from the tls backend's placement)
    replaces the node map "block ``b`` on host ``b mod H``".

    Parameters
    ----------
    source, target
        Global node ids of every message's sender and receiver.

    groups
        The plan's node groups: name → (first global id, size).
    block_size
        Nodes per block.
    hosts
        The number of hosts H.
    node_hosts
        The host of every global node id, replacing the map (see above).

    Returns
    -------
    numpy.ndarray
        ``H × H`` message counts, initiator host by acceptor host.

    See Also
    --------
    wire_link_counts : The same counts, from a capture of the wire.
    """
    if node_hosts is not None:
        where = np.asarray(node_hosts, dtype=np.int64)
        a, b = where[np.asarray(source, dtype=np.int64)], where[np.asarray(target, dtype=np.int64)]
    else:
        a = host_of_nodes(source, groups=groups, block_size=block_size, hosts=hosts)
        b = host_of_nodes(target, groups=groups, block_size=block_size, hosts=hosts)
    out = np.zeros((hosts, hosts), dtype=np.int64)
    np.add.at(out, (a, b), 1)
    return out


def link_attack(
    counts_x: Sequence[npt.ArrayLike],
    counts_x_prime: Sequence[npt.ArrayLike],
    *,
    link_x: tuple[int, int],
    link_x_prime: tuple[int, int],
    delta: float,
    confidence: float = 0.95,
) -> tuple[AuditResult, float]:
    """Audit the test "more frames on ``link_x`` than on ``link_x_prime``" from per-run counts.

    On dataset x a user's message goes to a node on ``link_x``'s acceptor, on x' to one on
    ``link_x_prime``'s; the score of a run is the difference of the two links' counts.
    Returns the audit and the accuracy of the best threshold (balanced, held-out half).

    Parameters
    ----------
    counts_x, counts_x_prime
        Per-run link-count matrices (``H × H``) observed on x and on x'.
    link_x, link_x_prime
        The (initiator, acceptor) links the user's message takes on x and on x'.
    delta
        δ of the guarantee being audited.
    confidence
        Confidence of the lower bound.

    Returns
    -------
    tuple of (AuditResult, float)
        The audit and the test's balanced held-out accuracy.

    See Also
    --------
    wire_link_counts : The link counts of a capture.
    crowdhide.audit.audit_scores : The audit applied to the scores.

    Examples
    --------
    >>> x = [np.array([[0, 5], [0, 3]])] * 40
    >>> y = [np.array([[0, 4], [0, 4]])] * 40
    >>> result, accuracy = link_attack(x, y, link_x=(0, 1), link_x_prime=(1, 1), delta=0.0)
    >>> accuracy, bool(result.privacy.epsilon > 1.5)  # 20 held-out runs per side
    (1.0, True)
    """
    sx = np.array([np.asarray(c)[link_x] - np.asarray(c)[link_x_prime] for c in counts_x])
    sy = np.array([np.asarray(c)[link_x] - np.asarray(c)[link_x_prime] for c in counts_x_prime])
    result = audit_scores(sx.astype(float), sy.astype(float), delta=delta, confidence=confidence)
    accuracy = 1.0 - 0.5 * (result.false_positive_rate + result.false_negative_rate)
    return result, accuracy
