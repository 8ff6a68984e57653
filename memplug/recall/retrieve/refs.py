"""Stored JSON lists as retrieval reads them (an item's conditions and numbers).

Event references, ``SESSION:SEQ`` and an item's source references, are read by the one
rule in :mod:`memplug.base.refs`.
"""

from __future__ import annotations

import json
from typing import Any


def json_list(raw: str | None) -> list[Any]:
    """A stored JSON list; anything else (bad JSON, another type) reads as empty."""
    try:
        value = json.loads(raw or "[]")
    except ValueError:
        return []
    return value if isinstance(value, list) else []
