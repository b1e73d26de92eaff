"""Test-only spy on the hosts' secrets: a ``sitecustomize`` that child processes import.

:func:`install` writes a ``sitecustomize.py`` into ``hooks`` that wraps
:func:`secrets.randbits` in every Python process started with ``hooks`` on its
``PYTHONPATH`` and ``CROWDHIDE_TEST_SECRETS`` set: each 256-bit draw is also written to a
file in that directory, named by the process id. The test then knows every secret a host
drew — which the hosts themselves never send — and scans what the driver or coordinator
received for it. Nothing of this is in the library.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["encodings", "install", "secrets_drawn"]

_HOOK = """
import os
import secrets

_out = os.environ.get("CROWDHIDE_TEST_SECRETS")
if _out:
    _draw = secrets.randbits

    def _spied(k):
        value = _draw(k)
        if k == 256:
            with open(os.path.join(_out, "%d-%x" % (os.getpid(), value)), "w"):
                pass
        return value

    secrets.randbits = _spied
"""


def install(hooks: Path, out: Path) -> dict[str, str]:
    """Write the hook into ``hooks``; return the environment variables that enable it."""
    hooks.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    (hooks / "sitecustomize.py").write_text(_HOOK, encoding="utf-8")
    return {"CROWDHIDE_TEST_SECRETS": str(out)}


def secrets_drawn(out: Path) -> list[int]:
    """Every 256-bit value drawn by a hooked process so far."""
    return [int(p.name.split("-", 1)[1], 16) for p in sorted(out.iterdir())]


def encodings(secret: int) -> list[bytes]:
    """The ways a secret could travel: raw bytes either order, decimal and hex text, and
    every 8-byte word of it (a partial leak, e.g. one uint64 of a key)."""
    raw = secret.to_bytes(32, "big")
    out = [raw, raw[::-1], str(secret).encode(), f"{secret:x}".encode(), f"{secret:064x}".encode()]
    for word in (raw, raw[::-1]):
        out += [word[i : i + 8] for i in range(0, 32, 8)]
    return out
