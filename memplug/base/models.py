"""The host protocol: what a harness hands memplug, and what memplug hands back.

Every boundary is a validated model so that bad input fails here, with one line that
names the field and the problem (see :func:`describe_validation_error`). The events a
host commits are msgspec records (:mod:`memplug.base.events`), since every hook validates
them in a fresh process; the rest are pydantic models, which build their validators on
first use (``defer_build``).
"""

from __future__ import annotations

from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field

from memplug.base.errors import shown_value
from memplug.base.events import ContentBlock, HostEvent, parse_event
from memplug.base.messages import Message, Source, TokenMeter
from memplug.base.text import format_time
from memplug.base.vocab import MEMPLUG_SOURCE_FORM, MEMPLUG_SOURCE_KIND

# The step's messages are plain dataclasses (memplug.base.messages) and a host's events
# msgspec records (memplug.base.events); hosts import them here too.
__all__ = [
    "ContentBlock",
    "Decision",
    "HostEvent",
    "Injection",
    "Message",
    "Source",
    "StepContext",
    "TokenMeter",
    "ToolCall",
    "describe_validation_error",
    "format_time",
    "parse_event",
]


class StepContext(BaseModel):
    """What a host tells memplug before an agent step."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, defer_build=True)
    session_id: str = Field(min_length=1)
    turn: int | None = None
    step: int | None = None
    messages: list[Message] = Field(default_factory=list)
    query: str | None = None
    token_meter: TokenMeter | None = None
    trigger: str = "pre_step"


class Injection(BaseModel):
    """The one user-role message memplug asks the host to insert before a step."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    role: Literal["user"] = "user"
    text: str
    source: Source = Source(kind=MEMPLUG_SOURCE_KIND, form=MEMPLUG_SOURCE_FORM)
    assembly_id: int | None = None


class ToolCall(BaseModel):
    """A tool call about to run (input to ``pre_tool``)."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)
    session_id: str
    tool_name: str
    call_id: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    # Where relative paths in ``arguments`` are resolved (preconditions).
    cwd: str | None = None


class Decision(BaseModel):
    """The answer to ``pre_tool``: allow, or deny with a reason."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    allow: bool = True
    reason: str | None = None


def describe_validation_error(error: pydantic.ValidationError) -> str:
    """One line naming the first offending field and what is wrong with it."""
    return " ".join(_describe_first(error).split())


def _describe_first(error: pydantic.ValidationError) -> str:
    first = error.errors()[0]
    location = ".".join(str(part) for part in first.get("loc", ())) or "event"
    message = first.get("msg", "is invalid")
    if first.get("type") == "missing":
        return f"missing required field '{location}'"
    if first.get("type") == "literal_error":
        return f"field '{location}': {message}"
    return f"field '{location}' {message.lower()} (got {shown_value(first.get('input'))})"
