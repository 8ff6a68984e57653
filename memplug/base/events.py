"""The event a host commits (``HostEvent``) and the one check every captured event passes.

Events are validated by msgspec, not pydantic: every hook is a fresh process, and
importing pydantic and building a model cost a ``Stop`` hook about 100 ms of its
~250 ms. A bad event fails here with one line naming the field and what is wrong
with it; fields the protocol does not name are kept, verbatim, in ``extra_fields``.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Annotated, Any, get_args

import msgspec
from msgspec import Meta, Struct

from memplug.base.errors import ValidationError, shown_value, split_msgspec_error
from memplug.base.messages import Source
from memplug.base.text import format_time
from memplug.base.vocab import EventType, Outcome, Role

_BOUND = 2**62
_Step = Annotated[int, Meta(ge=-_BOUND, le=_BOUND)]


class ContentBlock(Struct, frozen=True, omit_defaults=True):
    """One block of message content; only ``text`` blocks carry searchable text."""

    type: str
    text: str | None = None
    # The block's other keys, as the host sent them.
    extra: dict[str, Any] = {}

    def as_dict(self) -> dict[str, Any]:
        """The block as the host sent it, keys holding ``null`` left out."""
        data: dict[str, Any] = {"type": self.type}
        if self.text is not None:
            data["text"] = self.text
        data.update((k, v) for k, v in self.extra.items() if v is not None)
        return data


class HostEvent(Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One event a host committed. ``session_id``, ``seq`` and ``type`` are required."""

    session_id: Annotated[str, Meta(min_length=1, max_length=512)]
    seq: Annotated[int, Meta(ge=0, le=_BOUND)]
    type: EventType
    time: datetime | None = None
    turn: _Step | None = None
    step: _Step | None = None
    role: Role | None = None
    text: str | None = None
    content: list[ContentBlock] | None = None
    source: Source | None = None
    tool_name: str | None = None
    call_id: str | None = None
    outcome: Outcome | None = None
    is_error: bool | None = None
    entry_id: str | None = None
    parent_id: str | None = None
    cwd: str | None = None
    project: str | None = None
    # Fields the protocol does not name; stored verbatim, never dropped.
    extra_fields: dict[str, Any] = {}

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
        """Fields the protocol does not name, sorted by name."""
        return dict(sorted(self.extra_fields.items()))

    def time_text(self) -> str | None:
        return format_time(self.time) if self.time is not None else None


_FIELDS = frozenset(HostEvent.__struct_fields__) - {"extra_fields"}
_BLOCK_FIELDS = frozenset(ContentBlock.__struct_fields__) - {"extra"}
_SOURCE_FIELDS = frozenset(("kind", "form"))
# Unix seconds a datetime can hold.
_EPOCH_RANGE = (-62_135_596_800, 253_402_300_800)
_DATE_ONLY = re.compile(r"\d{4}-\d\d-\d\d")
_PAST_MICROSECONDS = re.compile(r"(?<=[T ]\d\d:\d\d:\d\d\.\d{6})\d+")


def parse_event(data: Any) -> HostEvent:
    """Validate one decoded event; raise :class:`ValidationError` with a one-line reason."""
    if not isinstance(data, dict):
        raise ValidationError(f"an event must be a JSON object, not {type(data).__name__}")
    known = {k: v for k, v in data.items() if k in _FIELDS}
    _check_source(known.get("source"))
    content = known.get("content")
    raw_blocks: list[Any] = content if type(content) is list else []
    known_blocks = [_known_of_block(block) for block in raw_blocks]
    if raw_blocks:
        known["content"] = known_blocks
    if "time" in known:
        known["time"] = _time_input(known["time"])
    try:
        event = msgspec.convert(known, HostEvent)
    except msgspec.ValidationError as error:
        raise ValidationError(_describe(str(error), data)) from None
    if not event.session_id.strip():
        shown = shown_value(event.session_id)
        raise ValidationError(f"field 'session_id' must not be blank (got {shown})")
    extra = {k: v for k, v in data.items() if k not in _FIELDS}
    blocks = event.content
    if blocks and any(len(raw) > len(k) for raw, k in zip(raw_blocks, known_blocks, strict=True)):
        blocks = [_with_extra(block, raw) for block, raw in zip(blocks, raw_blocks, strict=True)]
    if extra or blocks is not event.content:
        event = msgspec.structs.replace(event, extra_fields=extra, content=blocks)
    return event


def _time_input(value: Any) -> Any:
    """A time in a form msgspec reads: unix seconds become a time; a date alone means
    its midnight; digits past the microsecond are dropped, as a clock that had them
    would not round."""
    if type(value) in (int, float):
        return (
            datetime.fromtimestamp(value, tz=UTC)
            if _EPOCH_RANGE[0] <= value < _EPOCH_RANGE[1]
            else value
        )
    if not isinstance(value, str):
        return value
    if _DATE_ONLY.fullmatch(value):
        return value + "T00:00:00"
    return _PAST_MICROSECONDS.sub("", value)


def _check_source(source: Any) -> None:
    """A ``source`` holds ``kind`` and ``form`` only (msgspec would drop others unsaid)."""
    if isinstance(source, dict):
        unknown = sorted(set(source) - _SOURCE_FIELDS)
        if unknown:
            shown = json.dumps(unknown[0], ensure_ascii=False)
            raise ValidationError(f"field 'source' holds {shown}, which is not a source field")


def _known_of_block(raw: Any) -> Any:
    if type(raw) is not dict:
        return raw
    return {k: v for k, v in raw.items() if k in _BLOCK_FIELDS}


def _with_extra(block: ContentBlock, raw: dict[str, Any]) -> ContentBlock:
    extra = {k: v for k, v in raw.items() if k not in _BLOCK_FIELDS}
    return msgspec.structs.replace(block, extra=extra) if extra else block


_MISSING = re.compile(r"^Object missing required field `(?P<key>[^`]*)`$")
_CHOICES = {"type": EventType, "role": Role, "outcome": Outcome}


def _describe(message: str, data: dict[str, Any]) -> str:
    """msgspec's error as one line: the field, what is wrong, and the value given."""
    why, path = split_msgspec_error(message)
    missing = _MISSING.match(why)
    if missing:
        where = f"{path}.{missing['key']}" if path else missing["key"]
        return f"missing required field '{where}'"
    if path in _CHOICES:
        options = ", ".join(repr(o) for o in get_args(_CHOICES[path]))
        return f"field '{path}' must be one of {options} (got {shown_value(data.get(path))})"
    # "Expected `int`, got `str`": the value itself is shown instead of its type.
    why = re.sub(r", got `[^`]*`$", "", why).replace("`", "").replace(" | ", " or ")
    why = why[0].lower() + why[1:]
    return " ".join(f"field '{path}' {why} (got {shown_value(_at(data, path))})".split())


def _at(data: Any, path: str) -> Any:
    """The value at a msgspec path (``content[0].text``) in the decoded event."""
    for part in re.findall(r"[^.\[\]]+", path):
        try:
            data = data[int(part)] if isinstance(data, list) else data[part]
        except (KeyError, IndexError, TypeError, ValueError):
            return None
    return data
