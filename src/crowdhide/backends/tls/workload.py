"""The wire's worst-case work per host and round, and a round length derived from it.

A round's length must not depend on the data (how long a round took is visible on the wire),
so it is derived from the plan, the placement of its blocks on hosts and this machine's
measured cost of a frame, never from the messages actually sent:

* **frames per hop**: what every sender emits whatever its data (one message per sender and
  its flooding dummies on a data route, the scramblers' forwards plus their dummies, one
  per receiver for ``broadcast``/``fanout``, the largest group for ``stream``);
* **sealing** is charged to the host of each sending block (placement is part of the plan);
  **opening** to every host holding a receiving block, for the most frames its receiving
  nodes can get in that hop whatever the data: ``min(total, nodes here x cap)``, where the
  per-receiver cap is what the plan fixes (:func:`_hops`): a scrambler gets exactly its
  ``n`` sources' onions (assigned by index), a flooding source sends at most one frame per
  target, a ``fixed`` receiver gets ``ceil(S/R)``, a ``fanout`` receiver one, a
  ``broadcast`` receiver one per sender; where the data choose the receiver (a real
  message, or an uncapped scrambler's uniform dummy) one receiver may get the whole hop;
* **cost by mode** (:func:`frame_costs`): a ``PLAIN`` frame is one AEAD operation each way
  in its link's HPKE context; an ``ONION`` carries an inner body sealed single-shot (two
  X25519 operations); a ``FORWARD`` is opened down to that inner body (one more).

:func:`round_seconds` is two halves (send and acknowledge, then process), each a floor plus
a margin times the busiest (host, half round) work, with a per-frame allowance for framing,
TLS records, encoding and decoding. A round that overruns is reported, never stretched.
Groups that need none of the queued frames share a round (:func:`rounds_of`): their frames
one send phase, charged together on the hosts they share; each level's programs a window.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

from crowdhide.backends.tls.schedule import Round, longest

__all__ = [
    "Cost",
    "closes_before",
    "frame_costs",
    "given_schedule",
    "half_work",
    "host_work",
    "outlier",
    "received",
    "round_detail",
    "round_schedule",
    "round_seconds",
    "round_work",
    "rounds_of",
    "sized_rounds",
    "slowest",
    "windows_of",
]

#: ``(seal, open)`` seconds per frame.
Cost = tuple[float, float]

#: Seconds per half round whatever the work (scheduling, the control channel).
FLOOR = 0.25
#: Margin over the measured work (a machine whose load changes during the run).
MARGIN = 3.0
#: Seconds per frame and side besides the cryptography (framing, a TLS record, the program).
ALLOWANCE = 60e-6
#: A daemon whose measured frame costs exceed the others' median by more than this factor is
#: refused: its figure alone would set every round (a lying or broken daemon could stall the
#: run for hours). Machines of one deployment differ by a few times, load by 2-3 times.
OUTLIER_FACTOR = 20.0
#: Seconds per frame below which a figure is compared as this much: a link AEAD opening
#: measures 0.7-20 µs on one loaded machine (timer and scheduler noise at that size), which
#: tripped the factor with nothing wrong (tests/net/test_deploy_doc.py failed so, twice in
#: two runs). Such a figure scaled by the factor stays far below what an inner body's
#: (1-2 ms) already may be, so the check loses nothing a lying daemon could gain.
OUTLIER_FLOOR = 1e-5


def frame_costs(frame: int, *, budget: float = 0.3, batch: int = 128) -> dict[str, Cost]:
    """Measured ``(seal, open)`` wall seconds per frame of ``frame`` bytes: ``link`` (one
    AEAD call in a link's context) and ``inner`` (a single-shot HPKE body: two X25519
    operations to seal, one to open). Dummy contents: the work does not depend on them.

    Each is the mean over repeats filling about ``budget / 2`` seconds (at least one batch of
    ``batch`` frames, or of 8 inner bodies): a mean over a window, not one short burst, so a
    moment's scheduling does not set the run's round length, while the machine's sustained
    load (what the hosts will get) does.
    """
    from crowdhide.backends.tls import codec, hpke
    from crowdhide.backends.tls import frames as fr

    a, b = fr.Sealer(host=0), fr.Sealer(host=1)
    a.learn(hosts={1: b.link_public()}, nodes={7: b.node_public(7)})
    values = codec.values_bytes(frame)
    plain = codec.pack_fields(1, 0, 0, 0) + bytes(values)
    head = fr.HEADER.pack(fr.DATA, fr.PLAIN, 0, 0, 7)
    lengths = {fr.PLAIN: len(plain) + hpke.TAG}
    b.open(7, a.seal(7, bytes(values), b""), b"")  # warm-up: lazy imports, first contexts

    def link_batch() -> tuple[float, float]:
        began = time.perf_counter()
        sealed = a.seal_frames(1, 1, [(head, plain)] * batch, frame)
        middle = time.perf_counter()
        b.open_frames(0, 1, 0, sealed, lengths)
        return middle - began, time.perf_counter() - middle

    def inner_batch() -> tuple[float, float]:
        began = time.perf_counter()
        bodies = [a.seal(7, bytes(values), b"") for _ in range(8)]
        middle = time.perf_counter()
        for body in bodies:
            b.open(7, body, b"")
        return middle - began, time.perf_counter() - middle

    return {
        "link": _mean(link_batch, batch, budget / 2),
        "inner": _mean(inner_batch, 8, budget / 2),
    }


def slowest(measured: Any) -> dict[str, Cost]:
    """The largest ``(seal, open)`` of each kind over several machines' :func:`frame_costs`
    (a round must fit the slowest daemon's work).

    >>> slowest([{"link": (1e-6, 3e-6), "inner": (2e-4, 1e-4)},
    ...          {"link": (2e-6, 1e-6), "inner": (1e-4, 1e-4)}])
    {'link': (2e-06, 3e-06), 'inner': (0.0002, 0.0001)}
    """
    from crowdhide.errors import InvalidParameterError

    out: dict[str, Cost] = {}
    for costs in measured:
        values = [float(v) for pair in costs.values() for v in pair]
        # A daemon's figures set everybody's round length: finite, and under a second a frame.
        if set(costs) != {"link", "inner"} or not all(0.0 <= v < 1.0 for v in values):
            raise InvalidParameterError(
                f"frame costs must give (seal, open) seconds in [0, 1) for 'link' and "
                f"'inner', got {dict(costs)}",
                parameter="costs",
            )
        for kind, (seal, open_) in costs.items():
            was = out.get(kind, (0.0, 0.0))
            out[kind] = (max(was[0], float(seal)), max(was[1], float(open_)))
    if not out:
        raise InvalidParameterError("no frame costs measured", parameter="costs")
    return out


def outlier(measured: dict[int, dict[str, Cost]]) -> tuple[int, float]:
    """The daemon whose frame costs are furthest above the others', and by what factor: the
    largest ratio, over the four figures, of its figure to the median of the *other*
    daemons' (1.0 for a single daemon); a median below :data:`OUTLIER_FLOOR` counts as it.

    >>> fast = {"link": (1e-5, 1e-5), "inner": (2e-4, 1e-4)}
    >>> slow = {"link": (1e-5, 3e-5), "inner": (2e-4, 1e-4)}
    >>> outlier({0: fast, 1: fast, 2: slow})
    (2, 3.0)
    >>> outlier({0: fast})
    (0, 1.0)
    >>> noisy = {"link": (1e-5, 2e-5), "inner": (2e-4, 1e-4)}  # opening: 20x a 1 µs median
    >>> outlier({0: {**fast, "link": (1e-5, 1e-6)}, 1: {**fast, "link": (1e-5, 1e-6)}, 2: noisy})
    (2, 2.0)
    """
    import statistics

    worst, factor = min(measured), 1.0
    for node, costs in measured.items():
        others = [c for n, c in measured.items() if n != node]
        for kind, pair in costs.items():
            for side, value in enumerate(pair):
                if not others:
                    continue
                typical = statistics.median(float(c[kind][side]) for c in others)
                ratio = float(value) / max(typical, OUTLIER_FLOOR)
                if ratio > factor:
                    worst, factor = node, ratio
    return worst, round(factor, 2)


def _mean(run: Any, per: int, budget: float) -> Cost:
    """Mean ``(seal, open)`` seconds per item of batches of ``per`` items over ``budget``."""
    seal = open_ = 0.0
    count, stop = 0, time.perf_counter() + budget
    while count == 0 or (time.perf_counter() < stop and count < 10_000):
        s, o = run()
        seal, open_, count = seal + s, open_ + o, count + per
    return seal / count, open_ / count


def _hops(plan: Any) -> list[tuple[str, str, str, dict[str, float]]]:
    """``(sender, receiver, mode, frames)`` per hop: ``frames`` holds ``per_node`` (frames
    per sending node), ``total`` (cap on the hop, its ``dummies`` apart),
    ``dummies_per_node`` and ``per_receiver`` (the most frames, dummies included, that one
    receiving node can get in the hop whatever the data; see the module docstring).

    Every frame a hop's senders emit is sent, real or dummy (the wire shows the counts), so
    these counts are fixed by the plan; only *which* receiver gets a data-routed frame
    depends on the data, and the cap says how far that can go.
    """
    largest = max(g.size for g in plan.groups)
    hops: list[tuple[str, str, str, dict[str, float]]] = []
    for r in plan.routes:
        senders, receivers = plan.group(r.sender).size, plan.group(r.receiver).size
        p = r.protection
        if r.kind == "data":
            layer = p.scrambler if p is not None else None
            flood = p.local_dummies if p is not None else 0
            if layer is None:
                total = senders * (1.0 + flood)
                # Flooding: the d dummies go to distinct targets other than the message's
                # own, so one source sends a target at most one frame.
                cap = float(senders) if flood else total
                frames = {"per_node": 1.0 + flood, "total": total, "per_receiver": cap}
                hops.append((r.sender, r.receiver, "plain", frames))
                continue
            count = layer.scrambler_count(senders)
            extra = count * layer.dummies
            # Source i sends its one onion (real or sampled dummy) to scrambler i // n.
            onions = {"per_node": 1.0, "total": senders}
            onions["per_receiver"] = float(min(layer.per_scrambler, senders))
            hops.append((r.sender, layer.group, "onion", onions))
            forwards = {"per_node": layer.per_scrambler, "total": senders, "dummies": extra}
            forwards["dummies_per_node"] = layer.dummies
            # Uncapped dummies are uniform over the targets and the reals follow the data:
            # all may reach one target. Capped: at most a scrambler's inputs per target.
            forwards["per_receiver"] = float(senders) if layer.cap else senders + extra
            hops.append((layer.group, r.receiver, "forward", forwards))
        else:
            hops.append(
                (r.sender, r.receiver, "plain", _fixed_hop(r.kind, senders, receivers, largest))
            )
    return hops


def _fixed_hop(kind: str, senders: int, receivers: int, largest: int) -> dict[str, float]:
    """Frames of a data-independent hop (:func:`_hops`): sender ``i`` of a ``fixed`` route
    sends one frame to receiver ``i * R // S``; ``broadcast`` one to every receiver;
    ``fanout`` one to each receiver in all; ``stream`` at most the largest group's rows,
    spread over the receivers by the sender's row count (bounded by the whole hop)."""
    if kind == "fixed":
        total = float(senders)
        return {"per_node": 1.0, "total": total, "per_receiver": float(-(-senders // receivers))}
    if kind == "broadcast":
        per = float(receivers)
        return {"per_node": per, "total": senders * per, "per_receiver": float(senders)}
    if kind == "fanout":
        each = float(receivers)
        return {"per_node": each, "total": each, "per_receiver": 1.0}
    each = float(largest)
    return {"per_node": each, "total": each, "per_receiver": each}


def host_work(job: Any, placement: Any, costs: dict[str, Cost]) -> float:
    """Seconds of wire work of the busiest host in the busiest phase of any round, whatever
    the data (:func:`round_work`)."""
    return max((max(pair) for pair in round_work(job, placement, costs)), default=0.0)


def half_work(job: Any, placement: Any, costs: dict[str, Cost]) -> tuple[float, float]:
    """Seconds of work of the busiest host in a send phase and in a program phase, over all
    rounds (:func:`round_work`)."""
    work = round_work(job, placement, costs)
    return max((s for s, _ in work), default=0.0), max((p for _, p in work), default=0.0)


def rounds_of(plan: Any) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """``(groups whose frames are sent, groups whose programs run)`` per round, in order.

    Mirrors the coordinators (:func:`closes_before`): the groups of one level of the plan
    (:meth:`levels <crowdhide.engine.plan.ExecutionPlan.levels>`: they exchange nothing) run
    together, one ``Run`` and one program window (:func:`windows_of`), levels in order; a
    group's frames are queued when it runs (every group with a hop of frames queues some,
    whatever the data) and a round closes, sending every queued frame, just before a level
    with a group that receives a hop from a queued group. A level that needs none of the
    queued frames runs in the same round as the previous one (the next window of the
    round's program phase). So the frames of independent groups (the two scrambler groups
    of a GROUP BY with two grouping sets, their two compute groups) share one send phase
    and their programs one window. The first level runs before any round. It depends on
    the plan only.

    >>> import numpy as np
    >>> from crowdhide.engine.library import named
    >>> from crowdhide.plans import PlanBuilder
    >>> b = PlanBuilder()
    >>> _ = b.sources("S", {"g": np.zeros(10, dtype=int), "h": np.zeros(10, dtype=int)})
    >>> _ = b.compute("C", size=2, process=named("compute.count", route="S->C", size=2))
    >>> _ = b.compute("D", size=2, process=named("compute.count", route="S->D", size=2))
    >>> _ = b.result("R", process=lambda inbox, rng: {})
    >>> _ = b.route("S", "C", by=named("route.column", column="g"))
    >>> _ = b.route("S", "D", by=named("route.column", column="h"))
    >>> _ = b.route("C", "R", kind="fixed")
    >>> _ = b.route("D", "R", kind="fixed")
    >>> rounds_of(b.build())
    [(('S',), ('C', 'D')), (('C', 'D'), ('R',))]
    """
    hops = _hops(plan)
    sends = {s for s, _, _, f in hops if f["total"] + f.get("dummies", 0.0) > 0}
    feeds = {(s, r) for s, r, _, _ in hops}
    rounds: list[tuple[tuple[str, ...], list[str]]] = []
    pending: list[str] = []  # groups run since the last close whose frames are queued
    for level in plan.groups_by_level():
        if any((p, g) in feeds for p in pending for g in level):
            rounds.append((tuple(pending), []))
            pending = []
        if rounds:
            rounds[-1][1].extend(level)
        pending.extend(g for g in level if g in sends)
    return [(senders, tuple(ran)) for senders, ran in rounds]


def windows_of(plan: Any, ran: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The program windows of a round that runs ``ran`` (:func:`rounds_of`): one per level,
    its groups run one after the other on each host within it.

    >>> import numpy as np
    >>> from crowdhide.engine.library import named
    >>> from crowdhide.plans import PlanBuilder
    >>> b = PlanBuilder()
    >>> _ = b.sources("S", {"g": np.zeros(10, dtype=int), "h": np.zeros(10, dtype=int)})
    >>> _ = b.compute("C", size=2, process=named("compute.count", route="S->C", size=2))
    >>> _ = b.compute("D", size=2, process=named("compute.count", route="S->D", size=2))
    >>> _ = b.route("S", "C", by=named("route.column", column="g"))
    >>> _ = b.route("S", "D", by=named("route.column", column="h"))
    >>> windows_of(b.build(), ("C", "D"))
    [('C', 'D')]
    """
    return [
        w for w in (tuple(g for g in level if g in ran) for level in plan.groups_by_level()) if w
    ]


def closes_before(plan: Any) -> frozenset[str]:
    """The groups before whose program the coordinators close the open round
    (:func:`rounds_of`: the groups of the first level run in each round)."""
    return frozenset(g for _, ran in rounds_of(plan) for g in windows_of(plan, ran)[0])


def round_work(job: Any, placement: Any, costs: dict[str, Cost]) -> list[tuple[float, float]]:
    """Seconds of work of the busiest host in each round's send phase, and of its program
    phase: the sum over the round's program windows, one after the other, of the busiest
    host's work in each (:func:`round_detail`)."""
    return [(send, sum(programs)) for send, programs in round_detail(job, placement, costs)]


def round_detail(
    job: Any,
    placement: Any,
    costs: dict[str, Cost],
    rounds: list[tuple[tuple[str, ...], tuple[str, ...]]] | None = None,
) -> list[tuple[float, tuple[float, ...]]]:
    """Seconds of work of the busiest host in each round's send phase, and in each of its
    program windows (the groups of one level, :func:`windows_of`, run one after the other
    on a host: their work adds up there), whatever the data (``rounds``:
    :func:`rounds_of`).

    The send phase of a round holds the link sealing of the frames sent in it on their
    senders' hosts and their opening (a ``FORWARD`` down to its inner body) on arrival; a
    group's program decodes what it received and encodes what it emits, with the inner
    bodies it seals (an ``ONION``'s, a scrambler dummy's). Hops, caps and placement as in
    the module docstring.
    """
    nodes_on = _nodes_on(job, placement)
    hops = _hops(job.plan)
    out = []
    for sending, ran in rounds_of(job.plan) if rounds is None else rounds:
        send: dict[int, float] = defaultdict(float)
        for sender, receiver, mode, frames in hops:
            if sender in sending:
                for h, sent, made, got in _per_host(nodes_on, sender, receiver, frames):
                    send[h] += (sent + made) * (costs["link"][0] + ALLOWANCE)
                    unwrap = costs["inner"][1] if mode == "forward" else 0.0
                    send[h] += got * (costs["link"][1] + unwrap + ALLOWANCE)
        windows = windows_of(job.plan, ran)
        programs = tuple(_program_work(nodes_on, hops, window, costs) for window in windows)
        out.append((max(send.values(), default=0.0), programs))
    return out


def _per_host(
    nodes_on: dict[tuple[str, int], int], sender: str, receiver: str, frames: dict[str, float]
) -> list[tuple[int, float, float, float]]:
    """``(host, frames sent, dummies made, frames received)`` of one hop on each host: what
    the sending nodes there emit (up to the hop) and what the receiving nodes there can get
    (their caps, :func:`_received`)."""
    out = []
    for (group, h), here in nodes_on.items():
        if group == sender:
            sent = min(frames["total"], here * frames["per_node"])
            made = min(frames.get("dummies", 0.0), here * frames.get("dummies_per_node", 0.0))
            out.append((h, sent, made, 0.0))
        if group == receiver:
            out.append((h, 0.0, 0.0, _received(frames, here)))
    return out


def _program_work(
    nodes_on: dict[tuple[str, int], int],
    hops: list[tuple[str, str, str, dict[str, float]]],
    groups: tuple[str, ...],
    costs: dict[str, Cost],
) -> float:
    """Seconds of the busiest host's work in the programs of ``groups`` (run one after the
    other on each host): encoding the frames they emit (sealing an onion's inner body, or
    a scrambler dummy's) and decoding the frames they received."""
    work: dict[int, float] = defaultdict(float)
    for sender, receiver, mode, frames in hops:
        if sender not in groups and receiver not in groups:
            continue
        for h, sent, made, got in _per_host(nodes_on, sender, receiver, frames):
            if sender in groups:
                inner = sent if mode == "onion" else made
                work[h] += (sent + made) * ALLOWANCE + inner * costs["inner"][0]
            if receiver in groups:
                work[h] += got * ALLOWANCE
    return max(work.values(), default=0.0)


def received(job: Any, placement: Any) -> dict[tuple[str, str, int], float]:
    """The most data frames each host can receive in each hop, whatever the data, keyed by
    ``(sender group, receiver group, host)`` (hops between the same groups add up).

    Examples
    --------
    >>> import numpy as np
    >>> from crowdhide.engine.backend import Job
    >>> from crowdhide.engine.library import named
    >>> from crowdhide.plans import PlanBuilder, protect
    >>> from crowdhide.backends.tls.placement import Placement
    >>> b = PlanBuilder()
    >>> _ = b.sources("S", {"g": np.zeros(100, dtype=int)})
    >>> _ = b.compute("C", size=4, process=named("compute.count", route="S->C", size=4))
    >>> _ = b.route("S", "C", by=named("route.column", column="g"))
    >>> plan = protect(b.build(), sigma=0.5, per_scrambler=10, dummies=3)
    >>> caps = received(Job(plan=plan, seed=0, block_size=5), Placement(hosts=2))
    >>> caps[("S", "S->C#scramblers", 0)], caps[("S->C#scramblers", "C", 0)]
    (50.0, 130.0)
    """
    nodes_on = _nodes_on(job, placement)
    out: dict[tuple[str, str, int], float] = defaultdict(float)
    for sender, receiver, _, frames in _hops(job.plan):
        for (group, h), here in nodes_on.items():
            if group == receiver:
                out[(sender, receiver, h)] += _received(frames, here)
    return dict(out)


def _received(frames: dict[str, float], here: int) -> float:
    """Frames of a hop that ``here`` receiving nodes on one host can get: which receiver a
    data-routed frame goes to depends on the data, so up to their caps (:func:`_hops`),
    never more than the hop."""
    return min(frames["total"] + frames.get("dummies", 0.0), here * frames["per_receiver"])


def _nodes_on(job: Any, placement: Any) -> dict[tuple[str, int], int]:
    """Nodes of each group on each host."""
    nodes_on: dict[tuple[str, int], int] = defaultdict(int)
    for group in job.plan.groups:
        for block in job.blocks(group.name):
            host = placement.host(job, group.name, block.index)
            nodes_on[(group.name, host)] += block.stop - block.start
    return nodes_on


def round_seconds(job: Any, placement: Any, *, costs: dict[str, Cost] | None = None) -> float:
    """The longest round of the default schedule (:func:`round_schedule`): what any one
    round may take. It depends on the plan, the placement and the machine, never on the
    data."""
    return longest(round_schedule(job, placement, costs=costs)[0])


def round_schedule(
    job: Any, placement: Any, *, costs: dict[str, Cost] | None = None
) -> tuple[tuple[Round, ...], str]:
    """The default schedule, one :class:`~crowdhide.backends.tls.schedule.Round` per round
    (:func:`rounds_of`), and one line saying how it was derived (the run report echoes it:
    it depends on this machine's load when the run began).

    Each round's send phase is :data:`FLOOR` plus :data:`MARGIN` times the busiest host's
    worst-case work in it, and so is its program phase (:func:`round_work`); the gap and the
    tail follow (:meth:`Round.sized <crowdhide.backends.tls.schedule.Round.sized>`).

    Examples
    --------
    >>> import numpy as np
    >>> from crowdhide.engine.backend import Job
    >>> from crowdhide.engine.library import named
    >>> from crowdhide.plans import PlanBuilder
    >>> from crowdhide.backends.tls.placement import Placement
    >>> b = PlanBuilder()
    >>> _ = b.sources("S", {"g": np.zeros(1000, dtype=int)})
    >>> _ = b.compute("C", size=3, process=named("compute.count", route="S->C", size=3))
    >>> _ = b.result("R", process=lambda inbox, rng: {})
    >>> _ = b.route("S", "C", by=named("route.column", column="g"))
    >>> _ = b.route("C", "R", kind="fixed")
    >>> job = Job(plan=b.build(), seed=0, block_size=100)
    >>> costs = {"link": (1e-4, 1e-4), "inner": (1e-3, 1e-3)}
    >>> rounds, basis = round_schedule(job, Placement(hosts=2, rule="spread"), costs=costs)
    >>> [r.length for r in rounds]
    [1.772, 0.815]
    >>> basis.split(";")[0].split(" (")[0]
    'default, per round: sends 0.25 s + 3.0 x work, programs 0.25 s + 3.0 x work'
    """
    from crowdhide.backends.tls import codec

    if costs is None:
        costs = frame_costs(codec.frame_for(job.plan))
    detail = round_detail(job, placement, costs)
    figures = ", ".join(
        f"({s:.3g} s, {' + '.join(f'{x:.3g}' for x in p) or '0'} s)" for s, p in detail
    )
    basis = (
        f"default, per round: sends {FLOOR} s + {MARGIN} x work, programs {FLOOR} s + "
        f"{MARGIN} x work (a window per level); work = the busiest host's worst-case (sends, "
        f"programs) per round [{figures}] at the frame costs measured as the run began"
    )
    return sized_rounds(detail), basis


def sized_rounds(detail: list[tuple[float, tuple[float, ...]]]) -> tuple[Round, ...]:
    """One :class:`~crowdhide.backends.tls.schedule.Round` per round of ``detail``
    (:func:`round_detail`): its send phase :data:`FLOOR` plus :data:`MARGIN` times its work,
    and so each program window."""
    return tuple(
        Round.sized(FLOOR + MARGIN * send, [FLOOR + MARGIN * p for p in programs] or [FLOOR])
        for send, programs in detail
    )


def given_schedule(plan: Any, length: float) -> tuple[Round, ...]:
    """The schedule for a round length the user gave (``--round-seconds``): every round of
    ``plan`` (:func:`rounds_of`) lasts ``length``, its phases at fixed fractions, the
    program phase in one window per level run in the round
    (:meth:`Round.given <crowdhide.backends.tls.schedule.Round.given>`)."""
    return tuple(
        Round.given(length, groups=len(windows_of(plan, ran))) for _, ran in rounds_of(plan)
    )
