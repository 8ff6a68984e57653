"""The generic JSONL interchange format: one host event per line (docs/events.md)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from memplug.errors import ValidationError
from memplug.models import HostEvent, parse_event

MAX_LINE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Rejected:
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
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValidationError(f"not valid JSON: {error.msg} at column {error.colno}") from None
    except RecursionError:
        raise ValidationError("JSON nested too deeply") from None
    return parse_event(data)


def read_events(
    lines: Iterable[bytes], *, file: str | None = None
) -> Iterator[tuple[int, HostEvent | Rejected, int]]:
    """Yield ``(line_number, event or Rejected, bytes_read)`` for each non-blank line."""
    for number, raw in enumerate(lines, start=1):
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
