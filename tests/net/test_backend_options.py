"""Backend options: make_backend refuses an option the chosen backend does not take, and the
tls backend's namespace placement is checked up front."""

from __future__ import annotations

import pytest

from crowdhide.backends import make_backend


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("local", {"hosts": 3}, "hosts applies to backend 'tls' only, got 3"),
        ("ray", {"memory_budget": 1}, "memory_budget applies to backend 'local' only, got 1"),
        ("tls", {"address": "a:1"}, "address applies to backend 'ray' only, got 'a:1'"),
        ("local", {"round_seconds": 1.0}, "round_seconds applies to backend 'tls' only, got 1.0"),
        ("tls", {"hosts": 2, "netns": [("a", "10.0.0.1")]}, "netns must name one"),
        ("local", {"shared_seed": True}, "shared_seed applies to backend 'tls' only, got True"),
        (
            "tls",
            {"directory": "d", "ca": "c", "state": "s", "shared_seed": True},
            "shared_seed does not apply to a tls run on node daemons",
        ),
        (
            "tls",
            {"hosts": 1, "netns": [("a", "10.0.0.1")], "observe": True},
            "observe applies to hosts on loopback only",
        ),
    ],
)
def test_options_are_refused_by_name(name: str, options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_backend(name, **options)


def test_none_means_not_given() -> None:
    assert make_backend("local", address=None, hosts=None).name == "local"
    tls = make_backend("tls", hosts=2, netns=[("a", "10.0.0.1"), ("b", "10.0.0.2")])
    assert tls.name == "tls"


def test_shared_seed_is_a_bool_and_secret_by_default() -> None:
    from crowdhide.backends.tls.backend import TlsBackend

    assert TlsBackend(hosts=1).shared_seed is False
    assert TlsBackend(hosts=1, shared_seed=True).shared_seed is True
    with pytest.raises(TypeError, match="shared_seed must be a bool"):
        TlsBackend(hosts=1, shared_seed=1)  # type: ignore[arg-type]
