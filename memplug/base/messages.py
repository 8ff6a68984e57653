"""The messages a host shows memplug at a step, and where each one's content came from.

Plain frozen dataclasses, not records (docs/architecture.md "Records"): the pydantic
boundary models in :mod:`memplug.base.models` nest them and validate them there, and pydantic
validates a dataclass natively. A Claude Code prompt hook builds these and assembles,
and must not import pydantic to do it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

TokenMeter = Callable[[str], int]


@dataclass(frozen=True)
class Source:
    """Where a message's content came from (``kind`` decides whether it is evidence)."""

    # Read by pydantic where a boundary model holds a Source: unknown keys are errors.
    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "forbid"}
    kind: str | None = None
    form: str | None = None


@dataclass(frozen=True)
class Message:
    """A message the model will see at this step (used for visible-text exclusion)."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "ignore"}
    role: str
    text: str = ""
    source: Source | None = None
