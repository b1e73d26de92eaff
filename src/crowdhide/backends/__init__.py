"""The backends wing: every implementation of the engine's backend contract, side by side.

* :mod:`crowdhide.backends.local` — :class:`~crowdhide.backends.local.LocalBackend`, blocks
  run in this process one at a time (the default);
* :mod:`crowdhide.backends.ray` — ``RayBackend``, one Ray actor per shard (extra ``ray``);
* :mod:`crowdhide.backends.tls` — ``TlsBackend``, node programs in node-host processes
  linked by mutual TLS 1.3.

The contract (``Backend``, ``Job``, ``BlockReport``, ``deliver``, ``report_of``) lives in
:mod:`crowdhide.engine.backend`; the engine's executor takes a backend *object* and never
chooses one. :func:`make_backend` here is the one place that chooses a backend by name, so
no backend module imports another and ``ray`` / ``cryptography`` load only when asked for.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import numpy as np

from crowdhide._extras import require
from crowdhide.backends.local import LocalBackend
from crowdhide.engine.backend import Backend
from crowdhide.engine.executor import Execution, ProgressCallback
from crowdhide.engine.executor import execute as _engine_execute
from crowdhide.engine.plan import ExecutionPlan
from crowdhide.errors import InvalidParameterError

__all__ = ["BACKENDS", "LocalBackend", "execute", "make_backend"]

#: Backend names and the options each accepts (anything else is refused, never ignored).
BACKENDS: Mapping[str, frozenset[str]] = {
    "local": frozenset({"memory_budget"}),
    "ray": frozenset({"address", "object_store_memory"}),
    "tls": frozenset(
        {
            "hosts",
            "pki",
            "frame_size",
            "deadline",
            "on_missing",
            "observe",
            "netns",
            "placement",
            "round_seconds",
            "shared_seed",
            "directory",
            "ca",
            "state",
        }
    ),
}


def make_backend(name: str, **options: Any) -> Backend:
    """The backend called ``name``, built with ``options`` (``None`` values: not given).

    Parameters
    ----------
    name
        One of :data:`BACKENDS`.
    **options
        The backend's own options (e.g. ``address`` for Ray).

    Returns
    -------
    Backend
        The backend, ready for :func:`execute`.

    See Also
    --------
    execute : Runs a plan on a backend.

    Examples
    --------
    >>> make_backend("local").name
    'local'
    >>> make_backend("spark")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: backend must be one of (...), got 'spark'
    >>> make_backend("local", address="10.0.0.1:6379")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: address applies to backend 'ray' only, got '10.0...'
    """
    if name not in BACKENDS:
        raise InvalidParameterError(
            f"backend must be one of {tuple(BACKENDS)}, got {name!r}", parameter="name", value=name
        )
    given = {k: v for k, v in options.items() if v is not None}
    for key, value in given.items():
        if key not in BACKENDS[name]:
            owners = [n for n, keys in BACKENDS.items() if key in keys]
            where = f"backend {owners[0]!r} only" if len(owners) == 1 else f"backends {owners}"
            raise InvalidParameterError(
                f"{key} applies to {where}, got {value!r}", parameter=key, value=value
            )
    if name == "local":
        return LocalBackend(**given)
    if name == "ray":
        require("ray", purpose="backend 'ray'")  # MissingExtraError names the extra
        from crowdhide.backends.ray import RayBackend

        ray_backend: Backend = RayBackend(**given)
        return ray_backend
    if "directory" in given:  # running node daemons: the coordinator starts nothing
        if given.pop("shared_seed", False):
            raise InvalidParameterError(
                "shared_seed does not apply to a tls run on node daemons (directory): "
                "each daemon keys its blocks with its own secret randomness, got True",
                parameter="shared_seed",
                value=True,
            )
        spawn_only = sorted(set(given) & {"hosts", "pki", "observe", "netns"})
        if spawn_only or not {"ca", "state"} <= set(given):
            raise InvalidParameterError(
                f"a tls run on node daemons (directory) takes ca and state, not {spawn_only}",
                parameter="directory",
                value=spawn_only,
            )
        from crowdhide.backends.tls.coordinator import Coordinator

        coordinator: Backend = Coordinator(**given)
        return coordinator
    if {"ca", "state"} & set(given):
        raise InvalidParameterError(
            "ca and state apply to a tls run on node daemons (directory) only",
            parameter="ca",
            value=None,
        )
    from crowdhide.backends.tls.backend import TlsBackend

    tls_backend: Backend = TlsBackend(**given)
    return tls_backend


def execute(
    plan: ExecutionPlan,
    *,
    backend: Backend | str = "local",
    rng: np.random.Generator | int | None = None,
    shards: int = 1,
    block_size: int | None = None,
    address: str | None = None,
    keep: Collection[str] | None = None,
    keep_sources: bool = False,
    progress: ProgressCallback | None = None,
) -> Execution:
    """:func:`crowdhide.engine.execute` on ``backend``, a backend object or a name
    (:func:`make_backend`; ``address``: an existing Ray cluster, backend ``"ray"`` only).

    Parameters
    ----------
    plan
        The plan to run.
    backend
        A backend object or its name (``"local"``, ``"ray"``, ``"tls"``).
    rng, shards, block_size, keep, keep_sources, progress
        As for :func:`crowdhide.engine.execute` (``block_size=None``: the engine's default).
    address
        An existing Ray cluster (backend ``"ray"`` chosen by name only).

    Returns
    -------
    Execution
        The final states, the transcript and the routes' statistics.

    See Also
    --------
    crowdhide.engine.execute : The engine's own entry, given a backend object.
    make_backend : A backend by name.

    Examples
    --------
    >>> import numpy as np
    >>> from crowdhide.engine.plan import PlanBuilder
    >>> b = PlanBuilder()
    >>> _ = b.sources("S", {"g": np.arange(10) % 2})
    >>> _ = b.compute("C", size=2, process=lambda inbox, rng: {
    ...     "count": np.bincount(inbox.only("S->C").target, minlength=2)})
    >>> _ = b.route("S", "C", by=lambda s: s["g"])
    >>> execute(b.build(), rng=0).states["C"]["count"].tolist()
    [5, 5]
    """
    chosen = make_backend(backend, address=address) if isinstance(backend, str) else backend
    if address is not None and not isinstance(backend, str):
        raise InvalidParameterError(
            f"address applies to a backend chosen by name, got {address!r}",
            parameter="address",
            value=address,
        )
    extra: dict[str, Any] = {} if block_size is None else {"block_size": block_size}
    return _engine_execute(
        plan,
        backend=chosen,
        rng=rng,
        shards=shards,
        keep=keep,
        keep_sources=keep_sources,
        progress=progress,
        **extra,
    )
