"""A griffe extension for the API reference: Sphinx roles in docstrings become code spans.

The docstrings cross-reference in Sphinx's syntax (``:func:`shuffle_epsilon```,
``:class:`~crowdhide.accounting.PrivacyStatement```), which Markdown would print verbatim. The
reference renders them as code, keeping the last component when the name starts with ``~``
(Sphinx's "short form"). The docstrings themselves are left as they are.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj):`(~?)([^`]+)`")


def _code(match: re.Match[str]) -> str:
    name = match.group(2)
    return f"`{name.rsplit('.', 1)[-1] if match.group(1) else name}`"


def plain(text: str) -> str:
    """``text`` with every Sphinx cross-reference role replaced by a code span.

    >>> plain("see :func:`f` and :class:`~a.b.C`")
    'see `f` and `C`'
    """
    return _ROLE.sub(_code, text)


class RstRoles(griffe.Extension):
    """Rewrites the docstring of every loaded object (see the module docstring)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)
