"""Default tls round schedules of the diabetes example, from the model only (nothing runs).

``python benchmarks/bench_round_schedule.py [--rows 100000 1000000] [--hosts 8]
[--link SEAL OPEN] [--inner SEAL OPEN]``

For each size: the rounds (``workload.rounds_of``: groups whose frames share a send phase,
groups whose programs run in the round), each round's worst-case work (sends, programs) on
the busiest host, the per-round schedule (``workload.round_schedule``) and, for comparison
on the same frame costs: the rounds of session 19 (one sending group per round: a round
closed before every group that followed queued frames, whether it needed them or not), and
the rule before it (one length for every round, ``2 x (0.25 s + 3 x the busiest phase of
any round)``, of which a program had 3/16). Frame costs are measured once here
(``workload.frame_costs``) unless given; the same costs serve every rule, so the ratios do
not depend on the machine's load.
"""

from __future__ import annotations

import argparse
import tomllib
from typing import Any

from crowdhide.backends.tls import workload
from crowdhide.backends.tls.placement import Placement, default_block_size
from crowdhide.engine.backend import Job
from crowdhide.plans.examples import example_path
from crowdhide.plans.runner import prepare
from crowdhide.plans.spec import parse_spec


def schedules(rows: int, hosts: int, costs: dict[str, Any]) -> dict[str, Any]:
    """The figures of one size (module docstring)."""
    path = example_path("diabetes")
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    raw["data"]["rows"] = rows
    raw.setdefault("run", {})["plots"] = False
    plan = prepare(parse_spec(raw, base=path.parent), backend="tls").plan
    block = default_block_size(plan, hosts)
    job = Job(plan=plan, seed=0, block_size=block)
    place = Placement(hosts=hosts, rule="spread")
    work = workload.round_work(job, place, costs)
    rounds, _ = workload.round_schedule(job, place, costs=costs)
    single = workload.round_detail(job, place, costs, rounds=one_sender_rounds(plan))
    one = round(2 * (workload.FLOOR + workload.MARGIN * max(max(w) for w in work)), 3)
    return {
        "rows": rows,
        "block": block,
        "senders": [s for s, _ in workload.rounds_of(plan)],
        "work": [(round(s, 3), round(p, 3)) for s, p in work],
        "before": [one] * len(rounds),
        "before_program_s": round(one * 3 / 16, 3),
        "s19_work": [(round(s, 3), round(sum(p), 3)) for s, p in single],
        "s19": [r.length for r in workload.sized_rounds(single)],
        "after": [r.length for r in rounds],
        "after_program_s": [round(r.reply - r.run, 3) for r in rounds],
        "after_share": [round(r.program_share, 3) for r in rounds],
    }


def one_sender_rounds(plan: Any) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """The rounds of session 19: running a group closed the open round whenever the
    previous group queued frames, so every sending group had a round of its own."""
    sends = {g for senders, _ in workload.rounds_of(plan) for g in senders}
    rounds: list[tuple[tuple[str, ...], list[str]]] = []
    previous = ""
    for group in plan.topological_groups():
        if previous in sends:
            rounds.append(((previous,), []))
        if rounds:
            rounds[-1][1].append(group.name)
        previous = group.name
    return [(sender, tuple(ran)) for sender, ran in rounds]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--link", type=float, nargs=2, metavar=("SEAL", "OPEN"))
    parser.add_argument("--inner", type=float, nargs=2, metavar=("SEAL", "OPEN"))
    args = parser.parse_args()
    costs: dict[str, Any] = workload.frame_costs(256)
    if args.link:
        costs["link"] = tuple(args.link)
    if args.inner:
        costs["inner"] = tuple(args.inner)
    shown = {k: tuple(f"{x:.3g}" for x in v) for k, v in costs.items()}
    print(f"frame costs (seal, open) s: {shown}")
    for rows in args.rows:
        f = schedules(rows, args.hosts, costs)
        print(
            f"{rows:,} users, {args.hosts} hosts, block {f['block']}, rounds sending {f['senders']}"
        )
        print(f"  work per round (sends, programs) s: {f['work']}")
        print(
            f"  before (one length): {f['before']} = {sum(f['before']):,.1f} s; "
            f"programs {f['before_program_s']} s (3/16)"
        )
        print(f"  s19 work per round (one sender each) s: {f['s19_work']}")
        print(f"  s19 (one sender per round): {f['s19']} = {sum(f['s19']):,.1f} s")
        print(f"  after (per round):   {f['after']} = {sum(f['after']):,.1f} s")
        print(f"  after / s19: {sum(f['after']) / sum(f['s19']):.3f}")
        print(f"  programs s: {f['after_program_s']}, share of the round: {f['after_share']}")


if __name__ == "__main__":
    main()
