"""Mechanisms as explicit channels: k-RR, full and reduced shuffles, their cascades.

Constructions of Jurado, Gonze, Alvim, Palamidessi (§II–III), with datasets in lexicographic
order and histograms in decreasing lexicographic order:

* ``K`` — the local ``k × k`` k-RR matrix (eq. 3): ``p = e^ε0/(e^ε0+k−1)`` on the diagonal,
  ``q = 1/(e^ε0+k−1)`` elsewhere;
* ``N = K^{⊗n}`` — k-RR applied to each user (Def. 10), ``N[x, y] = p^{n−d_H(x,y)} q^{d_H(x,y)}``;
* ``S`` — the full shuffle (Def. 7), ``S[x, y] = 1/|[x]|`` when ``hist(y) = hist(x)``;
* ``S^r`` — the reduced shuffle (Def. 8): deterministic map to the histogram;
* ``N^r`` — the reduced k-RR on histograms (Def. 23, Lemma 30):
  ``N^r[h, h'] = P(hist(N(x)) = h')`` for any ``x`` with ``hist(x) = h``.

They satisfy ``NS = SN`` (Prop. 11 — in fact for *any* i.i.d. local randomizer),
``S ≡ S^r`` (Prop. 9), ``NS ≡ NS^r`` (Prop. 12) and ``NS^r = S^r N^r`` (Prop. 26); the test
suite checks all of them exactly with Fractions. These explicit matrices have ``k^n`` rows and
are meant for small instances and tests; :mod:`crowdhide.qif.shuffle` computes the same
vulnerabilities from histograms without building them.

Examples
--------
>>> from fractions import Fraction as Fr
>>> ns = shuffled_krr_channel(n=2, k=2, keep_probability=Fr(3, 4), reduced=True)
>>> ns.outputs
((2, 0), (1, 1), (0, 2))
>>> ns.matrix[1].tolist()  # dataset (0, 1): histogram of the noisy reports
[Fraction(3, 16), Fraction(5, 8), Fraction(3, 16)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from crowdhide._validation import check_int, check_real
from crowdhide.errors import InvalidParameterError, ParameterTypeError
from crowdhide.qif.combinatorics import (
    check_size,
    dataset_histograms,
    datasets,
    histograms,
)
from crowdhide.qif.core import Channel, Matrix

__all__ = [
    "ORDERS",
    "krr_channel",
    "krr_dataset_channel",
    "krr_keep_probability",
    "local_randomizer_channel",
    "output_histogram_distribution",
    "product_channel",
    "reduced_krr_channel",
    "reduced_product_channel",
    "reduced_shuffle_channel",
    "shuffle_channel",
    "shuffled_krr_channel",
    "shuffled_product_channel",
]

#: Orders of the cascade of k-RR and shuffle: noise first (``NS``) or shuffle first (``SN``).
ORDERS = ("noise-first", "shuffle-first")


def krr_keep_probability(
    *, k: int, eps0: float | None = None, keep_probability: Any = None
) -> float | Fraction:
    """The k-RR keep probability ``p = e^ε0/(e^ε0+k−1)``, from ``eps0`` or given directly.

    Exactly one of ``eps0`` (in ``[0, ∞]``) and ``keep_probability`` (in ``[1/k, 1]``; a
    :class:`~fractions.Fraction` keeps everything exact) must be given.

    Examples
    --------
    >>> krr_keep_probability(k=2, eps0=math.log(3))
    0.75
    >>> krr_keep_probability(k=3, keep_probability=0.2)
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: keep_probability must be in [1/k, 1] ... got 0.2
    """
    k = check_int("k", k, low=2)
    if (eps0 is None) == (keep_probability is None):
        raise InvalidParameterError("give exactly one of eps0 and keep_probability")
    if eps0 is not None:
        eps = check_real("eps0", eps0, low=0.0, allow_inf=True)
        # p = 1 / (1 + (k−1) e^{−ε0}): no overflow for large ε0, and ε0 = ∞ gives p = 1.
        return 1.0 / (1.0 + (k - 1) * math.exp(-eps))
    if isinstance(keep_probability, Fraction | int) and not isinstance(keep_probability, bool):
        p_exact = Fraction(keep_probability)
        if not Fraction(1, k) <= p_exact <= 1:
            raise InvalidParameterError(
                f"keep_probability must be in [1/k, 1] = [{1 / k:.6g}, 1] (eps0 >= 0), "
                f"got {keep_probability!r}"
            )
        return p_exact
    p = check_real("keep_probability", keep_probability)
    if not 1.0 / k - 1e-15 <= p <= 1.0:
        raise InvalidParameterError(
            f"keep_probability must be in [1/k, 1] = [{1 / k:.6g}, 1] (eps0 >= 0), "
            f"got {keep_probability!r}"
        )
    return max(p, 1.0 / k)


def _other_probability(p: float | Fraction, k: int) -> float | Fraction:
    return (1 - p) / (k - 1)


def krr_channel(*, k: int, eps0: float | None = None, keep_probability: Any = None) -> Channel:
    """The local k-RR channel ``K`` (``k × k``, values ``0..k−1``; eq. 3).

    Parameters
    ----------
    k
        Number of values, ``k >= 2``.

    eps0, keep_probability
        The k-RR noise: ε0, or the probability p of keeping the true value (a Fraction gives
        exact results); give one of them.

    Returns
    -------
    Channel
        The ``k × k`` channel: p on the diagonal, (1 − p)/(k − 1) elsewhere.

    See Also
    --------
    krr_dataset_channel : Its n-fold product on datasets.
    local_randomizer_channel : The channel of any finite local randomizer.

    Examples
    --------
    >>> krr_channel(k=2, eps0=math.log(3)).matrix.tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """
    p = krr_keep_probability(k=k, eps0=eps0, keep_probability=keep_probability)
    q = _other_probability(p, k)
    if isinstance(p, Fraction):
        rows: Any = [[p if i == j else q for j in range(k)] for i in range(k)]
    else:
        rows = np.full((k, k), float(q))
        np.fill_diagonal(rows, float(p))
    return Channel(rows, inputs=range(k), outputs=range(k))


def local_randomizer_channel(randomizer: Any) -> Channel:
    """The channel of a finite-output local randomizer of :mod:`crowdhide.mechanisms`.

    Works with any object exposing ``channel()`` (a row-stochastic matrix, row = true
    value), e.g. ``KaryRandomizedResponse`` and ``BinaryRandomizedResponse``. Continuous
    mechanisms (Laplace, Gaussian) have no finite channel and are refused.

    Parameters
    ----------
    randomizer
        An object with a ``channel()`` method (row = true value).

    Returns
    -------
    Channel
        Its channel, inputs and outputs labelled ``0..``.

    See Also
    --------
    shuffled_product_channel : The randomizer applied by n users, then shuffled.
    """
    method = getattr(randomizer, "channel", None)
    if not callable(method):
        raise ParameterTypeError(
            "randomizer must have a finite output set and a channel() method "
            f"(e.g. KaryRandomizedResponse), got {type(randomizer).__name__}"
        )
    matrix = np.asarray(method(), dtype=np.float64)
    return Channel(matrix)


def product_channel(local: Channel, *, n: int) -> Channel:
    """``K^{⊗n}``: ``local`` applied independently to each of ``n`` users (Def. 10).

    Inputs and outputs are tuples (datasets), lexicographic in ``local``'s label orders.
    """
    n = check_int("n", n, low=1)
    rows, cols = local.n_inputs**n, local.n_outputs**n
    check_size(f"the product channel K^(x{n}) ({rows} x {cols})", rows * cols)
    mat = local.matrix
    result = mat
    for _ in range(n - 1):
        result = np.kron(result, mat)
    in_labels = [
        tuple(local.inputs[i] for i in row)
        for row in np.indices((local.n_inputs,) * n).reshape(n, -1).T
    ]
    out_labels = [
        tuple(local.outputs[i] for i in row)
        for row in np.indices((local.n_outputs,) * n).reshape(n, -1).T
    ]
    return Channel(result, inputs=in_labels, outputs=out_labels, atol=1e-7)


def krr_dataset_channel(
    *, n: int, k: int, eps0: float | None = None, keep_probability: Any = None
) -> Channel:
    """The full k-RR channel ``N = K^{⊗n}`` on datasets (Def. 10).

    Parameters
    ----------
    n, k
        Users and values.

    eps0, keep_probability
        The k-RR noise: ε0, or the probability p of keeping the true value (a Fraction gives
        exact results); give one of them.

    Returns
    -------
    Channel
        The ``k^n × k^n`` channel on datasets.

    See Also
    --------
    reduced_krr_channel : The same noise on histograms, much smaller.
    """
    return product_channel(krr_channel(k=k, eps0=eps0, keep_probability=keep_probability), n=n)


def shuffle_channel(*, n: int, k: int, exact: bool = False) -> Channel:
    """The full shuffle ``S`` (Def. 7): ``S[x, y] = 1/|[x]|`` iff ``hist(y) = hist(x)``.

    Parameters
    ----------
    n, k
        Users and values.
    exact
        Fractions instead of floats.

    Returns
    -------
    Channel
        The ``k^n × k^n`` channel on datasets.

    See Also
    --------
    reduced_shuffle_channel : The equivalent channel to histograms.
    """
    n = check_int("n", n, low=1)
    k = check_int("k", k, low=2)
    check_size(f"the full shuffle channel ({k}^{n} x {k}^{n})", k ** (2 * n))
    data = datasets(n=n, k=k)
    labels = [tuple(int(v) for v in row) for row in data]
    hists = dataset_histograms(data, k=k)
    keys = hists @ (n + 1) ** np.arange(k)
    same = keys[:, None] == keys[None, :]
    sizes = same.sum(axis=1)
    if exact:
        mat: Any = np.empty(same.shape, dtype=object)
        for i in range(same.shape[0]):
            inv = Fraction(1, int(sizes[i]))
            mat[i] = [inv if s else Fraction(0) for s in same[i]]
    else:
        mat = same / sizes[:, None]
    return Channel(mat, inputs=labels, outputs=labels)


def reduced_shuffle_channel(*, n: int, k: int, exact: bool = False) -> Channel:
    """The reduced shuffle ``S^r`` (Def. 8): dataset → its histogram (0/1 matrix).

    Parameters
    ----------
    n, k
        Users and values.
    exact
        Fractions instead of floats.

    Returns
    -------
    Channel
        Datasets (rows) to histograms (columns), a deterministic 0/1 channel.

    See Also
    --------
    shuffle_channel : The full shuffle on datasets.
    """
    n = check_int("n", n, low=1)
    k = check_int("k", k, low=2)
    data = datasets(n=n, k=k)
    hists = histograms(n=n, k=k)
    check_size(
        f"the reduced shuffle channel ({data.shape[0]} x {hists.shape[0]})",
        data.shape[0] * hists.shape[0],
    )
    index = {tuple(int(v) for v in h): i for i, h in enumerate(hists)}
    rows = dataset_histograms(data, k=k)
    mat: Any = np.zeros((data.shape[0], hists.shape[0]), dtype=np.int64 if exact else float)
    for i, h in enumerate(rows):
        mat[i, index[tuple(int(v) for v in h)]] = 1
    return Channel(
        mat,
        inputs=[tuple(int(v) for v in row) for row in data],
        outputs=list(index),
    )


def output_histogram_distribution(
    local: Matrix, counts: Sequence[int]
) -> dict[tuple[int, ...], Any]:
    """Distribution of ``hist(N(x))`` when ``hist(x) = counts`` and ``N = local^{⊗n}``.

    Dynamic programming over users (exact for Fraction matrices); keys are output
    histograms. Cost ``O(n · |H| · k)``: for small instances and tests.
    """
    mat = np.asarray(local, dtype=object if local.dtype == object else np.float64)
    k_out = mat.shape[1]
    zero: Any = Fraction(0) if mat.dtype == object else 0.0
    dist: dict[tuple[int, ...], Any] = {(0,) * k_out: zero + 1}
    for v, count in enumerate(counts):
        for _ in range(int(count)):
            new: dict[tuple[int, ...], Any] = {}
            for h, w in dist.items():
                for u in range(k_out):
                    if mat[v, u] == 0:
                        continue
                    h2 = (*h[:u], h[u] + 1, *h[u + 1 :])
                    new[h2] = new.get(h2, zero) + w * mat[v, u]
            dist = new
    return dist


def reduced_product_channel(local: Channel, *, n: int) -> Channel:
    """The reduced channel ``N^r`` of ``local^{⊗n}`` on histograms (Def. 23, Lemma 30).

    Row ``h`` is the distribution of the output histogram for any dataset with histogram
    ``h`` (the notes' generating-function form, §2.6, computed by dynamic programming).
    """
    n = check_int("n", n, low=1)
    h_in = histograms(n=n, k=local.n_inputs)
    h_out = histograms(n=n, k=local.n_outputs)
    check_size(
        f"the reduced channel ({h_in.shape[0]} x {h_out.shape[0]})",
        h_in.shape[0] * h_out.shape[0],
        limit=1 << 22,
    )
    out_labels = [tuple(int(v) for v in h) for h in h_out]
    index = {h: j for j, h in enumerate(out_labels)}
    exact = local.exact
    mat: Any = np.empty((h_in.shape[0], h_out.shape[0]), dtype=object if exact else float)
    mat[...] = Fraction(0) if exact else 0.0
    for i, h in enumerate(h_in):
        for out, w in output_histogram_distribution(local.matrix, h.tolist()).items():
            mat[i, index[out]] = w
    return Channel(
        mat, inputs=[tuple(int(v) for v in h) for h in h_in], outputs=out_labels, atol=1e-7
    )


def shuffled_product_channel(local: Channel, *, n: int) -> Channel:
    """``local^{⊗n}`` followed by the reduced shuffle: datasets → output histograms.

    Works for any finite local randomizer (e.g. :func:`local_randomizer_channel` of a
    ``crowdhide.mechanisms`` object); rows are computed once per input histogram, so only the
    ``k_in^n × |H_out|`` result is built, never a ``k^n × k^n`` matrix.

    Parameters
    ----------
    local
        The local randomizer's channel (inputs: the values a user may hold).
    n
        The number of users.

    Returns
    -------
    Channel
        Datasets (rows) to output histograms (columns).

    See Also
    --------
    local_randomizer_channel : The channel of a ``crowdhide.mechanisms`` randomizer.
    shuffled_krr_channel : The k-RR case.
    """
    n = check_int("n", n, low=1)
    data = datasets(n=n, k=local.n_inputs)
    h_out = histograms(n=n, k=local.n_outputs)
    check_size(
        f"the shuffled product channel ({data.shape[0]} x {h_out.shape[0]})",
        data.shape[0] * h_out.shape[0],
    )
    out_labels = [tuple(int(v) for v in h) for h in h_out]
    index = {h: j for j, h in enumerate(out_labels)}
    exact = local.exact
    mat: Any = np.empty((data.shape[0], len(out_labels)), dtype=object if exact else float)
    mat[...] = Fraction(0) if exact else 0.0
    cache: dict[tuple[int, ...], dict[tuple[int, ...], Any]] = {}
    for i, h in enumerate(dataset_histograms(data, k=local.n_inputs)):
        key = tuple(int(v) for v in h)
        if key not in cache:
            cache[key] = output_histogram_distribution(local.matrix, list(key))
        for out, w in cache[key].items():
            mat[i, index[out]] = w
    inputs = [tuple(local.inputs[int(v)] for v in row) for row in data]
    return Channel(mat, inputs=inputs, outputs=out_labels, atol=1e-7)


def reduced_krr_channel(
    *, n: int, k: int, eps0: float | None = None, keep_probability: Any = None
) -> Channel:
    """The reduced k-RR channel ``N^r`` on histograms (Def. 23; Lemma 30 for k = 2).

    Rows and columns are histograms rather than datasets, so the channel has
    ``C(n + k − 1, k − 1)`` rows instead of ``k^n``; it takes the same arguments as
    :func:`krr_dataset_channel`.

    Parameters
    ----------
    n
        Users: every histogram counts n values.
    k
        Size of the value domain ``0..k−1``.
    eps0, keep_probability
        Exactly one of: the local ε0 of k-RR, or its keep probability p (give p as a
        ``Fraction`` for an exact channel).

    Returns
    -------
    Channel
        The channel between histograms of n values in ``0..k−1``.

    See Also
    --------
    krr_dataset_channel : The full channel on datasets.
    """
    return reduced_product_channel(
        krr_channel(k=k, eps0=eps0, keep_probability=keep_probability), n=n
    )


def shuffled_krr_channel(
    *,
    n: int,
    k: int,
    eps0: float | None = None,
    keep_probability: Any = None,
    order: str = "noise-first",
    reduced: bool = False,
) -> Channel:
    """k-RR and shuffle in cascade, as an explicit channel on datasets.

    Parameters
    ----------
    order
        ``"noise-first"`` (``NS``, the standard pipeline) or ``"shuffle-first"`` (``SN``).
    reduced
        Output histograms instead of datasets: ``N S^r`` (noise first) or ``S^r N^r``
        (shuffle first); Props. 12, 26 and 28 say all four forms are equivalent.
    n, k
        Users and values.

    eps0, keep_probability
        The k-RR noise: ε0, or the probability p of keeping the true value (a Fraction gives
        exact results); give one of them.

    Returns
    -------
    Channel
        The cascade, on datasets or (``reduced``) to histograms.

    See Also
    --------
    shuffled_product_channel : Any finite local randomizer, shuffled.
    crowdhide.qif.uninformed_vulnerability : The vulnerability without building the channel.
    """
    if order not in ORDERS:
        raise InvalidParameterError(f"order must be one of {ORDERS}, got {order!r}")
    exact = isinstance(keep_probability, Fraction)
    noise = krr_dataset_channel(n=n, k=k, eps0=eps0, keep_probability=keep_probability)
    if reduced:
        s_r = reduced_shuffle_channel(n=n, k=k, exact=exact)
        if order == "noise-first":
            return noise @ s_r
        return s_r @ reduced_krr_channel(n=n, k=k, eps0=eps0, keep_probability=keep_probability)
    s = shuffle_channel(n=n, k=k, exact=exact)
    return noise @ s if order == "noise-first" else s @ noise
