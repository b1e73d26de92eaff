"""Mechanism-specific shuffle certificates through a three-point reduction.

For a neighbouring pair (x, x') of the target write ``P0, P1`` for its two report laws,
``π = (P0 + P1)/2`` and ``D = (P0 − P1)/(P0 + P1)``. Three numbers describe what a shuffle
certificate needs to know about a randomizer (the analogue of the variation-ratio triple of
Wang et al., VLDB 2024, in the form this derivation needs):

``κ = tanh(ε0/2)``
    the largest possible ``|D|`` of an ε0-LDP randomizer (likelihood ratio ``e^{ε0}``);
``mu2``
    ``β/κ`` with ``β = TV(P0, P1)`` the worst total variation over pairs; for a
    three-valued loss ``D ∈ {−κ, 0, +κ}`` it is ``π(D ≠ 0)``, the probability that a
    report is informative;
``rho``
    the clone probability ``2r``, ``r = inf R(v)(y) / (P0(y) + P1(y))`` over every input v of
    another user, every pair and every report y (the "blanket ratio"; densities for
    continuous reports).

**Reduction to three points.** Let Q be the three-point pair on {+, 0, −} with
``π_Q(±) = μ/2``, ``π_Q(0) = 1 − μ``, ``Q_b(±) = (μ/2)(1 ± κ)`` (signs swapped for b = 1) and
``μ = β/κ`` (``β <= κ`` holds for every ε0-LDP pair). Any ε0-LDP pair (P0, P1) with total
variation β is a garbling of Q: the kernel ``K(+) = (2/β)(πD)_+``, ``K(−) = (2/β)(πD)_−``,
``K(0) = π (1 − |D|/κ)/(1 − μ)`` consists of probability laws (``|D| <= κ`` makes the last
one non-negative; ``∫(πD)_± = β/2``) and maps ``Q_b`` to ``π(1 ± D) = P_b`` and ``π_Q`` to
π. (Equivalently: the tradeoff function of Q is ``max(0, 1 − e^{ε0}α, e^{−ε0}(1 − α),
1 − β − α)``, which lower-bounds that of every such P.) Moreover the pair Q with a smaller
μ is a garbling of the pair with a larger one (send ± to 0 with the right probability).

**Certificate.** Every other user's law is ``2r · π + (1 − 2r) W_v`` with ``W_v >= 0``
(definition of r; a smaller r keeps this true). Revealing who is a clone and the residual
reports (independent of the target's value) can only help the adversary. The target and the
clones then report ``P_b`` and π, that is K applied report by report to the target and
clones of the Q system — and a multiset of reports each passed through K is a
post-processing of the multiset before K. So δ(ε) is at most that of the Q system: given C
clones (``m = C + 1`` units) and a, b the counts of ``+`` and ``−`` reports, the likelihood
ratio is ``(m + κ(a − b))/(m − κ(a − b))`` — the ``krr_clone`` structure, evaluated by
:func:`crowdhide.accounting.shuffle._krr_fast.clone_noise_log_delta` (blocked, O(1) in n). δ is
non-decreasing in μ and non-increasing in rho (garbling, fewer clones), so the worst β and
the smallest r over all pairs give one certificate for all; when both vary with the pair
(Laplace) the pairs are split into cells, each bounded by (its largest β, its smallest r),
and the certificate is the largest over cells. With ``mu2 = 1`` and ``rho = e^{−ε0}``
(true for every ε0-LDP randomizer: ``R(v) >= e^{−ε0} max(P0, P1)``) the Q system is
exactly the clone pair of Feldman, McMillan, Talwar (FOCS 2021), the generic
``feldman2021`` certificate: the reduction gains nothing without mechanism knowledge.

**Split clone system (tighter).** Clones need not report from π. With ``A = K(+)``,
``B = K(−)``, ``M = K(0)`` as above, any ``R(v) >= γ_+ (A + B) + γ_0 M`` (for all v) lets
each other user be an informative clone (a Q-space ``±`` coin, mapped by K) with probability
``c_inf = 2γ_+``, an uninformative one (Q-space ``0``) with probability ``c_zero = γ_0``, and
a residual otherwise; the post-processing argument is unchanged. For a three-valued loss
``A + B = |P0 − P1|/β`` lives on informative reports and ``M = π/(1 − μ)`` on uninformative
ones, so the two constraints separate:

    c_inf = 2β · inf R(v)(y)/|P0(y) − P1(y)|   (informative y),
    c_zero = (1 − μ) · inf R(v)(y)/π(y)        (uninformative y).

At an informative y of the mechanisms here the two densities are e and 1 times a common
factor that bounds every other input's density from below, so ``c_inf = 2β/(e − 1)``
(Hadamard, OUE: 1/(e+1); RAPPOR: 2/(t+1)²; k-RR: 2/(e+d−1)); the uninformative ratio is
1/e where a report can be likely under x and x' but not under v (OUE, RAPPOR, k-subset with
k >= 2, local hashing, Hadamard with d >= 4) and 1 otherwise. The one-rate system is the case
``γ_+ : γ_0 = μ/2 : (1 − μ)``; both certify, the smaller counts. More clones of either
kind are a post-processing (the adversary can turn residual users into fresh clones), so
when both split rates are at least the one-rate system's — always, for the exact infima
above — the split system alone is evaluated. It is evaluated by
:func:`crowdhide.accounting.shuffle._split_clone.split_clone_log_delta` (blocked, O(1) in n). It
needs the same parameters for every pair, so the piecewise mechanism and Laplace (whose
pairs differ) cannot use it with their own rates.

**Revealed-class split system (tighter where n e^{−ε0} is small).** One infimum over all
uninformative reports makes every one of them pay the worst ratio (1/e at OUE's bits
(x, x') = (1, 1)), although most (bits (0, 0)) have ratio 1 for every input. Split them: a
hidden class H (ratio >= 1 for every v) and a revealed rest of mass w under π. Clones of
kind ``0H`` come at rate ``γ = π(H)``; none shows the rest, so the target's rest is seen
for what it is, with probability w under both hypotheses, and tells nothing. Hence
``δ <= (1 − w) δ_split(n, κ, μ/(1 − w), c_inf, γ)`` (``reveal`` constants of
:mod:`crowdhide.accounting.shuffle.randomizers`: OUE, RAPPOR, k-subset, OLH, Hadamard with
d >= 4). Both systems certify; the smaller counts at every ε. Derivation, constants and
evidence: ``docs/proofs/mechanism-certificates.md`` (which also shows why Wang et al.'s
bounds for these mechanisms, which hide the target's uninformative report among *all*
non-clones, fall below the exact δ).

**Restricted variation ratio.** Every ε0-LDP randomizer has the split rates
``c_inf = 2μ/(e+1)``, ``c_zero = (1 − μ)/e`` at its pair's μ, and the generic certificate
of :mod:`crowdhide.accounting.shuffle.variation_ratio` takes the supremum over μ in cells.
Restricted to ``μ <= mu2`` it certifies a mechanism whose pairs differ in μ
(``variation_capped``). For the piecewise mechanism these rates are the mechanism's own
(informative reports: densities p and p/e, every other input at least p/e; uninformative
ones: both at p, every other input at least p/e), so this is its split certificate; the
one-rate system is kept beside it and the smaller counts. (For Laplace its twelve one-rate
cells, with blanket ratios up to ``1/(e+1)``, are smaller at every size measured, so it is
not restricted.)

**Lower bound.** One explicit dataset: all other users on one value z, sign-symmetric for
the pair; the counts of reports in two regions (``+``, where the target's report has
likelihood ratio > 1, and its mirror ``−``) are a post-processing of the output, and their
law is the α-pair mixture of
:func:`crowdhide.accounting.shuffle._krr_fast.third_marginal_lower_log_delta` with the target's
probabilities ``P0(+)``, ``P0(−)`` and the others' ``R(z)(+ or −)``. Where several such
configurations exist the largest lower bound counts. It needs a third value z (d >= 3);
k-RR with d = 2 is binary RR and uses "all others on x'" instead
(:func:`crowdhide.accounting.shuffle._krr_fast.binary_same_lower_log_delta`).

A second family needs no third value: all other users on x', and the count of reports in
one region R where the target's report is likely under x and unlikely under x'
(``same_regions``: ``(P_x(R), P_x'(R), P_x(not R))``, the last computed without
cancellation). Exchangeability makes its law exact
in closed form (:func:`crowdhide.accounting.shuffle._krr_fast.same_value_lower_log_delta`). At
ε0 = 4 it is the larger one for RAPPOR, k-subset, local hashing and Laplace, by 2–3× in ε:
an observer learns most when the others' reports almost never land where the target's
would. Regions (e = e^{ε0}, t = e^{ε0/2}, f = 1/(e+1)):

* ``oue``: bit x set, bit x' unset: ``((1 − f)/2, f/2)``;
* ``rappor``: the same bits: ``((t/(t+1))², (1/(t+1))²)``;
* ``subset``: S holds x but not x': ``C(d−2, k−1) (e, 1)/Z``;
* ``olh``: ``h(x) ≠ h(x')`` and the report is ``h(x)``: ``(1 − 1/g) (e, 1)/(e + g − 1)``;
* ``laplace``: pair (−1, 1), ``y < −c`` for ``c ∈ {1/4, 1/2, 3/4, 0.8, 0.85, 0.9, 0.95, 1}``
  and the c of largest large-n signal ``(p − q)²/(q(1 − q))`` (0.42 at ε0 = 1, 0.9 at
  ε0 = 8): ``(1 − e^{(c−1)/b}/2, e^{−(1+c)/b}/2)``, b = 2/ε0.

(k-RR, Hadamard response and the piecewise mechanism have none: measured, the third-value
datasets are larger for them at every size.)

**Refined third-value regions.** Where a third value z leaves a mark of its own on its
users' reports (the bit of z in the unary encodings, z in the subset, a report equal to
h(z) in local hashing), the regions ``±`` can
require that mark to be absent: ``+`` = "looks like x, not like x', not like z". The target
rarely shows z's mark and the others often do, so far fewer of the others' reports fall in
the regions, at the price of a factor on the target's. Given the region, every other
coordinate has the same law for the target and for a z-user, so nothing else is left to
condition on. The counts keep the structure of
:func:`crowdhide.accounting.shuffle._krr_fast.third_marginal_lower_log_delta` (the others' ``±`` are
symmetric under the swap of x and x'), with, for ``d >= 3``:

* ``oue``: ``(P0(+), P0(−), ν) = ((1 − f)²/2, f(1 − f)/2, f(1 − f))``, f = 1/(e+1);
* ``rappor``: ``(u³, u w², 2u w²)`` with u = t/(t+1), w = 1/(t+1) (bits kept or flipped);
* ``subset``: ``C(d−3, k−1) (e, 1, 2)/Z`` (S holds x, not x', not z; needs d − 3 >= k − 1);
* ``olh``: ``(1 − 1/g)² (e, 1, 2)/(e + g − 1)`` (the report is h(x), neither h(x') nor h(z);
  hash values of distinct inputs independent and uniform, as the third-value member above
  already assumes).

At ε0 = 4 and n >= 1e5 they bring OUE to 1.01×, RAPPOR to 1.07×, local hashing to 1.08×
and k-subset to 1.14× of the certificate (from 1.41–1.45×); at ε0 = 0.5 the plain regions
stay the larger, and both are kept.

For k-subset and local hashing a third member sees the same dataset with its full weights
(:mod:`crowdhide.accounting.shuffle._mechanism_lower`: Jensen on the counts of the three
weight-e classes, the rest at its conditional mean; docs/proofs/mechanism-certificates.md,
section 1e): at ε0 = 8, n = 1e4, δ = 1e-6 it raises 2.67 → 3.23 (OLH), 2.18 → 2.71 (k-subset).

**Where the remaining gap lies.** At large n the ε of a dataset at fixed δ scales as
``1/sqrt(S)`` with the signal ``S = Σ_y (P_x(y) − P_x'(y))²/P_z(y)`` of "all others on z"
seen through its full likelihood, and the certificate's as ``1/sqrt(S_cert)``,
``S_cert = 2β(e^{ε0} − 1)`` for the split system (``4βκ/ρ`` one-rate). The ratio
``sqrt(S_cert / max S)`` over pairs and z (z = x' included; ``proxy_floor`` in
``benchmarks/bench_shuffle.py``) is what no single-value dataset can beat, whatever its
projection: 1 for k-RR and Hadamard; at ε0 = 0.5/1/2/4/8 (the benchmark's domains) OUE
1.08/1.10/1.06/1.01/1.00, RAPPOR 1.10/1.15/1.14/1.06/1.01, k-subset (k = 4 of 16)
1.05/1.08/1.11/1.13/1.13, OLH (g = 8) 1.03/1.04/1.06/1.07/1.07, piecewise 1.08/1.06/1/1/1,
Laplace 1.14/1.26/1.44/1.62/1.72. Mixing in users on x and x' lowers the others' variance
but, measured for OUE, RAPPOR, k-subset and OLH, never raises the signal-to-noise ratio
above the single third value's; unless a dataset of another shape does, the certificate
is the loose side there: its blanket ratio is an infimum over v taken report by report (for
k-subset, ``R(v)(S) = 1`` on sets with x but not v, while a user on z puts e on the sets
holding z), and for Laplace the three-point reduction puts all of a pair's evidence at
``|D| = κ``. The rest of each measured ratio is the lower bound's projection: the region
counts merge reports whose likelihood ratios to ``P_z`` differ (weights e and 1 for the
reports with and without z's mark), worth up to 1.11× in ε at ε0 <= 1 and under 1.03× at
ε0 >= 2; a two-weight count has no exact O(1) law here.

Parameters per mechanism (ε0, domain size d; e = e^{ε0}, t = e^{ε0/2}) — each checked by
brute force in ``tests/accounting/test_shuffle_mechanisms.py``:

``krr`` (k-ary randomized response, k = d)
    informative reports: y ∈ {x, x'}; ``mu2 = (e+1)/(e+d−1)``; the binding blanket ratio is
    at y = x for v ∉ {x, x'}: ``q/(p+q) = 1/(e+1)``, so ``rho = 2/(e+1)``.
``oue`` (optimized unary encoding: bit x set w.p. 1/2, every other bit w.p. 1/(e+1))
    D depends on the bits (x, x') only: (1, 0) → ratio e, (0, 1) → 1/e, equal bits → 1;
    ``mu2 = P0(1,0) + P1(1,0) = 1/2``; for v ∉ {x, x'} the bit of v differs too: at bits
    (x, x', v) = (1, 1, 0) the ratio is ``q² (1/2) / (q (1−q))`` = ``1/(2e)`` (the minimum;
    (1, 0, 0) gives q, (0, 0, 0) gives 1/2, v = x gives 1/(e+1)) → ``rho = 1/e``.
``rappor`` (symmetric unary encoding, each bit kept w.p. t/(t+1))
    same D pattern; ``mu2 = (t² + 1)/(t + 1)²``; with the bit of v unset (factor 1/t) the
    blanket ratios are ``1/(2e)`` (bits (1, 1)), ``1/(e+1)`` (bits (1, 0)), ``1/2`` (bits
    (0, 0)) → ``rho = 1/e``.
``subset`` (k-subset selection: a k-subset S, P(S | x) ∝ e if x ∈ S else 1)
    informative: S contains exactly one of x, x'; with ``Z = C(d−1, k−1) e + C(d−1, k)``,
    ``mu2 = C(d−2, k−1)(e+1)/Z``; blanket ratio ``1/(2e)`` on sets containing both x and x'
    but not v (k >= 2), ``1/(e+1)`` otherwise → ``rho = 1/e`` for k >= 2.
``olh`` (local hashing into g = d buckets with a random hash function from a family with
collision probability 1/g, then g-RR; the input domain has at least 3 values)
    informative: ``h(x) ≠ h(x')`` and y ∈ {h(x), h(x')}; ``mu2 = (1 − 1/g)(e+1)/(e+g−1)``;
    blanket ratio ``1/(2e)`` at a collision ``h(x) = h(x') = y ≠ h(v)`` → ``rho = 1/e``.
``hadamard`` (Hadamard response, Acharya, Sun, Zhang, AISTATS 2019: K the smallest power
of 2 above d, input x ↦ row x + 1 of the K×K Sylvester matrix — row 0, all ones, is not
used — with "+1 set" ``S_x`` of size K/2; report uniform on ``S_x`` w.p. e/(e+1), else
uniform on its complement)
    ``P_x(y) = 2e/((e+1)K)`` on ``S_x``, ``2/((e+1)K)`` off it, so the loss is three-valued;
    two distinct non-zero rows differ on K/2 columns, K/4 of each sign: ``mu2 = (K/2)(1/K)
    = 1/2`` (``β = κ/2``). Blanket ratio: ``R(v)(y) >= 2/((e+1)K)`` and ``P0 + P1 <=
    4e/((e+1)K)`` give ``1/(2e)``, reached at y ∈ S_x ∩ S_x' outside S_v when the rows of x, x', v
    are linearly independent over GF(2) — some v has that when d >= 4 → ``rho = 1/e``. For
    d <= 3 the only third row is the sum of the other two (``S_x ∩ S_x' ⊂ S_v``); the
    minimum is then ``1/(e+1)`` (at informative y, also for v ∈ {x, x'}) → ``rho = 2/(e+1)``.
    Lower bound: z with row ``a ⊕ b`` (d >= 3; its informative reports all fall off
    ``S_z``: ``R(z)(D ≠ 0) = 1/(e+1)``) and, for d >= 4, z with an independent row
    (``R(z)(D ≠ 0) = 1/2``); target ``P0(+) = e/(2(e+1))``, ``P0(−) = 1/(2(e+1))``.
``piecewise`` (piecewise mechanism, Wang et al., ICDE 2019: input in [−1, 1], output in
[−C, C], ``C = (t+1)/(t−1)``, density ``p = t(t−1)/(2(t+1))`` on ``[l(x), l(x) + C − 1]``,
``l(x) = (C+1)x/2 − (C−1)/2``, and ``p/e`` elsewhere)
    the density takes two values, so the loss is three-valued for every pair. The
    informative sets of x < x' have length ``min(C − 1, (C+1)(x' − x)/2)``, so
    ``β <= (p − p/e)(C − 1) = 1 − 1/t`` (x = −1, x' = 1) and ``mu2 = (t² + 1)/(t(t + 1))``.
    Blanket ratio: density >= p/e and ``P0 + P1 <= 2p`` give ``1/(2e)``, reached on the
    overlap of two close inputs' intervals away from v = ±1; pairs whose intervals are
    disjoint have ``1/(e+1)`` but they are the ones with the worst β, and pairs just short of
    disjoint have β arbitrarily close to it → ``rho = 1/e``. Revealed-class cells of the
    informative length (``piecewise_reveal_cells``; docs/proofs/mechanism-certificates.md,
    section 1b) give each range of pairs its own rates and reveal the overlap; they join
    where ``n e^{−ε0} <= 20`` (ε0 = 8, n = 1e4: 7.99998 → 5.350), each screened by one
    report's ``μ_hi δ_RR(ε)``; the certificates are combined lazily (``_Least``: the capped
    search is not run where the cells are smaller). Lower bound: pairs (−a, a)
    for a ∈ {1/4, 1/2, 3/4, 1}, z = 0, regions the two informative sets, and below
    ε0 = ln 4 the pair (−1, 1) with regions that leave out z's high interval.
``laplace`` (Laplace noise of scale 2/ε0 on an input in [−1, 1]; ε0-LDP)
    the loss is continuous. For x < x' with ``Δ = x' − x``: ``β(Δ) = 1 − e^{−Δε0/4}`` (the
    total variation of two Laplace laws Δ apart; 1 − 1/t at Δ = 2). Blanket ratio: every
    density is at least ``min(f_{−1}, f_{+1})``; for y >= x' the ratio with v = −1 is
    ``1/(e^{(1+x)ε0/2} + e^{(1+x')ε0/2})`` (the same value bounds y ∈ [−1, x']), its
    mirror with v = +1 covers the other side, so the smallest over pairs Δ apart is
    ``r(Δ) = e^{−ε0}/(1 + e^{−Δε0/2})`` (x' = 1). β and r both grow with Δ: the pairs are
    split into 12 cells of Δ (finer towards 2), each bounded by (β at its upper end, r at
    its lower end); ``rho`` ranges from ``e^{−ε0}`` (Δ → 0) to ``2/(e+1)`` (Δ = 2).
    Where ``n e^{−ε0} <= 40`` split clone cells join (``_laplace_split``; each pair's own
    ``κ_Δ``, and uninformative reports hidden at ``e^{−ε0}(1 − u)/(u(1 + u))``, u =
    ``e^{−Δε0/4}``, docs/proofs/mechanism-certificates.md, section 1c; ε0 = 8, n = 1e4:
    7.99997 → 5.3026).
    Lower bound: pair (−1, 1), z = 0, regions ``y < −c`` and ``y > c`` for thresholds
    ``c ∈ {1/4, 1/2, 1, 1 + b/2, 1 + b, 1 + 2b}`` (b = 2/ε0), the "others on x'"
    regions above, and others on +1 through both counts ``y < −c``, ``y > c`` (OUE's
    two-count law with e^{ε0} → p/q; docs/proofs/mechanism-certificates.md, section 1h,
    which also gives the clone family's large-n floor 1.11–1.41 for Laplace).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.accounting.curves import PrivacyCurve
from crowdhide.accounting.logmath import kappa_up
from crowdhide.accounting.registry import Registry, best_of
from crowdhide.accounting.shuffle import _krr_fast
from crowdhide.accounting.shuffle._lazy_least import Capped as _Capped
from crowdhide.accounting.shuffle._lazy_least import Least as _Least
from crowdhide.accounting.shuffle._lazy_least import StartedCertificate
from crowdhide.accounting.shuffle._mechanism_lower import ThirdMean
from crowdhide.accounting.shuffle._member_curve import MemberCurve
from crowdhide.accounting.shuffle._reveal_batch import RevealBatch, RevealSystem
from crowdhide.accounting.shuffle._split_clone import (
    SPLIT_C_POINTS,
    SPLIT_S_POINTS,
    split_clone_log_delta,
    split_clone_log_deltas,
)
from crowdhide.accounting.shuffle.curves import BracketedCurve
from crowdhide.accounting.shuffle.generic import (
    KRR_BLANKET_BEST_MAX_N,
    SafeSideCurve,
    shuffle_bound_curve,
)
from crowdhide.accounting.shuffle.randomizers import (
    MECHANISMS,
    CurveLowerMember,
    LowerMember,
    Mechanism,
    RevealCells,
    certificate_cells,
    lower_members,
)
from crowdhide.accounting.shuffle.variation_ratio import (
    VariationRatio,
    clone_rates,
    one_report_log_delta,
)
from crowdhide.accounting.statement import Kind, PrivacyStatement
from crowdhide.errors import InvalidParameterError

__all__ = [
    "MECHANISM_REGISTRY",
    "MechanismBound",
    "MechanismParams",
    "mechanism_curve",
    "mechanism_delta",
    "mechanism_epsilon",
    "mechanism_lower_curve",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class MechanismParams:
    """n shuffled reports of a mechanism with domain size ``d`` (and subset size ``k``);
    ``d`` is None for the mechanisms on [−1, 1] (``piecewise``, ``laplace``).

    Examples
    --------
    >>> MechanismParams(eps0=2.0, n=1000, d=8)
    MechanismParams(eps0=2.0, n=1000, d=8, k=None)
    """

    eps0: float
    n: int
    d: int | None = None
    k: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "eps0", check_real("eps0", self.eps0, low=0.0, low_open=True, high=50.0)
        )
        object.__setattr__(self, "n", check_int("n", self.n, low=1, high=10**9))
        if self.d is not None:
            object.__setattr__(self, "d", check_int("d", self.d, low=2, high=10**6))
        if self.k is not None:
            high = self.d - 1 if self.d is not None else 10**6
            object.__setattr__(self, "k", check_int("k", self.k, low=1, high=high))


@dataclass(frozen=True, slots=True)
class MechanismBound:
    """A mechanism's certificate (``kind="upper"``, name ``mechanism:NAME``) or lower bound
    (``kind="lower"``, ``mechanism_lower:NAME``): a :class:`~crowdhide.accounting.registry.Bound`
    over :class:`MechanismParams`."""

    mechanism: Mechanism
    kind: Kind

    @property
    def name(self) -> str:
        prefix = "mechanism" if self.kind == "upper" else "mechanism_lower"
        return f"{prefix}:{self.mechanism.name}"

    @property
    def citation(self) -> str:
        return self.mechanism.citation

    def applies(self, params: MechanismParams) -> str | None:
        name = self.mechanism.name
        if self.mechanism.needs_d and params.d is None:
            return f"mechanism {name!r} needs d (the domain size), got None"
        if not self.mechanism.needs_d and params.d is not None:
            return (
                f"mechanism {name!r} has the input domain [-1, 1] and takes no d, got d={params.d}"
            )
        if name == "subset" and (params.d or 0) < 3:
            return f"mechanism 'subset' needs d >= 3, got d={params.d}"
        if self.mechanism.needs_k and params.k is None:
            return f"mechanism {name!r} needs k (the subset size), got None"
        if self.kind == "lower" and not lower_members(
            self.mechanism, params.eps0, params.d or 0, params.k or 1
        ):
            return f"no lower-bound dataset for mechanism {name!r} with d={params.d} (needs d >= 3)"
        return None

    def curve(self, params: MechanismParams) -> PrivacyCurve:
        if self.kind == "lower":
            return _lower_curve(self.mechanism.name, params)
        start = None
        if MechanismBound(self.mechanism, "lower").applies(params) is None:
            start = _lower_curve(self.mechanism.name, params).epsilon
        return self.certificate(params, start)

    def certificate(
        self, params: MechanismParams, start: Callable[[float], float] | None
    ) -> StartedCertificate:
        """The certificate's curve, its ε at δ searched from ``start(δ)`` (None: from 0).
        :meth:`curve` starts it at the lower bound's ε at the same δ (a proven lower bound
        on the truth, so on every certificate; issue 32), from the lower curve that
        :meth:`curve` of the lower bound returns for ``params`` too, so a query asking both
        computes the lower bound once. Any start gives a passing point
        (:class:`~crowdhide.accounting.shuffle._lazy_least.StartedCertificate`)."""
        n, eps0, d, k = params.n, params.eps0, params.d or 0, params.k or 1
        members = _certificate_members(self.mechanism, n, eps0, d, k)
        screens = _certificate_screens(self.mechanism, n, eps0, d, k)
        stepped = self.mechanism.cells is not None  # Laplace's one-rate cells (section 1v)
        raw = MemberCurve(members, eps0, lower=False, screens=screens, stepped=stepped)
        # the certificates of the same pairs, the likeliest least first (module docstring
        # of _Least: the order costs time, never changes the answer)
        least: list[PrivacyCurve] = [raw]
        if self.mechanism.reveal_cells is not None:
            cells = _reveal_cell_curve(self.mechanism.reveal_cells, n, eps0)
            if cells is not None:
                least.insert(0, cells)
        if self.mechanism.split_cells is not None:
            split = self.mechanism.split_cells(n, eps0)  # Laplace: docs/proofs, section 1c
            if split:
                least.insert(0, MemberCurve(split, eps0, lower=False))
        if self.mechanism.variation_capped:
            least.insert(0, capped := _capped_curve(n, eps0, self.mechanism.params(eps0, d, k)[1]))
            # one rate, same μ, fewer clones: never below the floor; its search starts there
            raw.start = capped.floor_epsilon
        if self._blanket_certifies(n, d):
            least.append(shuffle_bound_curve(bound="krr_blanket", eps0=eps0, n=n, k=d))
        # a one-member Least is that member's floats (module docstring of _lazy_least)
        return StartedCertificate(_Least(least), eps0, start)

    def _blanket_certifies(self, n: int, d: int) -> bool:
        """Whether the exact k-RR blanket joins the certificate (as in ``best``)."""
        return self.mechanism.uniform_blanket and d >= 3 and n <= KRR_BLANKET_BEST_MAX_N


@functools.lru_cache(maxsize=64)
def _lower_curve(name: str, params: MechanismParams) -> PrivacyCurve:
    """The lower bound's curve, one object per question's parameters (the lower bound's
    :meth:`MechanismBound.curve` and the certificate's start share it: its members remember
    their answer per δ, so the lower bound is computed once per δ; its answers are those
    of a fresh curve, only the time depends on what was asked before)."""
    n, eps0, d, k = params.n, params.eps0, params.d or 0, params.k or 1
    lowers = lower_members(MECHANISMS[name], eps0, d, k)
    members: list[Callable[[float, float], float]] = [
        functools.partial(_lower_member, fn, n) for fn in lowers
    ]
    solvers: list[Callable[[float], float] | None] = [
        functools.partial(fn.epsilon, n) if isinstance(fn, CurveLowerMember) else None
        for fn in lowers
    ]
    cliffs: list[Callable[[], float] | None] = [
        functools.partial(fn.cliff, n) if isinstance(fn, ThirdMean) else None for fn in lowers
    ]
    first = MECHANISMS[name].lower_first
    curve = MemberCurve(members, eps0, lower=True, solvers=solvers, cliffs=cliffs, first=first)
    return SafeSideCurve(curve, eps0, lower=True)


def _capped_curve(n: int, eps0: float, mu_max: float) -> _Capped:
    """The generic variation-ratio certificate over pairs with ``μ <= mu_max``, searched
    upwards from the split system at ``μ = mu_max`` with its own clone rates (a floor: the
    top cell uses fewer informative clones and the same target)."""
    fn = VariationRatio(n, eps0, mu_max=mu_max)
    rates = clone_rates(mu_max, eps0)
    # The split system alone (no min with the one-rate system, which has fewer clones of
    # both kinds at the same μ, so is never below it but for rounding): the floor only
    # starts the search and screens it in _Least, so it never decides soundness; the
    # one-rate sum was a third of the floor's cost (issue 32).
    floor_member = functools.partial(_split_member, n, kappa_up(eps0), mu_max, rates)
    floor = MemberCurve([floor_member], eps0, lower=False)  # remembers its answer per δ
    return _Capped(BracketedCurve(fn, eps0, floor), floor, eps0)


#: Largest ``n e^{−ε0}`` (expected clones of the one-rate system) at which the revealed-class
#: cells join a certificate: beyond it they were never the smaller (measured for the
#: piecewise mechanism at ε0 = 4 … 10, n = 1e3 … 1e5) and cost 50-odd evaluations per ε.
REVEAL_CELLS_MAX_LOAD = 20.0


def _reveal_cell_curve(
    cells_of: Callable[[float], RevealCells], n: int, eps0: float
) -> MemberCurve | None:
    """The revealed-class cell certificate (``piecewise_reveal_cells``): one report's δ
    below the first cell, then one revealed-class split system per cell; the largest over
    them certifies every pair. None where it is not evaluated (a performance choice).

    Each cell is screened by one report's δ at its largest μ, ``μ_hi δ_RR(ε)`` (the shuffled
    output is a post-processing of the target's report and reports free of it, so that
    bounds every pair of the cell too): where it meets the target, the cell's split system
    is not evaluated (at ε0 = 8, n = 1e4, δ = 1e-6 about 20 of the 56 cells). The cells
    are :func:`_reveal_member`'s floats, evaluated ahead in batches where the curve sweeps
    them at its answer (:class:`~crowdhide.accounting.shuffle._reveal_batch.RevealBatch`)."""
    kappa = kappa_up(eps0)
    if kappa >= 1.0 or n * math.exp(-eps0) > REVEAL_CELLS_MAX_LOAD:
        return None
    mu_floor, cells = cells_of(eps0)
    screens: list[Callable[[float, float], float] | None] = [
        functools.partial(_one_report_screen, mu, eps0) for mu, _, _, _ in cells
    ]
    systems: list[RevealSystem] = []
    for mu, c_inf, w, gamma in cells:
        system = _reveal_system(mu, c_inf, (w, gamma))  # as _reveal_member takes it
        if system is None:
            systems.append(None)
        else:
            log_factor, (mu_cond, c_zero) = system
            systems.append((log_factor, (mu_cond, c_inf, c_zero)))
    # _reveal_member's floats, the cells the curve sweeps at its answer evaluated in batches
    batch = RevealBatch(n, kappa, systems, screens)
    members: list[Callable[[float, float], float]] = [
        functools.partial(_one_report_member, mu_floor, eps0)
    ]
    members += [functools.partial(batch.value, i) for i in range(len(cells))]
    return MemberCurve(members, eps0, lower=False, screens=[None, *screens])


def _one_report_screen(mu2: float, eps0: float, eps: float, tail: float = 0.0) -> float:
    """:func:`_one_report_member` as a screen (no tail level)."""
    return _one_report_member(mu2, eps0, eps, tail)


#: Blocks of the coarse screen of a one-rate cell (:func:`_coarse_clone_screen`): clone
#: counts and informative counts (the certificate's own: 128 and 48).
SCREEN_C_POINTS, SCREEN_S_POINTS = 32, 16


def _coarse_clone_screen(
    n: int, kappa: float, mu2: float, rho: float, eps: float, tail: float
) -> float:
    """The one-rate cell's system blocked coarsely, as a screen of its member: a blocked sum
    bounds each block at its worst corner whatever the blocks, so this is a valid bound of
    the same pairs, a little above the member's (issue 32: Laplace's twelve cells cost a
    7-20 ms layout each; the cells away from the binding one pass this one at a third of
    the cost, and the member is then not evaluated)."""
    return _krr_fast.clone_noise_log_delta(
        n, kappa, mu2, rho, eps, tail, c_points=SCREEN_C_POINTS, s_points=SCREEN_S_POINTS
    )


def _certificate_screens(
    mechanism: Mechanism, n: int, eps0: float, d: int, k: int
) -> list[Callable[[float, float], float] | None] | None:
    """Screens of :func:`_certificate_members` (None: none): a coarse one per one-rate cell
    where there are several cells (each then a one-rate member)."""
    cells = certificate_cells(mechanism, eps0, d, k)
    kappa = kappa_up(eps0)
    if kappa >= 1.0 or len(cells) < 2:  # one cell: solved, not screened
        return None
    screens: list[Callable[[float, float], float] | None] = [
        functools.partial(_coarse_clone_screen, n, kappa, mu2, rho)
        for mu2, rho in _solve_order(cells)
    ]
    screens[-1] = None  # solved first, from the lower bound's ε: it fails there (section 1v)
    return screens


def _solve_order(cells: tuple[tuple[float, float], ...]) -> list[tuple[float, float]]:
    """The one-rate cells by ``μ/ρ``, smallest first: :class:`MemberCurve` solves the last
    first, and a cell's ε scales as ``sqrt(μ/ρ)`` at large n, so the likeliest binding cell is
    solved first, the rest mostly pass at its root. Any order certifies (section 1v)."""
    return sorted(cells, key=lambda cell: cell[0] / cell[1])


def _certificate_members(
    mechanism: Mechanism, n: int, eps0: float, d: int, k: int
) -> list[Callable[[float, float], float]]:
    """The certificate's ``log δ`` members (module docstring): the split clone system for
    a single cell with split rates, else one one-rate system per cell."""
    cells = certificate_cells(mechanism, eps0, d, k)
    kappa = kappa_up(eps0)
    if kappa >= 1.0:  # ε0 beyond ~38, tanh rounds to 1: one report's δ (no clones to speak of)
        return [functools.partial(_one_report_member, max(mu2 for mu2, _ in cells), eps0)]
    if mechanism.split is not None and len(cells) == 1 and 0.0 < cells[0][0] < 1.0:
        (mu2, rho), rates = cells[0], mechanism.split(eps0, d, k)
        reveal = mechanism.reveal(eps0, d, k) if mechanism.reveal is not None else None
        if reveal is None or not 0.0 < reveal[0] < 1.0 - mu2:
            return [functools.partial(_clone_member, n, kappa, mu2, rho, rates)]
        return [functools.partial(_clone_or_revealed, n, kappa, (mu2, rho), rates, reveal)]
    order = _solve_order(cells)
    return [functools.partial(_clone_member, n, kappa, mu2, rho, None) for mu2, rho in order]


def _one_report_member(mu2: float, eps0: float, eps: float, tail: float) -> float:
    """One report of the three-point pair: ``mu2`` times binary RR's δ. The shuffled output
    is a post-processing of the target's report and reports that do not depend on it."""
    if eps >= eps0:
        return -math.inf
    return math.log(mu2) + one_report_log_delta(eps, eps0)


