"""Fuzz audit: thousands of fuzzed ``crowdhide`` command lines, each in its own process.

    python -m tests.cli.fuzz_audit --runs 2000 --workers 2 --out /tmp/fuzz-audit

Cases: every CLI command with options drawn by :mod:`tests.cli.fuzz_support` (as the pytest
fuzz does), and ``plan``/``run`` on mutated plan files x data-file variants x options x backends
(:mod:`tests.cli.fuzz_plans`; ``--remote N`` adds N cases each on the ``tls`` and ``ray``
backends). Each command line runs in a child process: forked from a parent that has imported
crowdhide once (fast), or started afresh for the remote backends. Each outcome is classified:

- ``ok``: exit 0, or 3 (target not met, as documented);
- ``user_error``: exit 2 with exactly one line on stderr;
- ``traceback``: a traceback on either stream, exit 1, or death by a signal (SIGSEGV, ...);
- ``bad_error``: any other exit code, or exit 2 without exactly one line on stderr;
- ``hang``: more than ``--work`` CPU seconds (the work bound: load does not stretch it) or more
  than the wall-clock backstop (scaled by the machine's measured slowdown, for idle waits);
- ``wrong``: JSON output holding NaN or inf;
- ``ignored``: the oracle for silently ignored input. For a share of the ``ok`` runs a twin is
  run with exactly one thing changed (one option value, one flag, one numeric plan key); if the
  twin also succeeds and prints the same output (answer and echoed inputs, after removing
  timings and the run's folder), the changed input was ignored: it changed neither the answer
  nor the echo nor the exit code.

Prints the counts per class and every finding that is neither ``ok`` nor ``user_error``
(command line + symptom); writes ``results.jsonl`` and ``summary.json`` under ``--out``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import re
import resource
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as fixed_seed
from hypothesis import strategies as st

from tests.cli.fuzz_plans import BASES, PlanCase, data_variants, nudged, plan_case
from tests.cli.fuzz_support import (
    Command,
    Files,
    Param,
    argv_strategy,
    discover,
    make_files,
    value_strategy,
)

T = TypeVar("T")
CLASSES = ("ok", "user_error", "traceback", "bad_error", "hang", "wrong", "ignored")
#: Options whose change is invisible on stdout by design (where files go, output format).
NO_TWIN = frozenset({"--json", "--out", "--help", "--ledger", "--pki", "--data"})
TIMING = re.compile(
    r"(?i)(\d+(\.\d+)?(e-?\d+)?\s*(s|ms|sec|seconds)\b)|(\"?(seconds|elapsed|wall|duration|time)[\w\"]*\"?:?\s*[\d.e+-]+)"
)


@dataclass(frozen=True)
class Case:
    """One command line to run; ``plan`` (if any) is written to ``plan.toml`` in its folder."""

    argv: tuple[str, ...]
    kind: str  # cli | plan | remote
    plan: PlanCase | None = None
    twin_of: int | None = None
    changed: str = ""


@dataclass
class Result:
    case: Case
    code: int | None
    signal: int | None
    out: str
    err: str
    cpu: float
    wall: float
    killed: str = ""
    cls: str = ""
    symptom: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def draw_many(strategy: st.SearchStrategy[T], n: int, seed: int) -> list[T]:
    """``n`` examples of a strategy (Hypothesis's generator, no shrinking, reproducible)."""
    found: list[T] = []

    @settings(
        max_examples=n,
        database=None,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @fixed_seed(seed)
    @given(strategy)
    def collect(value: T) -> None:
        found.append(value)

    collect()
    return found


def _options_only(cmd: Command) -> Command:
    return Command(cmd.path, tuple(p for p in cmd.params if not p.positional))


def make_cases(args: argparse.Namespace, files: Files, data: dict[str, Path]) -> list[Case]:
    """The primary cases: CLI option fuzz over every command, then mutated plans."""
    rng = random.Random(args.seed)
    commands = [c for c in discover() if c.id not in ("plan", "run")]
    n_plan = int(args.runs * args.plan_share)
    per_cmd = max(1, math.ceil((args.runs - n_plan) / len(commands)))
    cases: list[Case] = []
    for i, cmd in enumerate(commands):
        for argv in draw_many(argv_strategy(cmd, files), per_cmd, args.seed + i):
            cases.append(Case(tuple(argv), "cli"))
    by_id = {c.id: c for c in discover()}
    options = {
        name: draw_many(argv_strategy(_options_only(by_id[name]), files), n_plan, args.seed + 99)
        for name in ("plan", "run")
    }
    for i in range(n_plan):
        name = rng.choice(("plan", "run"))
        opts = _local_backend(list(options[name][i % len(options[name])][1:]))
        cases.append(Case((name, "@plan", *opts), "plan", plan_case(rng, data)))
    for backend in ("tls", "ray")[: 2 if args.remote else 0]:
        for _ in range(args.remote):
            case = plan_case(rng, data, raw=False)
            extra = ("--hosts", "2") if backend == "tls" else ("--shards", "2")
            cases.append(
                Case(("run", "@plan", "--backend", backend, "--json", *extra), "remote", case)
            )
    rng.shuffle(cases)
    return cases


def _local_backend(opts: list[str]) -> tuple[str, ...]:
    # The remote backends start clusters: only the few --remote cases use them.
    for i, token in enumerate(opts[:-1]):
        if token == "--backend" and opts[i + 1] not in ("local", "nope"):
            opts[i + 1] = "local"
    return tuple(opts)


# ---------------------------------------------------------------- running one case


def _case_dir(root: Path, index: int) -> Path:
    folder = root / "cases" / f"{index:05d}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _argv(case: Case, folder: Path) -> list[str]:
    if case.plan is not None:
        (folder / "plan.toml").write_text(case.plan.text, encoding="utf-8")
    return [str(folder / "plan.toml") if a == "@plan" else a for a in case.argv]


def _child(argv: list[str], folder: Path, work: float) -> None:
    """In the forked child: run the CLI with its streams on files; never returns."""
    code = 1
    try:
        os.setpgid(0, 0)
        os.chdir(folder)
        for fd, name in ((1, "stdout"), (2, "stderr")):
            handle = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(handle, fd)
            os.close(handle)
        resource.setrlimit(resource.RLIMIT_CPU, (math.ceil(work), math.ceil(work) + 5))
        from crowdhide.cli import main

        code = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _spawn(case: Case, folder: Path, work: float) -> int:
    argv = _argv(case, folder)
    if case.kind == "remote":  # a fresh interpreter: clusters and threads stay out of the parent
        code = "import sys; from crowdhide.cli import main; sys.exit(main(sys.argv[1:]))"
        limit = math.ceil(work)

        def limits() -> None:
            resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 5))

        with open(folder / "stdout", "wb") as out, open(folder / "stderr", "wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-c", code, *argv],
                cwd=folder,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=limits,
            )
        return proc.pid
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(argv, folder, work)
    return pid


