"""Core quantitative information flow (QIF): channels, priors, gain functions, vulnerability.

The definitions follow Section II-A of Jurado, Gonze, Alvim and Palamidessi, *Analyzing the
Shuffle Model through the Lens of Quantitative Information Flow* and the QIF book (Alvim
et al. 2020):

* a **channel** ``C`` is a row-stochastic matrix, ``C[x, y] = P(y | x)``;
* a **prior** ``π`` is a distribution on the secrets;
* the **joint** is ``J[x, y] = π[x] C[x, y]``; the **hyper-distribution** ``[π ▷ C]`` is the
  distribution (outer) on the posteriors (inners) it induces;
* a **gain function** ``g(w, x) >= 0`` scores guess ``w`` when the secret is ``x``;
* prior g-vulnerability ``V_g(π) = max_w Σ_x π_x g(w, x)`` (eq. 1); posterior
  g-vulnerability ``V_g[π ▷ C] = Σ_y max_w Σ_x π_x C_{x,y} g(w, x)`` (eq. 2);
* multiplicative leakage ``V_g[π ▷ C] / V_g(π)``, additive leakage ``V_g[π ▷ C] − V_g(π)``;
* (multiplicative) **Bayes capacity** ``Σ_y max_x C_{x,y}``: the largest multiplicative Bayes
  leakage over all priors (reached at the uniform prior), which also bounds multiplicative
  g-leakage for every non-negative ``g`` and every prior ("miracle" theorem);
* **cascade** ``(CD)[x, z] = Σ_y C[x, y] D[y, z]`` (Def. 3): post-processing never increases
  vulnerability (data-processing inequality, Thm 4).

Every object works either with floats (``numpy.float64`` matrices, tolerance ``atol`` on the
row sums) or **exactly** with :class:`fractions.Fraction` entries (``object`` arrays, exact row
sums): the exact mode is what the tests use to check closed forms on tiny instances.

Examples
--------
>>> from fractions import Fraction as Fr
>>> rr = Channel([[Fr(3, 4), Fr(1, 4)], [Fr(1, 4), Fr(3, 4)]], inputs=("a", "b"))
>>> pi = Prior.uniform(("a", "b"), exact=True)
>>> posterior_vulnerability(pi, rr)
Fraction(3, 4)
>>> multiplicative_leakage(pi, rr), bayes_capacity(rr)
(Fraction(3, 2), Fraction(3, 2))
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide.errors import InvalidParameterError, ParameterTypeError

__all__ = [
    "Channel",
    "Gain",
    "HyperDistribution",
    "Prior",
    "additive_leakage",
    "bayes_capacity",
    "cascade",
    "hyper",
    "joint",
    "multiplicative_leakage",
    "posterior_vulnerability",
    "prior_vulnerability",
    "refines",
]

Number = float | Fraction
Matrix = npt.NDArray[Any]

#: Default absolute tolerance on the row sums of float channels and priors.
DEFAULT_ATOL = 1e-9


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _as_array(name: str, values: Any, ndim: int) -> Matrix:
    """Convert ``values`` to a float64 array, or to an exact ``object`` array of Fractions.

    Exact mode is chosen when every entry is a :class:`numbers.Rational` (Python or numpy
    integers, ``Fraction``); any float entry makes the whole array float64.
    """
    if isinstance(values, np.ndarray) and values.dtype.kind == "f":
        arr: Matrix = values.astype(np.float64)
        return _check_array(name, arr, values, ndim)
    raw = np.asarray(values, dtype=object)
    flat = list(raw.ravel())
    if not flat:
        raise InvalidParameterError(f"{name} must not be empty, got {_describe(values)}")
    for entry in flat:
        if isinstance(entry, bool | np.bool_) or not isinstance(entry, numbers.Real):
            raise ParameterTypeError(f"{name} must hold real numbers, got entry {_describe(entry)}")
    if all(isinstance(e, numbers.Rational) for e in flat):
        exact = [Fraction(int(e)) if isinstance(e, numbers.Integral) else Fraction(e) for e in flat]
        arr = np.array(exact, dtype=object).reshape(raw.shape)
    else:
        arr = raw.astype(np.float64)
    return _check_array(name, arr, values, ndim)


def _check_array(name: str, arr: Matrix, values: Any, ndim: int) -> Matrix:
    if arr.ndim != ndim:
        raise InvalidParameterError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        raise InvalidParameterError(f"{name} must not be empty, got shape {arr.shape}")
    if arr.dtype != object and not np.all(np.isfinite(arr)):
        raise InvalidParameterError(f"{name} must be finite, got {_describe(values)}")
    if np.any(arr < 0):
        raise InvalidParameterError(f"{name} must be non-negative, got {_describe(values)}")
    return arr


def _is_exact(arr: Matrix) -> bool:
    return bool(arr.dtype == object)


def _check_sums_to_one(name: str, sums: Matrix, atol: float) -> None:
    if _is_exact(sums):
        bad = [i for i, s in enumerate(sums.ravel()) if s != 1]
    else:
        bad = list(np.flatnonzero(np.abs(sums.astype(np.float64) - 1.0) > atol))
    if bad:
        i = int(bad[0])
        total = sums.ravel()[i]
        shown = total if _is_exact(sums) else float(total)
        raise InvalidParameterError(
            f"{name} must sum to 1 (row-stochastic), row {i} sums to {_describe(shown)}"
        )


def _labels(name: str, labels: Sequence[Hashable] | None, size: int) -> tuple[Hashable, ...]:
    if labels is None:
        return tuple(range(size))
    result = tuple(labels)
    if len(result) != size:
        raise InvalidParameterError(f"{name} must have {size} labels, got {len(result)}")
    if len(set(result)) != len(result):
        raise InvalidParameterError(f"{name} must be distinct, got {_describe(result)}")
    return result


def _promote(a: Matrix, b: Matrix) -> tuple[Matrix, Matrix]:
    """Bring two arrays to a common arithmetic: exact only when both are exact."""
    if _is_exact(a) and _is_exact(b):
        return a, b
    return a.astype(np.float64), b.astype(np.float64)


@dataclass(frozen=True, eq=False)
class Prior:
    """A probability distribution on labelled secrets.

    Parameters
    ----------
    probabilities
        Non-negative weights summing to 1 (exactly for Fractions, within ``atol`` for floats).
    labels
        Secret labels (default ``0..n-1``); distinct.
    atol
        Tolerance of the sum for floats.

    See Also
    --------
    Channel : What a prior goes through.
    prior_vulnerability : The adversary's chance before observing.

    Examples
    --------
    >>> Prior([0.5, 0.5], labels=("a", "b")).probability("a")
    0.5
    >>> Prior([0.5, 0.6])
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: prior must sum to 1 (row-stochastic), row 0 sums to 1.1
    """

    probabilities: Matrix
    labels: tuple[Hashable, ...]

    def __init__(
        self,
        probabilities: Any,
        *,
        labels: Sequence[Hashable] | None = None,
        atol: float = DEFAULT_ATOL,
    ) -> None:
        probs = _as_array("prior", probabilities, 1)
        _check_sums_to_one("prior", np.array([probs.sum()], dtype=probs.dtype), atol)
        object.__setattr__(self, "probabilities", probs)
        object.__setattr__(self, "labels", _labels("prior labels", labels, probs.size))

    @classmethod
    def uniform(cls, labels: Sequence[Hashable], *, exact: bool = False) -> Prior:
        """The uniform prior on ``labels`` (Fractions when ``exact``)."""
        labels = tuple(labels)
        if not labels:
            raise InvalidParameterError("labels must not be empty, got ()")
        size = len(labels)
        probs: Any = [Fraction(1, size)] * size if exact else np.full(size, 1.0 / size)
        return cls(probs, labels=labels)

    @classmethod
    def point(cls, labels: Sequence[Hashable], secret: Hashable) -> Prior:
        """The point prior putting all mass on ``secret``."""
        labels = tuple(labels)
        if secret not in labels:
            raise InvalidParameterError(
                f"secret must be one of the labels, got {_describe(secret)}"
            )
        return cls([Fraction(int(lab == secret)) for lab in labels], labels=labels)

    @property
    def exact(self) -> bool:
        """Whether the probabilities are exact Fractions."""
        return _is_exact(self.probabilities)

    def probability(self, label: Hashable) -> Number:
        """The prior probability of ``label``."""
        value: Number = self.probabilities[self.labels.index(label)]
        return value if self.exact else float(value)


@dataclass(frozen=True, eq=False)
class Channel:
    """A channel: row-stochastic matrix ``C[x, y] = P(y | x)`` with labelled inputs/outputs.

    Parameters
    ----------
    matrix
        Non-negative 2-D array whose rows sum to 1 (exactly for Fractions, within ``atol``).
    inputs, outputs
        Distinct labels of the rows (secrets) and columns (observables); default ``0..``.
    atol
        Tolerance of the row sums for floats.

    See Also
    --------
    cascade : Composes two channels.
    hyper : The hyper-distribution of a prior through a channel.

    Examples
    --------
    >>> Channel([[1.0, 0.0], [0.5, 0.5]]).n_outputs
    2
    >>> Channel([[0.5, 0.4]])
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: channel must sum to 1 ... row 0 sums to 0.9
    >>> Channel([[1.5, -0.5]])
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: channel must be non-negative, got [[1.5, -0.5]]
    """

    matrix: Matrix
    inputs: tuple[Hashable, ...]
    outputs: tuple[Hashable, ...]

    def __init__(
        self,
        matrix: Any,
        *,
        inputs: Sequence[Hashable] | None = None,
        outputs: Sequence[Hashable] | None = None,
        atol: float = DEFAULT_ATOL,
    ) -> None:
        mat = _as_array("channel", matrix, 2)
        _check_sums_to_one("channel", mat.sum(axis=1), atol)
        object.__setattr__(self, "matrix", mat)
        object.__setattr__(self, "inputs", _labels("channel inputs", inputs, mat.shape[0]))
        object.__setattr__(self, "outputs", _labels("channel outputs", outputs, mat.shape[1]))

    @property
    def exact(self) -> bool:
        """Whether the entries are exact Fractions."""
        return _is_exact(self.matrix)

    @property
    def n_inputs(self) -> int:
        """Number of secrets (rows)."""
        return int(self.matrix.shape[0])

    @property
    def n_outputs(self) -> int:
        """Number of observables (columns)."""
        return int(self.matrix.shape[1])

    def cascade(self, other: Channel) -> Channel:
        """The cascade ``self · other`` (``other`` post-processes ``self``'s output)."""
        return cascade(self, other)

    def __matmul__(self, other: Channel) -> Channel:
        return cascade(self, other)

    def to_float(self) -> Channel:
        """This channel with float64 entries."""
        return Channel(self.matrix.astype(np.float64), inputs=self.inputs, outputs=self.outputs)

    def reduced(self) -> Channel:
        """An equivalent channel: zero columns dropped, proportional columns merged (summed).

        Equivalence means equal posterior g-vulnerability for every prior and gain function
        (Alvim et al. 2020). Output labels of merged columns become tuples of the original labels.
        Float columns are compared after normalisation, rounded to 12 decimals.
        """
        mat = self.matrix
        groups: dict[Any, list[int]] = {}
        for j in range(self.n_outputs):
            col = mat[:, j]
            total = col.sum()
            if total == 0:
                continue
            key: Any
            if self.exact:
                key = tuple(col / total)
            else:
                key = tuple(np.round(col.astype(np.float64) / float(total), 12))
            groups.setdefault(key, []).append(j)
        columns = [mat[:, idx].sum(axis=1) for idx in groups.values()]
        labels = [tuple(self.outputs[j] for j in idx) for idx in groups.values()]
        return Channel(np.stack(columns, axis=1), inputs=self.inputs, outputs=labels)

    def equals(self, other: Channel, *, atol: float = 1e-12) -> bool:
        """Entry-wise equality (exact for two exact channels) with the same labels."""
        if self.inputs != other.inputs or self.outputs != other.outputs:
            return False
        a, b = _promote(self.matrix, other.matrix)
        if _is_exact(a):
            return bool(np.all(a == b))
        return bool(np.allclose(a, b, rtol=0.0, atol=atol))


def cascade(first: Channel, second: Channel) -> Channel:
    """Cascade (Def. 3): ``(CD)[x, z] = Σ_y C[x, y] D[y, z]``.

    ``second``'s inputs must be ``first``'s outputs, in the same order.

    Parameters
    ----------
    first, second
        The channels C and D.

    Returns
    -------
    Channel
        ``CD``, inputs of ``first`` to outputs of ``second``.

    See Also
    --------
    refines : Whether a channel is a post-processing of another.

    Examples
    --------
    >>> from fractions import Fraction as Fr
    >>> half = Fr(1, 2)
    >>> c = Channel([[1, 0], [0, 1]], outputs=("u", "v"))
    >>> d = Channel([[half, half], [0, 1]], inputs=("u", "v"))
    >>> cascade(c, d).matrix.tolist()
    [[Fraction(1, 2), Fraction(1, 2)], [Fraction(0, 1), Fraction(1, 1)]]
    """
    if first.outputs != second.inputs:
        raise InvalidParameterError(
            "cascade needs the second channel's inputs to equal the first channel's outputs "
            f"(got {first.n_outputs} outputs vs {second.n_inputs} inputs, or different labels)"
        )
    a, b = _promote(first.matrix, second.matrix)
    product = a @ b
    return Channel(product, inputs=first.inputs, outputs=second.outputs, atol=1e-7)


@dataclass(frozen=True, eq=False)
class Gain:
    """A gain function ``g(w, x) >= 0`` as a matrix: rows = actions ``w``, columns = secrets.

    Parameters
    ----------
    matrix
        Non-negative finite gains (exact Fractions/ints or floats). Negative gains are refused:
        shift ``g`` by a constant (or add an all-zero action) to make it non-negative.
    actions, secrets
        Labels of the rows and of the columns.

    See Also
    --------
    posterior_vulnerability : Uses it; ``gain=None`` is the identity gain (Bayes).
    """

    matrix: Matrix
    actions: tuple[Hashable, ...]
    secrets: tuple[Hashable, ...]

    def __init__(
        self,
        matrix: Any,
        *,
        actions: Sequence[Hashable] | None = None,
        secrets: Sequence[Hashable] | None = None,
    ) -> None:
        arr = _as_array("gain", matrix, 2)
        object.__setattr__(self, "matrix", arr)
        object.__setattr__(self, "actions", _labels("gain actions", actions, arr.shape[0]))
        object.__setattr__(self, "secrets", _labels("gain secrets", secrets, arr.shape[1]))

    @classmethod
    def identity(cls, secrets: Sequence[Hashable]) -> Gain:
        """Bayes gain ``g_id(w, x) = [w = x]``: its vulnerability is Bayes vulnerability."""
        secrets = tuple(secrets)
        size = len(secrets)
        return cls(np.eye(size, dtype=np.int64).tolist(), actions=secrets, secrets=secrets)

    @classmethod
    def from_function(
        cls,
        secrets: Sequence[Hashable],
        actions: Sequence[Hashable],
        function: Callable[[Hashable, Hashable], Any],
    ) -> Gain:
        """A user-defined gain ``g(w, x) = function(w, x)``."""
        secrets, actions = tuple(secrets), tuple(actions)
        rows = [[function(w, x) for x in secrets] for w in actions]
        return cls(rows, actions=actions, secrets=secrets)

    @classmethod
    def single_target(
        cls,
        datasets: Sequence[Sequence[Hashable]],
        *,
        target: int = 0,
        values: Sequence[Hashable] | None = None,
    ) -> Gain:
        """Single-target gain (Def. 13): guess individual ``target``'s value.

        ``g(w, x) = 1`` if ``w = x[target]`` else 0, with actions = the possible ``values``
        (default: the values found at position ``target``, sorted). This is *not* the identity
        gain on whole datasets.
        """
        datasets = tuple(tuple(x) for x in datasets)
        if not datasets:
            raise InvalidParameterError("datasets must not be empty, got ()")
        width = len(datasets[0])
        if not 0 <= target < width:
            raise InvalidParameterError(f"target must be in [0, {width - 1}], got {target!r}")
        seen: set[Any] = {x[target] for x in datasets}
        try:
            found: list[Any] = sorted(seen)
        except TypeError:  # unorderable labels: any fixed order will do
            found = sorted(seen, key=repr)
        actions = tuple(values) if values is not None else tuple(found)

        def gain(w: Hashable, x: Hashable) -> int:
            return int(w == x[target])  # type: ignore[index]

        return cls.from_function(datasets, actions, gain)


def _check_prior_channel(prior: Prior, channel: Channel) -> None:
    if prior.labels != channel.inputs:
        raise InvalidParameterError(
            "prior labels must equal the channel's inputs, in the same order "
            f"(got {len(prior.labels)} prior labels vs {channel.n_inputs} inputs)"
        )


def _gain_matrix(gain: Gain | None, labels: tuple[Hashable, ...]) -> Matrix | None:
    if gain is None:
        return None
    if gain.secrets != labels:
        raise InvalidParameterError(
            "gain secrets must equal the prior's labels, in the same order "
            f"(got {len(gain.secrets)} vs {len(labels)})"
        )
    return gain.matrix


def _result(value: Any, exact: bool) -> Number:
    return Fraction(value) if exact else float(value)


def joint(prior: Prior, channel: Channel) -> Matrix:
    """The joint matrix ``J[x, y] = π_x C[x, y]``.

    Parameters
    ----------
    prior
        The prior π.
    channel
        The channel C.

    Returns
    -------
    Matrix
        ``J`` with the channel's shape.

    See Also
    --------
    hyper : The posteriors obtained from the joint matrix.
    """
    _check_prior_channel(prior, channel)
    pi, mat = _promote(prior.probabilities, channel.matrix)
    return pi[:, None] * mat


def prior_vulnerability(prior: Prior, gain: Gain | None = None) -> Number:
    """Prior g-vulnerability ``V_g(π) = max_w Σ_x π_x g(w, x)`` (eq. 1); Bayes if ``gain=None``.

    Parameters
    ----------
    prior
        The prior π.
    gain
        The gain function g (``None``: Bayes vulnerability ``max_x π_x``).

    Returns
    -------
    float or Fraction
        ``V_g(π)``, exact for Fractions.

    See Also
    --------
    posterior_vulnerability : After observing a channel.

    Examples
    --------
    >>> prior_vulnerability(Prior([0.25, 0.75]))
    0.75
    """
    g = _gain_matrix(gain, prior.labels)
    pi = prior.probabilities
    if g is None:
        return _result(pi.max(), prior.exact)
    g, pi = _promote(g, pi)
    return _result((g @ pi).max(), _is_exact(g))


def posterior_vulnerability(prior: Prior, channel: Channel, gain: Gain | None = None) -> Number:
    """Posterior g-vulnerability ``V_g[π ▷ C] = Σ_y max_w Σ_x π_x C_{x,y} g(w, x)`` (eq. 2).

    With ``gain=None`` this is posterior Bayes vulnerability ``Σ_y max_x π_x C_{x,y}``.

    Parameters
    ----------
    prior
        The adversary's prior π on the secrets.
    channel
        The channel C (its inputs are the prior's labels).
    gain
        The gain function g (``None``: the identity gain, Bayes vulnerability).

    Returns
    -------
    float or Fraction
        ``V_g[π ▷ C]``, exact for Fractions.

    See Also
    --------
    prior_vulnerability : Before observing the channel.
    """
    j = joint(prior, channel)
    g = _gain_matrix(gain, prior.labels)
    if g is None:
        return _result(j.max(axis=0).sum(), _is_exact(j))
    g, j = _promote(g, j)
    return _result((g @ j).max(axis=0).sum(), _is_exact(g))


def multiplicative_leakage(prior: Prior, channel: Channel, gain: Gain | None = None) -> Number:
    """Multiplicative g-leakage ``V_g[π ▷ C] / V_g(π)``; needs ``V_g(π) > 0``.

    Parameters
    ----------
    prior
        The adversary's prior π on the secrets.
    channel
        The channel C (its inputs are the prior's labels).
    gain
        The gain function g (``None``: the identity gain, Bayes vulnerability).

    Returns
    -------
    float or Fraction
        ``V_g[π ▷ C] / V_g(π)``, exact for Fractions.

    See Also
    --------
    additive_leakage : The difference instead of the ratio.
    bayes_capacity : Its maximum over priors for the identity gain.
    """
    before = prior_vulnerability(prior, gain)
    if before == 0:
        raise InvalidParameterError(
            "multiplicative leakage needs a positive prior vulnerability, got 0"
        )
    return posterior_vulnerability(prior, channel, gain) / before


def additive_leakage(prior: Prior, channel: Channel, gain: Gain | None = None) -> Number:
    """Additive g-leakage ``V_g[π ▷ C] − V_g(π)``.

    Parameters
    ----------
    prior
        The adversary's prior π on the secrets.
    channel
        The channel C (its inputs are the prior's labels).
    gain
        The gain function g (``None``: the identity gain, Bayes vulnerability).

    Returns
    -------
    float or Fraction
        ``V_g[π ▷ C] − V_g(π)``, exact for Fractions.

    See Also
    --------
    multiplicative_leakage : The ratio instead of the difference.
    """
    return posterior_vulnerability(prior, channel, gain) - prior_vulnerability(prior, gain)


def bayes_capacity(channel: Channel) -> Number:
    """Multiplicative Bayes capacity ``ML(C) = Σ_y max_x C[x, y]`` (max over all priors).

    Parameters
    ----------
    channel
        The channel C.

    Returns
    -------
    float or Fraction
        ``Σ_y max_x C[x, y]``, exact for Fractions.

    See Also
    --------
    multiplicative_leakage : The leakage at one prior.

    Examples
    --------
    >>> bayes_capacity(Channel([[1.0, 0.0], [0.0, 1.0]]))
    2.0
    """
    return _result(channel.matrix.max(axis=0).sum(), channel.exact)


@dataclass(frozen=True, eq=False)
class HyperDistribution:
    """The hyper-distribution ``[π ▷ C]``: outer distribution on distinct posteriors.

    Parameters
    ----------
    outer
        Probability of each posterior (outputs with equal posteriors merged, zero-probability
        outputs dropped).
    inners
        Matrix ``secrets × posteriors``; column ``i`` is the ``i``-th posterior.
    outputs
        For each posterior, the tuple of channel outputs that produce it.
    labels
        Secret labels (rows of ``inners``).

    See Also
    --------
    hyper : Builds it.
    """

    outer: Matrix
    inners: Matrix
    outputs: tuple[tuple[Hashable, ...], ...]
    labels: tuple[Hashable, ...]

    def posterior_vulnerability(self, gain: Gain | None = None) -> Number:
        """``Σ_i outer_i V_g(inner_i)``: equals :func:`posterior_vulnerability`."""
        g = _gain_matrix(gain, self.labels)
        inners = self.inners
        if g is None:
            per = inners.max(axis=0)
        else:
            g, inners = _promote(g, inners)
            per = (g @ inners).max(axis=0)
        outer, per = _promote(self.outer, per)
        return _result((outer * per).sum(), _is_exact(outer))


def hyper(prior: Prior, channel: Channel) -> HyperDistribution:
    """The hyper-distribution ``[π ▷ C]`` (outer ``p(y)``, inners ``π_x C_{x,y} / p(y)``).

    Outputs giving the same posterior are merged (their outer probabilities add); float
    posteriors are compared after rounding to 12 decimals.

    Parameters
    ----------
    prior
        The prior π.
    channel
        The channel C.

    Returns
    -------
    HyperDistribution
        The distinct posteriors and their probabilities.

    See Also
    --------
    posterior_vulnerability : Computed directly, without the hyper-distribution.
    """
    j = joint(prior, channel)
    exact = _is_exact(j)
    outer = j.sum(axis=0)
    groups: dict[Any, list[int]] = {}
    for y in range(j.shape[1]):
        if outer[y] == 0:
            continue
        post = j[:, y] / outer[y]
        key = tuple(post) if exact else tuple(np.round(post.astype(np.float64), 12))
        groups.setdefault(key, []).append(y)
    outers = [outer[idx].sum() for idx in groups.values()]
    inners = [j[:, idx].sum(axis=1) / outer[idx].sum() for idx in groups.values()]
    dtype: Any = object if exact else np.float64
    return HyperDistribution(
        outer=np.array(outers, dtype=dtype),
        inners=np.stack(inners, axis=1).astype(dtype),
        outputs=tuple(tuple(channel.outputs[y] for y in idx) for idx in groups.values()),
        labels=prior.labels,
    )


def refines(first: Channel, second: Channel, *, atol: float = 1e-9) -> bool:
    """Whether ``second`` refines ``first`` (``first ⊑ second``): ``second = first · R``.

    By Thm 4 of Jurado et al. (refinement characterization), this holds iff ``second`` leaks no
    more than ``first`` for every prior and every gain function. Decided by a feasibility
    linear program for a row-stochastic ``R`` (``scipy.optimize.linprog``, floats, equality
    within ``atol``).

    Parameters
    ----------
    first, second
        The two channels, with the same inputs.
    atol
        Tolerance of the linear program's equalities.

    Returns
    -------
    bool
        True when a row-stochastic R with ``second = first · R`` exists.

    See Also
    --------
    cascade : ``first · R`` for a given R.

    Examples
    --------
    >>> noisy = Channel([[0.75, 0.25], [0.25, 0.75]])
    >>> perfect = Channel([[1.0, 0.0], [0.0, 1.0]])
    >>> refines(perfect, noisy), refines(noisy, perfect)
    (True, False)
    """
    from scipy.optimize import linprog

    if first.inputs != second.inputs:
        raise InvalidParameterError(
            "refines needs two channels on the same inputs, in the same order"
        )
    c = first.matrix.astype(np.float64)
    d = second.matrix.astype(np.float64)
    ny, nz = c.shape[1], d.shape[1]
    # Unknowns: R flattened row-major (ny × nz). Constraints: C R = D and R 1 = 1.
    a_flow = np.kron(c, np.eye(nz))  # (nx·nz) × (ny·nz)
    a_rows = np.kron(np.eye(ny), np.ones((1, nz)))
    a_eq = np.vstack([a_flow, a_rows])
    b_eq = np.concatenate([d.ravel(), np.ones(ny)])
    # Minimise the total slack of |C R − D| to tolerate round-off: write C R − D = s⁺ − s⁻.
    n_flow = a_flow.shape[0]
    slack = np.vstack([np.hstack([np.eye(n_flow), -np.eye(n_flow)]), np.zeros((ny, 2 * n_flow))])
    result = linprog(
        c=np.concatenate([np.zeros(ny * nz), np.ones(2 * n_flow)]),
        A_eq=np.hstack([a_eq, -slack]),
        b_eq=b_eq,
        bounds=(0, None),
        method="highs",
    )
    return bool(result.status == 0 and result.fun <= atol * max(1, n_flow))