def _clone_member(
    n: int,
    kappa: float,
    mu2: float,
    rho: float,
    rates: tuple[float, float] | None,
    eps: float,
    tail: float,
) -> float:
    """The one-rate clone system, or the smaller of it and the split one (both certify).

    More clones of either kind are a post-processing (the adversary turns residual users into
    fresh clones), so when the split rates are at least the one-rate system's (``rho·mu2``
    informative, ``rho·(1 − mu2)`` uninformative) the split system alone is the smaller."""
    if rates is None:
        return _krr_fast.clone_noise_log_delta(n, kappa, mu2, rho, eps, tail)
    split = split_clone_log_delta(n, kappa, mu2, rates[0], rates[1], eps, tail)
    if _split_suffices(mu2, rho, rates):
        return split
    return min(split, _krr_fast.clone_noise_log_delta(n, kappa, mu2, rho, eps, tail))


#: Relative shortfall of a split rate below the one-rate system's that still counts as "at
#: least" in :func:`_split_suffices`: the split's uninformative rate ``(1 − μ) e^{−ε0}`` takes
#: ``1 − μ`` with μ raised by ``PARAMETER_ULPS`` ulps (``uninformative_share``), 2.6e-15 …
#: 2e-13 below ``ρ (1 − μ)`` for every mechanism with ``ρ = e^{−ε0}`` (OUE, RAPPOR, k-subset,
#: OLH, Hadamard) — a rounding allowance, not a different system (section 1m).
SAME_RATE_RTOL = 1e-12


