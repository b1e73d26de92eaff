"""The one cost model of the countermeasures: messages, overhead, channels, consents.

Costs follow Sections II-E, III-C and IV-D of Ladjel, Anciaux, Bellet and Scerri (corrected
forms), per data route with S senders and T targets:

* messages: unprotected ``S``; local flooding ``S(d+1)``; scramblers ``S + S + ⌈S/n⌉·d``
  (source→scrambler, then the n forwarded messages and d dummies of each scrambler);
* **overhead = messages of the protected route / messages of the unprotected route** (>= 1),
  the meaning of ``max_overhead`` everywhere (plan files, ``scrambler calibrate``);
* channels: a scrambler opens ``n + T`` channels, a flooding source ``d + 1``; a target
  receives from ``⌈S/n⌉`` scramblers (``S`` sources when unprotected or flooding);
* utility: real tuples used ``S(1−σ+σ/T)`` in expectation (footnote 5, convention U), so
  keeping S real contributions takes ``S/(1−σ+σ/T) − S`` extra consents (the paper's
  ``S/(1−σ)`` ignores the σ/T term);
* load at fixed utility: messages per unprotected message when enough extra users join to
  keep S real contributions, ``messages / (S(1−σ+σ/T))`` — what calibration minimises.

:class:`Constraints` are the limits a calibration must respect; :func:`cost_rank` orders
configurations (least load at fixed utility, then fewest consents, then fewest channels).

Examples
--------
>>> c = route_costs(sources=10_000, targets=20, sigma=0.1, n=100, dummies=50)
>>> c.messages, c.scramblers, c.channels_per_scrambler, round(c.overhead, 2)
(25000, 100, 120, 2.5)
>>> Constraints(max_overhead=3.0).fits(c)
True
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

from crowdhide._validation import check_int, check_probability, check_real

__all__ = ["Constraints", "RouteCosts", "cost_rank", "route_costs"]

Scheme = Literal["unprotected", "local", "scrambler"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RouteCosts:
    """Costs of one data route (see the module docstring).

    Attributes
    ----------
    scheme
        ``"unprotected"``, ``"local"`` (sampling + local flooding) or ``"scrambler"``.
    messages, unprotected_messages, added_messages, overhead
        Messages of the route, of the same route unprotected (S), their difference, and
        the overhead ``messages / unprotected_messages`` (>= 1).
    scramblers
        ``⌈S/n⌉`` (0 without scramblers).
    channels_per_scrambler, channels_per_source, channels_per_target
        Secure channels per node (individual load).
    real_fraction, expected_used
        ``1 − σ + σ/T`` (probability that a real tuple reaches its target) and ``S`` times it.
    extra_consents, extra_consents_relative
        Extra users needed to keep S real contributions, absolute and as a fraction of S.
    load_at_fixed_utility
        ``messages / (S · real_fraction)``.
    """

    scheme: Scheme
    messages: int
    unprotected_messages: int
    added_messages: int
    overhead: float
    scramblers: int
    channels_per_scrambler: int
    channels_per_source: int
    channels_per_target: int
    real_fraction: float
    expected_used: float
    extra_consents: int
    extra_consents_relative: float
    load_at_fixed_utility: float

    @property
    def device_channels(self) -> int:
        """Channels of the busiest device running a countermeasure (scrambler or source):
        what ``max_channels`` limits."""
        return max(self.channels_per_scrambler, self.channels_per_source)

    def to_dict(self) -> dict[str, Any]:
        """Plain record."""
        return asdict(self)


def route_costs(
    *,
    sources: int,
    targets: int,
    sigma: float = 0.0,
    n: int | None = None,
    dummies: int = 0,
    local_dummies: int = 0,
) -> RouteCosts:
    """Costs of a data route with S senders and T targets under the countermeasures.

    Parameters
    ----------
    sources, targets
        S senders and T targets.
    sigma
        Sampling rate σ in [0, 1) (convention U).
    n
        Sources per scrambler (``None``: no scramblers).
    dummies
        Dummies per scrambler.
    local_dummies
        Flooding dummies per source (``<= T − 1``; without scramblers only).

    Examples
    --------
    >>> c = route_costs(sources=1000, targets=20, sigma=0.5, local_dummies=3)
    >>> c.scheme, c.messages, c.overhead, c.channels_per_source
    ('local', 4000, 4.0, 4)
    """
    S = check_int("sources", sources, low=1)
    T = check_int("targets", targets, low=1)
    s = check_probability("sigma", sigma, allow_one=False)
    d = check_int("dummies", dummies, low=0)
    dl = check_int("local_dummies", local_dummies, low=0, high=T - 1)
    keep = 1.0 - s + s / T
    scheme: Scheme
    if n is None:
        scheme = "local" if (s > 0.0 or dl > 0) else "unprotected"
        messages, scramblers, per_scrambler, per_target = S * (dl + 1), 0, 0, S
    else:
        size = check_int("n", n, low=1)
        scheme = "scrambler"
        scramblers = -(-S // size)
        messages = 2 * S + scramblers * d
        per_scrambler, per_target = min(size, S) + T, scramblers
    extra = math.ceil(S / keep - 1e-9) - S
    return RouteCosts(
        scheme=scheme,
        messages=messages,
        unprotected_messages=S,
        added_messages=messages - S,
        overhead=messages / S,
        scramblers=scramblers,
        channels_per_scrambler=per_scrambler,
        channels_per_source=dl + 1 if n is None else 1,
        channels_per_target=per_target,
        real_fraction=keep,
        expected_used=S * keep,
        extra_consents=extra,
        extra_consents_relative=extra / S,
        load_at_fixed_utility=messages / keep / S,
    )


@dataclass(frozen=True)
class Constraints:
    """Limits on the costs of a route (``None`` = no limit).

    Parameters
    ----------
    max_channels
        Secure channels per device running a countermeasure (a scrambler opens n + T, a
        flooding source d + 1).
    max_overhead
        Messages of a protected route / messages of the unprotected route (>= 1).
    max_consents
        Extra consents needed to keep the utility, as a fraction of S (e.g. 0.25).

    Examples
    --------
    >>> Constraints(max_overhead=0.5)
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: constraints.max_overhead must be >= 1.0, got 0.5
    """

    max_channels: int | None = None
    max_overhead: float | None = None
    max_consents: float | None = None

    def __post_init__(self) -> None:
        if self.max_channels is not None:
            object.__setattr__(
                self,
                "max_channels",
                check_int("constraints.max_channels", self.max_channels, low=1),
            )
        if self.max_overhead is not None:
            object.__setattr__(
                self,
                "max_overhead",
                check_real("constraints.max_overhead", self.max_overhead, low=1.0),
            )
        if self.max_consents is not None:
            object.__setattr__(
                self,
                "max_consents",
                check_real("constraints.max_consents", self.max_consents, low=0.0),
            )

    def fits(self, costs: RouteCosts) -> bool:
        """Whether ``costs`` respects every limit."""
        if self.max_overhead is not None and costs.overhead > self.max_overhead + 1e-12:
            return False
        if (
            self.max_consents is not None
            and costs.extra_consents_relative > self.max_consents + 1e-9
        ):
            return False
        return self.max_channels is None or costs.device_channels <= self.max_channels

    def to_dict(self) -> dict[str, Any]:
        """Plain record."""
        return asdict(self)


def cost_rank(costs: RouteCosts) -> tuple[float, float, float]:
    """Order of preference: least load at fixed utility, fewest consents, fewest channels."""
    return (round(costs.load_at_fixed_utility, 9), costs.extra_consents, costs.device_channels)
