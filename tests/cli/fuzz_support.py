"""Command-line fuzzing support: discover every command and option, draw argument lists, run.

Commands and options are read from the Typer/click application itself, so a command added
later is fuzzed without touching this file. Values are drawn per option from its kind
(flag, integer, real, path, enum, free text); free-text candidates are mined from the option's
help text (``a | b | c``, ``one of a, b``) so that valid choices are hit often.

Every invocation runs in-process under two timers: a bound on the *work* done (CPU seconds of
this process, ``ITIMER_PROF``, which load on a shared machine does not stretch) and a generous
wall-clock backstop for waits that use no CPU. Either raises an exception deriving from
``BaseException`` (the CLI's ``except Exception`` cannot swallow it), counted as a hang.
"""

from __future__ import annotations

import contextlib
import enum
import io
import json
import math
import re
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import typer
from hypothesis import strategies as st

from crowdhide.cli import build_app, main
from tests.cli.fuzz_plans import SMALL_PLAN, UNMET_PLAN

#: Numbers that hit the edges: zero, negatives, tiny, huge, overflow, non-finite, garbage.
EDGE_NUMBERS = (
    "0", "1", "2", "3", "5", "-1", "-7", "0.5", "0.999", "1.5", "2.5", "10", "64", "100",
    "1000", "1e4", "1e6", "1e9", "1e12", "1e18", "1e308", "1e-300", "1e-12", "1e-6", "1e-4",
    "nan", "inf", "-inf", "abc", "",
)  # fmt: skip

#: Commands whose positional arguments are drawn from a fixed list (others: mined from help).
POSITIONAL_OVERRIDES: dict[tuple[str, ...], tuple[str, ...]] = {
    # Full reproductions take minutes by design; the fuzzer checks their argument handling.
    ("reproduce",): ("list", "no-such-experiment", ""),
}

#: Options whose values are drawn from a fixed list.
OPTION_OVERRIDES: dict[str, tuple[str, ...]] = {
    "--data": ("builtin:synthetic", "builtin:adult", "builtin:nope", "@csv", "@missing", "@dir"),
    "--column": ("bit", "unit", "age", "category", "value", "0", "1", "nope", ""),
    # Other backends start clusters or processes; the fuzzer stays on the local engine.
    "--backend": ("local", "nope"),
}


@dataclass(frozen=True)
class Param:
    """One parameter of a command: option (``opts``) or positional argument."""

    name: str
    opts: tuple[str, ...]
    positional: bool
    required: bool
    kind: str  # flag | int | real | path | enum | text
    choices: tuple[str, ...] = ()
    #: Documented range ("Range: [lo, hi]." in the help text), if any.
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Command:
    path: tuple[str, ...]
    params: tuple[Param, ...]

    @property
    def id(self) -> str:
        return " ".join(self.path)


def _kind(param: Any) -> tuple[str, tuple[str, ...]]:
    if getattr(param, "is_flag", False):
        return "flag", ()
    descriptor = getattr(param, "type_descriptor", None)
    annotation = getattr(descriptor, "annotation", None)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return "enum", tuple(str(m.value) for m in annotation)
    if annotation is int or getattr(param, "metavar", None) == "<int>":
        return "int", ()
    if annotation is float or getattr(param, "metavar", None) == "<float>":
        return "real", ()
    if annotation is Path:
        return "path", ()
    return "text", _mined(getattr(param, "help", "") or "")


def _mined(help_text: str) -> tuple[str, ...]:
    words = re.findall(r"[A-Za-z0-9][\w+\-:.]*", help_text)
    return tuple(dict.fromkeys(w.rstrip(".:") for w in words if len(w) < 40))


def discover() -> list[Command]:
    """Every leaf command of the application with its parameters."""
    root = typer.main.get_command(build_app())
    found: list[Command] = []

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in sorted(subs.items()):
                walk(sub, (*path, name))
            return
        params = []
        for p in cmd.params:
            if p.name == "help":
                continue
            kind, choices = _kind(p)
            positional = not any(o.startswith("-") for o in p.opts)
            low, high = _documented_range(getattr(p, "help", "") or "")
            params.append(
                Param(p.name, tuple(p.opts), positional, bool(p.required), kind, choices, low, high)
            )
        found.append(Command(path, tuple(params)))

    walk(root, ())
    return found