def _read(folder: Path, name: str) -> str:
    try:
        return (folder / name).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


# ---------------------------------------------------------------- classification


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def classify(res: Result) -> tuple[str, str]:
    """The class of an outcome and its symptom (one line)."""
    text = res.out + res.err
    last = (res.err.strip().splitlines() or [""])[-1][:200]
    if res.killed:
        return "hang", f"{res.killed} (cpu {res.cpu:.1f} s, wall {res.wall:.1f} s)"
    if "Traceback" in text or res.code == 1 or res.signal is not None:
        sig = f"signal {signal.Signals(res.signal).name}; " if res.signal else ""
        return "traceback", f"{sig}exit {res.code}: {last}"
    if res.code == 2:
        lines = res.err.count("\n")
        if lines == 1 and res.err.endswith("\n"):
            return "user_error", res.err.strip()[:200]
        return "bad_error", f"exit 2 with {lines} lines on stderr: {last}"
    if res.code not in (0, 3):
        return "bad_error", f"exit {res.code}: {last}"
    if "--json" in res.case.argv and res.out.strip():
        try:
            parsed = json.loads(res.out)
        except ValueError:
            return "wrong", "--json output is not JSON"
        if not _finite(parsed):
            return "wrong", "NaN/inf in the JSON output"
    return "ok", ""


def normalized(res: Result, folder: Path) -> str:
    """Output with timings and the case's folder removed, for the twin comparison."""
    text = f"exit {res.code}\n{res.out}\n{res.err}".replace(str(folder), "<CASE>")
    return TIMING.sub("<T>", text)


# ---------------------------------------------------------------- twins (ignored input)


def _values(cmd: Command, param: Param, files: Files, seed: int) -> list[str]:
    return draw_many(value_strategy(cmd, param, files), 12, seed)


def _differs(a: str, b: str) -> bool:
    try:
        x, y = float(a), float(b)
    except ValueError:
        return a.strip() != b.strip()
    if math.isnan(x) or math.isnan(y):
        return not (math.isnan(x) and math.isnan(y))
    return not math.isclose(x, y, rel_tol=1e-2, abs_tol=1e-300)


