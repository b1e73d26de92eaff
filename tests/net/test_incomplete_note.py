"""A lossy tls run's report says it was incomplete (issue #27 item 6); the namespace test
(tests/net/test_faults.py, slow) checks it end to end, this one without namespaces."""

from __future__ import annotations

from typing import Any

import pytest

from crowdhide.plans.runner import _backend_notes, incomplete_note
from crowdhide.plans.spec import parse_spec

SPEC = {"data": {"generator": "diabetes", "rows": 100}, "query": {"kind": "aggregate",
        "sql": "SELECT age_range, COUNT(*) FROM D GROUP BY age_range"},
        "countermeasures": {"sigma": 0.0}}  # fmt: skip

LOSSLESS: dict[str, Any] = {
    "messages_lost": 0,
    "dead_hosts": [],
    "lost_blocks": [],
    "suspect_hosts": [],
    "complete": True,
}


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"messages_lost": 7}, "7 frames lost"),
        ({"dead_hosts": [3]}, "dead nodes [3]"),
        ({"lost_blocks": [["S", 1], ["S", 2]]}, "2 blocks not run"),
        ({"suspect_hosts": [1]}, "suspect nodes [1]"),
    ],
)
def test_a_lossy_run_has_a_first_note_saying_so(
    tmp_path: Any, change: dict[str, Any], words: str
) -> None:
    spec = parse_spec(SPEC, base=tmp_path)
    record = {**LOSSLESS, **change, "complete": False}
    notes = _backend_notes(spec, "tls", {"hosts": 3}, record)
    assert notes[0].startswith("INCOMPLETE RUN (")
    assert words in notes[0]
    assert notes[0] == incomplete_note(record)
    clean = _backend_notes(spec, "tls", {"hosts": 3}, LOSSLESS)
    assert not any("INCOMPLETE" in n for n in clean)