def _split_suffices(mu2: float, rho: float, rates: tuple[float, float]) -> bool:
    """Whether the split system alone is the certificate (``_clone_member``): both of its
    rates at least the one-rate system's ``(ρμ, ρ(1 − μ))``, the uninformative one up to
    :data:`SAME_RATE_RTOL`. Each system certifies by itself, so leaving the one-rate system
    out is sound whatever the rates; it can only raise a ``log δ`` (issue 32: it cost a
    third of each evaluation at δ = 1e-300 and was the smaller at 1 of 2,293 evaluations
    of the table's five rows, 38 below the target: docs/proofs, section 1m)."""
    return rates[0] >= rho * mu2 and rates[1] >= rho * (1.0 - mu2) * (1.0 - SAME_RATE_RTOL)


def _split_member(
    n: int, kappa: float, mu2: float, rates: tuple[float, float], eps: float, tail: float
) -> float:
    """The split clone system with the rates ``rates`` (the capped search's floor)."""
    return split_clone_log_delta(n, kappa, mu2, rates[0], rates[1], eps, tail)


#: Relative allowance on the revealed-class parameters (module docstring): each is the
#: result of a few roundings (well below 1e-13 relative), so 1e-12 holds them on the safe side.
_REVEAL_RTOL = 1e-12