class Twins:
    """Builds the twin of an ``ok`` case: the same command with exactly one input changed."""

    def __init__(self, files: Files, seed: int) -> None:
        self.files = files
        self.rng = random.Random(seed + 7)
        self.commands = {c.path: c for c in discover()}
        self.cache: dict[tuple[tuple[str, ...], str], list[str]] = {}

    def of(self, case: Case, index: int) -> Case | None:
        if case.kind == "plan" and case.plan is not None and self.rng.random() < 0.5:
            return self._plan_twin(case, index)
        cmd = self.commands.get(tuple(case.argv[:2])) or self.commands.get(tuple(case.argv[:1]))
        if cmd is None:
            return None
        argv = list(case.argv)
        present = [p for p in cmd.params if not p.positional and p.opts[0] in argv]
        present = [p for p in present if p.opts[0] not in NO_TWIN and p.kind != "path"]
        if not present:
            return None
        param = self.rng.choice(present)
        at = argv.index(param.opts[0])
        if param.kind == "flag":
            del argv[at]
            return Case(tuple(argv), case.kind, case.plan, index, f"{param.opts[0]} removed")
        key = (cmd.path, param.name)
        if key not in self.cache:
            self.cache[key] = _values(cmd, param, self.files, len(self.cache))
        old = argv[at + 1]
        options = [v for v in self.cache[key] if _differs(v, old)]
        if not options:
            return None
        argv[at + 1] = self.rng.choice(options)
        changed = f"{param.opts[0]} {old!r} -> {argv[at + 1]!r}"
        return Case(tuple(argv), case.kind, case.plan, index, changed)

    def _plan_twin(self, case: Case, index: int) -> Case | None:
        import tomllib

        assert case.plan is not None
        try:
            plan = tomllib.loads(case.plan.text)
        except tomllib.TOMLDecodeError:
            return None
        numeric = [
            (s, k)
            for s, body in plan.items()
            if isinstance(body, dict) and s in BASES[case.plan.base]
            for k, v in body.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        ]
        if not numeric:
            return None
        section, key = self.rng.choice(numeric)
        old = plan[section][key]
        plan[section][key] = nudged(old, self.rng)
        from tests.cli.fuzz_plans import dump_toml

        text = dump_toml(plan)
        changed = f"plan {section}.{key} {old!r} -> {plan[section][key]!r}"
        return Case(case.argv, case.kind, replace(case.plan, text=text), index, changed)


# ---------------------------------------------------------------- the run loop


def calibrate() -> float:
    """Wall/CPU ratio of a fixed CPU-bound task now: how much load stretches wall time."""
    wall, cpu = time.perf_counter(), time.process_time()
    total = 0
    for i in range(3_000_000):
        total += i * i % 7
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return max(1.0, wall / max(cpu, 1e-3))


@dataclass
class Running:
    pid: int
    index: int
    case: Case
    folder: Path
    started: float


def _reap(job: Running, status: int, usage: Any) -> Result:
    code = os.waitstatus_to_exitcode(status)
    sig = -code if code < 0 else None
    cpu = usage.ru_utime + usage.ru_stime
    res = Result(
        job.case,
        None if sig else code,
        sig,
        _read(job.folder, "stdout"),
        _read(job.folder, "stderr"),
        cpu,
        time.perf_counter() - job.started,
    )
    if sig == signal.SIGXCPU:
        res.killed, res.signal = "work bound (CPU limit)", None
    return res


def run_all(
    cases: list[Case], args: argparse.Namespace, twins: Twins, log: Callable[[Result], None]
) -> list[Result]:
    """Run cases (and the twins they call for) on ``args.workers`` processes at a time."""
    root = Path(args.out)
    queue = list(enumerate(cases))
    next_index = len(cases)
    running: dict[int, Running] = {}
    results: dict[int, Result] = {}
    deadline = time.perf_counter() + args.budget
    while queue or running:
        while queue and len(running) < args.workers and time.perf_counter() < deadline:
            index, case = queue.pop(0)
            folder = _case_dir(root, index)
            pid = _spawn(case, folder, args.work)
            running[pid] = Running(pid, index, case, folder, time.perf_counter())
        if not running:
            break
        time.sleep(0.02)
        for pid, job in list(running.items()):
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done == 0:
                if time.perf_counter() - job.started > args.wall:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(pid, signal.SIGKILL)
                    _, status, usage = os.wait4(pid, 0)
                    res = _reap(job, status, usage)
                    res.killed, res.signal = f"wall-clock backstop {args.wall:.0f} s", None
                else:
                    continue
            else:
                res = _reap(job, status, usage)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)  # leftovers of the run (node hosts)
            del running[pid]
            res.cls, res.symptom = classify(res)
            res.extra["norm"] = normalized(res, job.folder)
            results[job.index] = res
            twin = _twin_verdict(res, job, results, twins, args)
            if isinstance(twin, Case) and time.perf_counter() < deadline:
                queue.insert(0, (next_index, twin))
                next_index += 1
            log(res)
    return [results[i] for i in sorted(results)]


