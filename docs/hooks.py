"""MkDocs hook: the docstrings' Sphinx roles (``:class:`Client```) are shown as
plain code on the API pages, without the role's name."""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|data|attr|mod|exc|obj|const):(?=<code>)")


def on_page_content(html: str, **kwargs: Any) -> str:
    return _ROLE.sub("", html)