def _reveal_member(
    n: int,
    kappa: float,
    mu2: float,
    c_inf: float,
    reveal: tuple[float, float],
    eps: float,
    tail: float,
) -> float:
    """The revealed-class split system (module docstring): ``log(1 − w)`` plus the split
    system with target ``μ/(1 − w)``, informative clones ``c_inf`` and uninformative ones
    ``gamma`` (:func:`_reveal_system`)."""
    system = _reveal_system(mu2, c_inf, reveal)
    if system is None:  # nothing left to hide: no gain over the split system
        return 0.0
    log_factor, (mu_cond, c_zero) = system
    return log_factor + split_clone_log_delta(n, kappa, mu_cond, c_inf, c_zero, eps, tail)


def _reveal_system(
    mu2: float, c_inf: float, reveal: tuple[float, float]
) -> tuple[float, tuple[float, float]] | None:
    """``(log(1 − w), (μ/(1 − w), gamma))`` of the revealed-class split system (None where
    the conditional μ reaches 1). The factor takes ``w`` lowered and the target's μ takes it
    raised (δ of the split system is non-decreasing in μ), so both err to the safe side;
    gamma is lowered."""
    w, gamma = reveal
    mu_cond = min(mu2 / (1.0 - w * (1.0 + _REVEAL_RTOL)) * (1.0 + _REVEAL_RTOL), 1.0)
    if mu_cond >= 1.0:
        return None
    return math.log1p(-w * (1.0 - _REVEAL_RTOL)), (mu_cond, gamma * (1.0 - _REVEAL_RTOL))