def _twin_verdict(
    res: Result, job: Running, results: dict[int, Result], twins: Twins, args: argparse.Namespace
) -> Case | None:
    """For a twin: mark it ``ignored`` if it printed what its original printed; for an ``ok``
    primary: the twin to run (a share of them)."""
    case = job.case
    if case.twin_of is not None:
        first = results.get(case.twin_of)
        if (
            first
            and first.cls == "ok"
            and res.cls == "ok"
            and first.extra["norm"] == res.extra["norm"]
        ):
            res.cls = "ignored"
            res.symptom = f"{case.changed}: same output as without the change"
        return None
    if res.cls == "ok" and twins.rng.random() < args.twin_share:
        return twins.of(case, job.index)
    return None


def _command_line(case: Case) -> str:
    line = "crowdhide " + shlex.join(case.argv)
    if case.plan is not None:
        muts = "; ".join(case.plan.mutations) or "unmutated"
        line += f"   [plan {case.plan.base}: {muts}; data {case.plan.data}]"
    return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=2000, help="primary command lines")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="fuzz-audit")
    parser.add_argument("--plan-share", type=float, default=0.4)
    parser.add_argument("--twin-share", type=float, default=0.5)
    parser.add_argument("--remote", type=int, default=3, help="cases on each of tls and ray")
    parser.add_argument("--work", type=float, default=60.0, help="CPU seconds per run")
    parser.add_argument("--wall", type=float, default=0.0, help="wall backstop (0: 60 s x load)")
    parser.add_argument("--budget", type=float, default=2400.0, help="stop starting runs after")
    args = parser.parse_args(argv)
    root = Path(args.out).resolve()
    args.out = str(root)
    (root / "files").mkdir(parents=True, exist_ok=True)
    slowdown = calibrate()
    args.wall = args.wall or max(120.0, 60.0 * slowdown * 2)
    files = make_files(root / "files")
    data = data_variants(root / "files")
    _preload()
    cases = make_cases(args, files, data)
    print(
        f"fuzz audit: {len(cases)} primary cases, slowdown x{slowdown:.1f}, "
        f"work bound {args.work:.0f} s CPU, wall backstop {args.wall:.0f} s",
        flush=True,
    )
    log_file = (root / "results.jsonl").open("w", encoding="utf-8")
    started = time.perf_counter()

    def log(res: Result) -> None:
        row = {
            "class": res.cls,
            "symptom": res.symptom,
            "cmd": _command_line(res.case),
            "code": res.code,
            "cpu": round(res.cpu, 2),
            "wall": round(res.wall, 2),
            "twin_of": res.case.twin_of,
        }
        log_file.write(json.dumps(row) + "\n")
        log_file.flush()

    results = run_all(cases, args, Twins(files, args.seed), log)
    log_file.close()
    return _report(results, root, time.perf_counter() - started, slowdown)


def _preload() -> None:
    # Imported once in the parent so that each forked run starts warm.
    import duckdb  # noqa: F401
    import scipy.optimize
    import scipy.special
    import scipy.stats  # noqa: F401

    import crowdhide.cli

    crowdhide.cli.build_app()


def _report(results: list[Result], root: Path, seconds: float, slowdown: float) -> int:
    counts = Counter(r.cls for r in results)
    primaries = sum(r.case.twin_of is None for r in results)
    slow = [r for r in results if r.wall > 60 and r.cls != "hang"]
    summary = {
        "runs": len(results), "primary": primaries, "twins": len(results) - primaries,
        "classes": {c: counts.get(c, 0) for c in CLASSES}, "seconds": round(seconds, 1),
        "slowdown": round(slowdown, 2), "max_cpu": round(max(r.cpu for r in results), 1),
        "over_60s_wall_not_hang": len(slow),
        "by_kind": dict(Counter(r.case.kind for r in results)),
    }  # fmt: skip
    (root / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    print(json.dumps(summary, indent=2))
    bad = [r for r in results if r.cls not in ("ok", "user_error")]
    for res in bad:
        print(f"[{res.cls}] {_command_line(res.case)}\n    -> {res.symptom}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
