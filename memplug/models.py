"""The host protocol: what a harness hands memplug, and what memplug hands back.

Every boundary is a pydantic model so that bad input fails here, with one line that
names the field and the problem (see :func:`describe_validation_error`). Models build
their validators on first use (``defer_build``): every hook is a fresh process, and
building them all at import would cost it tens of milliseconds.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator

from memplug.errors import ValidationError
from memplug.messages import Message, Source, TokenMeter
from memplug.text import format_time
from memplug.vocab import MEMPLUG_SOURCE_FORM, MEMPLUG_SOURCE_KIND, EventType, Outcome, Role

# The step's messages are plain dataclasses (memplug.messages); hosts import them here too.
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


class ContentBlock(BaseModel):
    """One block of message content; only ``text`` blocks carry searchable text."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)
    type: str
    text: str | None = None


class HostEvent(BaseModel):
    """One event a host committed. ``session_id``, ``seq`` and ``type`` are required."""

    model_config = ConfigDict(extra="allow", frozen=True, defer_build=True)

    session_id: str = Field(min_length=1, max_length=512)
    seq: StrictInt = Field(ge=0, le=2**62)
    type: EventType
    time: datetime | None = None
    turn: StrictInt | None = Field(default=None, ge=-(2**62), le=2**62)
    step: StrictInt | None = Field(default=None, ge=-(2**62), le=2**62)
    role: Role | None = None
    text: str | None = None
    content: list[ContentBlock] | None = None
    source: Source | None = None
    tool_name: str | None = None
    call_id: str | None = None
    outcome: Outcome | None = None
    is_error: StrictBool | None = None
    entry_id: str | None = None
    parent_id: str | None = None
    cwd: str | None = None
    project: str | None = None

    @field_validator("session_id")
    @classmethod
    def _no_separator(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @property
    def source_kind(self) -> str | None:
        return self.source.kind if self.source else None

    @property
    def source_form(self) -> str | None:
        return self.source.form if self.source else None

    def raw_text(self) -> str:
        """The event's text before normalisation: ``text``, else its text blocks joined."""
        if self.text is not None:
            return self.text
        if not self.content:
            return ""
        return "\n".join(block.text for block in self.content if block.text)

    def extra(self) -> dict[str, Any]:
        """Fields the protocol does not name; stored verbatim, never dropped."""
        return dict(sorted((self.model_extra or {}).items()))

    def time_text(self) -> str | None:
        return format_time(self.time) if self.time is not None else None


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
    value = first.get("input")
    shown = json.dumps(value, ensure_ascii=False, default=str) if value is not None else "null"
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"field '{location}' {message.lower()} (got {shown})"


def parse_event(data: Any) -> HostEvent:
    """Validate one decoded event; raise :class:`ValidationError` with a one-line reason."""
    if not isinstance(data, dict):
        raise ValidationError(f"an event must be a JSON object, not {type(data).__name__}")
    try:
        return HostEvent.model_validate(data)
    except pydantic.ValidationError as error:
        raise ValidationError(describe_validation_error(error)) from None