def _clone_or_revealed(
    n: int,
    kappa: float,
    cell: tuple[float, float],
    rates: tuple[float, float],
    reveal: tuple[float, float],
    eps: float,
    tail: float,
) -> float:
    """``_smaller(_clone_member, _reveal_member)`` of one cell ``(μ, ρ)``, the same floats,
    with the cell's split system and the revealed-class one in one
    :func:`split_clone_log_deltas` call (its values are those of one call per system; issue
    32: k-subset and OLH evaluate both at every ε, and one call's fixed cost goes)."""
    mu2, rho = cell
    system = _reveal_system(mu2, rates[0], reveal)
    systems = [(mu2, rates[0], rates[1], SPLIT_C_POINTS, SPLIT_S_POINTS, _krr_fast._ETA)]
    if system is not None:
        mu_cond, c_zero = system[1]
        systems.append((mu_cond, rates[0], c_zero, SPLIT_C_POINTS, SPLIT_S_POINTS, _krr_fast._ETA))
    values = split_clone_log_deltas(n, kappa, systems, eps, tail)
    split = values[0]
    if not _split_suffices(mu2, rho, rates):  # as _clone_member
        split = min(split, _krr_fast.clone_noise_log_delta(n, kappa, mu2, rho, eps, tail))
    revealed = 0.0 if system is None else system[0] + values[1]
    return min(split, revealed)


