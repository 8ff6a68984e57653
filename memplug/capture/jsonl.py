"""The generic JSONL interchange format: one host event per line (docs/events.md)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from msgspec import Struct

from memplug.base.errors import ValidationError
from memplug.base.events import HostEvent, parse_event

MAX_LINE_BYTES = 64 * 1024 * 1024
# Host events are shallow; a deeper document is hostile, and one near Python's own
# recursion limit would parse here and then fail later, in whatever serialises it.
MAX_DEPTH = 200
# JSON may spell a lone UTF-16 surrogate (``"\\ud800"``); Python decodes it to a
# string that cannot be encoded as UTF-8, so it is no text that can be stored.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# Years whose times can fall outside the calendar once converted to UTC.
_EDGE_YEARS = frozenset((datetime.min.year, datetime.max.year))


class Rejected(Struct, frozen=True):
    line: int
    error: str
    file: str | None = None

    def as_dict(self) -> dict[str, object]:
        data: dict[str, object] = {"line": self.line, "error": self.error}
        if self.file is not None:
            data["file"] = self.file
        return data


def parse_line(raw: bytes) -> HostEvent:
    """Decode and validate one JSONL line; a one-line :class:`ValidationError` otherwise."""
    if len(raw) > MAX_LINE_BYTES:
        raise ValidationError(f"line is longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValidationError(f"not valid UTF-8 (byte {error.start + 1})") from None
    # A byte-order mark, as some editors write at the start of a file, is not JSON.
    text = text.removeprefix("\ufeff")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValidationError(f"not valid JSON: {error.msg} at column {error.colno}") from None
    except RecursionError:
        raise ValidationError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    _check_structure(data, check_surrogates=_SURROGATE_ESCAPE.search(raw) is not None)
    event = parse_event(data)
    # Stored in UTC: 0001-01-01T00:00+01:00 parses but has no UTC spelling, and failing
    # later would take the rest of its import batch with it. Only the first and last
    # years can cross the range, so only they pay for a trial conversion.
    if event.time is not None and event.time.year in _EDGE_YEARS:
        try:
            event.time_text()
        except (OverflowError, ValueError):
            raise ValidationError("field 'time' is out of range once converted to UTC") from None
    return event


_CONTAINERS = frozenset((dict, list))


def _check_structure(data: Any, *, check_surrogates: bool) -> None:
    """Reject nesting past :data:`MAX_DEPTH` and strings holding a lone surrogate,
    naming where; iterative, so a hostile document cannot exhaust the stack here."""
    # The common flat event has nothing to check: skip building a path per field. Exact
    # types, not isinstance: `json.loads` makes no subclasses, and a set of types is
    # one C-level pass instead of a generator step per field.
    flat = type(data) is dict and _CONTAINERS.isdisjoint(map(type, data.values()))
    if flat and not check_surrogates:
        return
    stack: list[tuple[Any, int, str]] = [(data, 1, "")]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, dict | list):
            if depth > MAX_DEPTH:
                raise ValidationError(f"JSON nested deeper than {MAX_DEPTH} levels")
            if isinstance(value, dict):
                for key, item in value.items():
                    path = f"{where}.{key}" if where else str(key)
                    if check_surrogates and _LONE_SURROGATE.search(key):
                        raise ValidationError(
                            f"a field name holds an unpaired surrogate ({path!a})"
                        )
                    stack.append((item, depth + 1, path))
            else:
                stack.extend((item, depth + 1, f"{where}[{i}]") for i, item in enumerate(value))
        elif check_surrogates and isinstance(value, str):
            found = _LONE_SURROGATE.search(value)
            if found:
                raise ValidationError(
                    f"field '{where}' holds an unpaired UTF-16 surrogate "
                    f"({found.group()!a}), which is not text"
                )


@runtime_checkable
class _LineReader(Protocol):
    def readline(self, size: int = -1, /) -> bytes: ...


class TooLong(Struct, frozen=True):
    size: int


def bounded_lines(stream: _LineReader, limit: int = MAX_LINE_BYTES) -> Iterator[bytes | TooLong]:
    """Lines of ``stream``, never holding more than ``limit`` bytes of one in memory: a
    longer line is skipped to its end and stands as :class:`TooLong`."""
    while True:
        line = stream.readline(limit + 2)  # the line, its newline, and one byte to spare
        if not line:
            return
        if len(line) <= limit + 1 or line.endswith(b"\n"):
            yield line
            continue
        size = len(line)
        while True:
            rest = stream.readline(1 << 20)
            size += len(rest)
            if not rest or rest.endswith(b"\n"):
                break
        yield TooLong(size)


def read_events(
    lines: Iterable[bytes | TooLong] | _LineReader,
    *,
    file: str | None = None,
    first_line: int = 1,
) -> Iterator[tuple[int, HostEvent | Rejected, int]]:
    """Yield ``(line_number, event or Rejected, bytes_read)`` for each non-blank line,
    numbering from ``first_line`` (a piece of a file read elsewhere, as from
    :func:`bounded_lines`, keeps the file's numbers).

    A stream (anything with ``readline``) is read in bounded pieces, so one endless
    line costs at most :data:`MAX_LINE_BYTES` of memory before it is rejected."""
    source: Iterable[bytes | TooLong] = (
        bounded_lines(lines) if isinstance(lines, _LineReader) else lines
    )
    for number, raw in enumerate(source, start=first_line):
        if isinstance(raw, TooLong):
            limit = MAX_LINE_BYTES // (1024 * 1024)
            yield number, Rejected(number, f"line is longer than {limit} MiB", file), raw.size
            continue
        size = len(raw)
        stripped = raw.strip()
        if not stripped:
            continue
        try:
            yield number, parse_line(stripped), size
        except ValidationError as error:
            yield number, Rejected(number, str(error), file), size


def dump_line(event: dict[str, object]) -> str:
    return json.dumps(event, ensure_ascii=False, separators=(", ", ": ")) + "\n"