@dataclass
class Files:
    """Paths the fuzzer hands to path-like parameters."""

    root: Path
    plans: tuple[Path, ...] = field(default=())

    def pool(self) -> tuple[str, ...]:
        return (
            *(str(p) for p in self.plans),
            str(self.root / "missing.toml"),
            str(self.root / "dir"),
            str(self.root / "data.csv"),
            str(self.root / "out" / "new"),
            str(self.root / "new.csv"),
            str(self.root / "new.parquet"),
            str(self.root / "plot.png"),
            str(self.root / "data.csv" / "below-a-file"),
            "/proc/no-such-dir/out",
        )

    def resolve(self, value: str) -> str:
        mapping = {
            "@csv": self.root / "data.csv",
            "@missing": self.root / "missing.csv",
            "@dir": self.root / "dir",
        }
        return str(mapping.get(value, value))


def make_files(root: Path) -> Files:
    """Write the fuzzer's files under ``root``: a small CSV, a folder and three plans."""
    (root / "dir").mkdir(exist_ok=True)
    values = np.random.default_rng(0).integers(0, 2, size=50)
    (root / "data.csv").write_text(
        "value,bit\n" + "".join(f"{v},{v}\n" for v in values), encoding="utf-8"
    )
    plans = []
    for name, text in (("small", SMALL_PLAN), ("unmet", UNMET_PLAN), ("broken", "name = [")):
        path = root / f"{name}.toml"
        path.write_text(text, encoding="utf-8")
        plans.append(path)
    return Files(root=root, plans=tuple(plans))


def _documented_range(help_text: str) -> tuple[float | None, float | None]:
    match = re.search(r"Range: [\[(]([^,]+), ([^\])]+)[\])]", " ".join(help_text.split()))
    if not match:
        return None, None
    lo, hi = (float(x) for x in match.groups())
    return (lo if math.isfinite(lo) else None), (hi if math.isfinite(hi) else None)


def _in_range(param: Param) -> st.SearchStrategy[str]:
    """Values inside the documented range, biased towards small ones and the ends."""
    lo = -1e6 if param.low is None else param.low
    hi = 1e12 if param.high is None else param.high
    if param.kind == "int":
        a, b = math.ceil(lo), math.floor(hi)
        return st.one_of(
            st.integers(a, min(b, a + 50)),
            st.integers(a, min(b, a + 10**5)),
            st.integers(a, b),
            st.sampled_from([a, b]),
        ).map(str)
    return st.one_of(
        st.floats(lo, min(hi, lo + 3.0)),
        st.floats(lo, hi),
        st.sampled_from([lo, hi, (lo + hi) / 2]),
    ).map(repr)


def _number(param: Param) -> st.SearchStrategy[str]:
    ints = st.integers(min_value=-5, max_value=10**13).map(str)
    anything = st.one_of(st.sampled_from(EDGE_NUMBERS), ints)
    if param.kind == "real":
        floats = st.floats(allow_nan=True, allow_infinity=True).map(repr)
        anything = st.one_of(anything, floats)
    # Mostly valid values, so that the fuzzer reaches the computations, not just the parser.
    return st.one_of(_in_range(param), _in_range(param), _in_range(param), anything)


def value_strategy(cmd: Command, param: Param, files: Files) -> st.SearchStrategy[str]:
    """Text for one parameter value."""
    if param.positional and cmd.path in POSITIONAL_OVERRIDES:
        return st.sampled_from(POSITIONAL_OVERRIDES[cmd.path])
    override = next((OPTION_OVERRIDES[o] for o in param.opts if o in OPTION_OVERRIDES), None)
    if override is not None:
        return st.sampled_from(override).map(files.resolve)
    if param.kind in ("int", "real"):
        return _number(param)
    if param.kind == "path":
        return st.sampled_from(files.pool())
    if param.kind == "enum":
        return st.one_of(st.sampled_from(param.choices), st.just("bogus"))
    junk = st.text(alphabet="abcxyz019,-.+ ", min_size=0, max_size=12)
    mined = param.choices or ("x",)
    return st.one_of(st.sampled_from(mined), junk, st.sampled_from(EDGE_NUMBERS))