def _smaller(
    first: Callable[[float, float], float],
    second: Callable[[float, float], float],
    eps: float,
    tail: float,
) -> float:
    """The smaller of two certificates of the same pairs (both hold, so the smaller does).
    Both are evaluated at every ε: which is smaller changes along the curve (k-subset,
    ε0 = 4, n = 1e3: keeping the one ahead early gives 2.07 instead of 1.65)."""
    return min(first(eps, tail), second(eps, tail))


def _lower_member(fn: LowerMember, n: int, eps: float, tail: float) -> float:
    return fn(n, eps)


#: The certificate and the lower bound of every mechanism in :data:`MECHANISMS`.
MECHANISM_REGISTRY: Registry[MechanismParams] = Registry(
    [MechanismBound(m, kind) for kind in ("upper", "lower") for m in MECHANISMS.values()],
    what="mechanism bound",
)


def _params(name: str, eps0: float, n: int, d: int | None, k: int | None) -> MechanismParams:
    """Validated parameters for mechanism ``name`` (a mechanism that does not apply is an
    input error here, not a statement)."""
    if name not in MECHANISMS:
        raise InvalidParameterError(
            f"mechanism must be one of {', '.join(MECHANISMS)}; got {name!r}",
            parameter="mechanism",
            value=name,
        )
    params = MechanismParams(eps0=eps0, n=n, d=d, k=k if MECHANISMS[name].needs_k else None)
    reason = MECHANISM_REGISTRY[f"mechanism:{name}"].applies(params)
    if reason is not None:
        raise InvalidParameterError(reason, parameter="mechanism", value=name)
    return params


