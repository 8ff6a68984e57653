"""Capture: committed host events → normalised, append-only ``events`` rows.

Capture stores everything the host committed, generated text included, so the log
agrees with the host's; evidence policy is each consumer's business. It never edits
what the host sent beyond normalisation, the text cap and ``<private>`` redaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from memplug.base.config import CaptureConfig
from memplug.base.events import ContentBlock, HostEvent
from memplug.base.paths import project_key_of
from memplug.base.text import canonical_json, normalize_text, redact_private, sha256_hex
from memplug.base.vocab import COMPACTION_TYPES, GENERATED_SOURCE_KINDS, GENERATED_TEXT_PREFIXES
from memplug.store.ports import Storage
from memplug.store.records import InsertResult, NewEvent

# events.flags bits, computed once at capture so queries never recompute them.
FLAG_TEXT_FIELD = 1  # the host sent `text` (export writes it back the same way)


# One event to store, and its archive row when the text was capped.
PreparedRow = tuple[NewEvent, tuple[str, str, str] | None]


class EventRows:
    """The stored form of host events under one capture configuration. It needs no
    database, so a second process can make the rows of a large import
    (:mod:`memplug.capture.bulk_rows`)."""

    def __init__(self, config: CaptureConfig) -> None:
        self.config = config
        self._generated_kinds = GENERATED_SOURCE_KINDS | frozenset(config.generated_source_kinds)

    def is_generated(self, event: HostEvent, text: str) -> bool:
        if event.source_kind in self._generated_kinds:
            return True
        if event.type in COMPACTION_TYPES:
            return True
        return event.role == "user" and text.startswith(GENERATED_TEXT_PREFIXES)

    def is_searchable(self, event: HostEvent) -> bool:
        if event.type == "assistant/thinking":
            return self.config.index_thinking
        if event.type.startswith("tool/"):
            return self.config.index_tool_output
        return True

    def row(self, event: HostEvent) -> PreparedRow:
        """The stored form of ``event`` and, when its text is capped, its archive row."""
        # Normalise first: a control character inside a tag (`<\x7fprivate>`) would
        # otherwise hide the span from redaction and become a real tag afterwards.
        text, private_spans = redact_private(normalize_text(event.raw_text()))
        content_json = None
        if event.content is not None:
            content_json = canonical_json([_redacted_block(b) for b in event.content])
        cap = self.config.max_text_chars
        truncated = len(text) > cap
        archive = (event.session_id, f"seq:{event.seq}", text) if truncated else None
        extra = event.extra()
        flags = FLAG_TEXT_FIELD if event.text is not None else 0
        row = NewEvent(
            event.session_id,
            event.seq,
            event.type,
            event.time_text(),
            event.turn,
            event.step,
            event.role,
            text[:cap],
            content_json,
            event.source_kind,
            event.source_form,
            event.tool_name,
            event.call_id,
            event.outcome,
            None if event.is_error is None else int(event.is_error),
            event.entry_id,
            event.parent_id,
            event.cwd,
            project_key_of(event.project, event.cwd),
            int(self.is_generated(event, text)),
            int(self.is_searchable(event)),
            "archive" if truncated else "host",
            int(truncated),
            len(text),
            private_spans,
            flags,
            sha256_hex(text),
            canonical_json(extra) if extra else None,
        )
        return row, archive


class Capture:
    def __init__(self, store: Storage, config: CaptureConfig) -> None:
        self.store = store
        self.rows = EventRows(config)

    def capture(
        self, events: Iterable[HostEvent], *, origin: str, ingested_at: str, bulk: bool = False
    ) -> InsertResult:
        """Store ``events`` (inside the caller's write transaction); duplicates are ignored."""
        return self.insert(
            [self.rows.row(event) for event in events],
            origin=origin,
            ingested_at=ingested_at,
            bulk=bulk,
        )

    def insert(
        self,
        prepared: Iterable[PreparedRow],
        *,
        origin: str,
        ingested_at: str,
        bulk: bool = False,
    ) -> InsertResult:
        """Store rows :meth:`EventRows.row` made, stamped ``ingested_at``."""
        events: list[NewEvent] = []
        archive: list[tuple[str, str, str]] = []
        for event, archived in prepared:
            events.append(event)
            if archived is not None:
                archive.append(archived)
        return self.store.events.insert(
            events, archive, origin=origin, ingested_at=ingested_at, bulk=bulk
        )


def _redacted_block(block: ContentBlock) -> dict[str, Any]:
    data = block.as_dict()
    if block.text is not None:
        data["text"] = redact_private(normalize_text(block.text))[0]
    return data


def event_to_json(row: Any, full_text: str) -> dict[str, Any]:
    """The generic JSONL form of a stored event (the export format; see docs/events.md)."""
    out: dict[str, Any] = {"session_id": row.session_id, "seq": row.seq, "type": row.type}
    optional: Sequence[tuple[str, Any]] = (
        ("time", row.event_time),
        ("turn", row.turn),
        ("step", row.step),
        ("role", row.role),
    )
    out.update((k, v) for k, v in optional if v is not None)
    if row.content_json is None or row.flags & FLAG_TEXT_FIELD:
        out["text"] = full_text
    if row.content_json is not None:
        out["content"] = json.loads(row.content_json)
    source = {k: v for k, v in (("kind", row.source_kind), ("form", row.source_form)) if v}
    if source:
        out["source"] = source
    rest: Sequence[tuple[str, Any]] = (
        ("tool_name", row.tool_name),
        ("call_id", row.call_id),
        ("outcome", row.outcome),
        ("is_error", None if row.is_error is None else bool(row.is_error)),
        ("entry_id", row.entry_id),
        ("parent_id", row.parent_id),
        ("cwd", row.cwd),
        ("project", row.project),
    )
    out.update((k, v) for k, v in rest if v is not None)
    if row.extra_json:
        for key, value in json.loads(row.extra_json).items():
            out.setdefault(key, value)
    return out