@st.composite
def argv_strategy(draw: st.DrawFn, cmd: Command, files: Files) -> list[str]:
    """An argument list for ``cmd``: required options usually present, others sometimes."""
    args = list(cmd.path)
    for param in cmd.params:
        if param.kind == "flag":
            if draw(st.booleans()):
                args.append(param.opts[0])
            continue
        present = draw(st.floats(0, 1)) < (0.98 if param.required else 0.4)
        if not present:
            continue
        value = draw(value_strategy(cmd, param, files))
        if param.positional:
            args.append(value)
        else:
            args += [param.opts[0], value]
    return args


class Hang(BaseException):
    """Raised by the alarm: the invocation exceeded its time bound."""


@dataclass(frozen=True)
class Outcome:
    argv: tuple[str, ...]
    code: int | None
    out: str
    err: str
    seconds: float
    hang: bool
    #: CPU seconds the invocation used (the work bound's measure).
    cpu_seconds: float = 0.0


#: Work bound per invocation, in CPU seconds of the process: the slowest valid runs need ~15 s
#: of CPU; the hangs this guards against took many minutes.
WORK_SECONDS = 60.0
#: Wall-clock backstop for waits that use no CPU (a stuck connection): generous, so that load
#: on a shared machine (which stretches wall time, not work) never trips it.
WALL_SECONDS = 600.0


@contextlib.contextmanager
def _bounded(work: float, wall: float) -> Iterator[None]:
    def fire(signum: int, frame: Any) -> None:
        what = "CPU" if signum == signal.SIGPROF else "wall-clock"
        raise Hang(f"exceeded {work if signum == signal.SIGPROF else wall} s of {what} time")

    previous = {sig: signal.signal(sig, fire) for sig in (signal.SIGPROF, signal.SIGALRM)}
    signal.setitimer(signal.ITIMER_PROF, work)
    signal.setitimer(signal.ITIMER_REAL, wall)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def invoke(
    argv: list[str], *, timeout: float = WORK_SECONDS, wall: float = WALL_SECONDS
) -> Outcome:
    """Run ``crowdhide argv`` in-process, capturing both streams.

    ``timeout`` bounds the work (CPU seconds of this process), ``wall`` the elapsed time.
    """
    out, err = io.StringIO(), io.StringIO()
    started = time.perf_counter()
    cpu_started = time.process_time()
    code: int | None = None
    hang = False
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            with _bounded(timeout, wall):
                code = main(argv)
        except Hang:
            hang = True
    return Outcome(
        tuple(argv),
        code,
        out.getvalue(),
        err.getvalue(),
        time.perf_counter() - started,
        hang,
        time.process_time() - cpu_started,
    )


def _reject_constant(token: str) -> float:
    raise AssertionError(f"non-finite number {token} in JSON output")


def problems(outcome: Outcome, allowed: frozenset[int]) -> list[str]:
    """The invariants a fuzzed invocation must satisfy (empty list: all hold)."""
    found = []
    if outcome.hang:
        found.append(
            f"hang: no result within the bound ({outcome.cpu_seconds:.1f} s CPU, "
            f"{outcome.seconds:.1f} s wall)"
        )
    elif outcome.code not in allowed:
        found.append(f"exit code {outcome.code}")
    if "Traceback" in outcome.err or "Traceback" in outcome.out:
        found.append("traceback on output")
    if outcome.code == 0 and "--json" in outcome.argv and outcome.out.strip():
        try:
            _check_json(json.loads(outcome.out, parse_constant=_reject_constant))
        except (AssertionError, ValueError) as exc:
            found.append(f"bad JSON: {exc}")
    if outcome.code == 2 and outcome.err.count("\n") != 1:
        found.append("invalid input must give exactly one line on stderr")
    return found


def _check_json(value: Any) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise AssertionError(f"non-finite number {value}")
    if isinstance(value, dict):
        for v in value.values():
            _check_json(v)
    elif isinstance(value, list):
        for v in value:
            _check_json(v)