def mechanism_curve(
    *, mechanism: str, eps0: float, n: int, d: int | None = None, k: int | None = None
) -> PrivacyCurve:
    """Certificate curve of n shuffled reports of ``mechanism`` (module docstring), rounded a
    relative 1e-9 to the safe side.

    Examples
    --------
    >>> c = mechanism_curve(mechanism="oue", eps0=2.0, n=10_000, d=8)
    >>> 0.0 < c.epsilon(1e-6) < 0.11
    True
    """
    params = _params(mechanism, eps0, n, d, k)
    return MECHANISM_REGISTRY[f"mechanism:{mechanism}"].curve(params)


def mechanism_lower_curve(
    *, mechanism: str, eps0: float, n: int, d: int | None = None, k: int | None = None
) -> PrivacyCurve:
    """Lower-bound curve: the exact counts of informative reports, all others on one value
    (the largest over the mechanism's configurations); ValueError where none exists."""
    params = _params(mechanism, eps0, n, d, k)
    bound = MECHANISM_REGISTRY[f"mechanism_lower:{mechanism}"]
    reason = bound.applies(params)
    if reason is not None:
        raise InvalidParameterError(reason, parameter="mechanism", value=mechanism)
    return bound.curve(params)


def _mechanism_statement(
    mechanism: str, eps0: float, n: int, d: int | None, k: int | None, query: dict[str, float]
) -> PrivacyStatement:
    """The smaller of the mechanism's certificate and the best generic one (the mechanism's
    first, so it wins ties), with the mechanism's lower bound attached."""
    from crowdhide.accounting.shuffle.generic import shuffle_delta, shuffle_epsilon

    params = _params(mechanism, eps0, n, d, k)
    own = MECHANISM_REGISTRY.all(
        params, names=(f"mechanism:{mechanism}", f"mechanism_lower:{mechanism}"), **query
    )
    if "delta" in query:
        generic = shuffle_epsilon(eps0=eps0, n=n, delta=query["delta"], lower=False)
    else:
        generic = shuffle_delta(eps0=eps0, n=n, epsilon=query["epsilon"], lower=False)
    return best_of([*own, generic], by="epsilon" if "delta" in query else "delta")


def mechanism_epsilon(
    *,
    mechanism: str,
    eps0: float,
    n: int,
    delta: float,
    d: int | None = None,
    k: int | None = None,
) -> PrivacyStatement:
    """ε at ``delta`` of n shuffled reports of ``mechanism``: the smaller of its specific
    certificate and the best generic one, with the mechanism's lower bound attached.

    Examples
    --------
    >>> r = mechanism_epsilon(mechanism="rappor", eps0=2.0, n=10**5, delta=1e-6, d=32)
    >>> r.source, r.lower.source, r.lower.epsilon <= r.epsilon
    ('mechanism:rappor', 'mechanism_lower:rappor', True)
    """
    d_ = check_probability("delta", delta, allow_zero=False, allow_one=False)
    return _mechanism_statement(mechanism, eps0, n, d, k, {"delta": d_})


def mechanism_delta(
    *,
    mechanism: str,
    eps0: float,
    n: int,
    epsilon: float,
    d: int | None = None,
    k: int | None = None,
) -> PrivacyStatement:
    """δ at ``epsilon`` of n shuffled reports of ``mechanism`` (see :func:`mechanism_epsilon`)."""
    eps = check_real("epsilon", epsilon, low=0.0)
    return _mechanism_statement(mechanism, eps0, n, d, k, {"epsilon": eps})
