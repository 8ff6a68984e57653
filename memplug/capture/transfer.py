"""Generic JSONL in and out of a database: an import's batches (each its own commit),
what it reports, the interrupt that carries that when a person stops it, and the export.
``Memory.import_jsonl`` wires an import to what follows it (derivation, vectors).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any, BinaryIO

from msgspec import Struct, field

from memplug.base.clock import utc_now
from memplug.store.records import InsertResult

if TYPE_CHECKING:
    from memplug.base.config import CaptureConfig
    from memplug.capture.append import Capture, PreparedRow
    from memplug.capture.jsonl import Rejected
    from memplug.semantic.service import EmbedReport
    from memplug.store.ports import Storage

# Events a batch commits at once: an interrupted import keeps every batch before it.
IMPORT_BATCH = 10_000
ProgressCallback = Callable[[int], None]


class ImportSummary(Struct):
    new: int = 0
    present: int = 0
    rejected: list[Rejected] = field(default_factory=list)
    sessions: set[str] = field(default_factory=set)
    # Set when extraction crashed after the events were committed (they are kept).
    extraction_error: str | None = None
    vectors: EmbedReport | None = None

    def add(self, result: InsertResult) -> None:
        self.new += result.new
        self.present += result.present
        self.sessions.update(result.sessions)

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "new": self.new,
            "present": self.present,
            "rejected": [r.as_dict() for r in self.rejected],
        }
        if self.extraction_error is not None:
            data["extraction_error"] = self.extraction_error
        if self.vectors is not None:
            data["vectors"] = self.vectors.as_dict()
        return data


class ImportInterrupted(KeyboardInterrupt):
    """Ctrl-C during :meth:`Memory.import_jsonl`; ``summary`` holds what was committed."""

    def __init__(self, summary: ImportSummary) -> None:
        super().__init__()
        self.summary = summary


@contextmanager
def interrupt_after() -> Iterator[None]:
    """Ctrl-C inside the block takes effect at its end. A commit returns only after
    SQLite's checkpoint, and an interrupt raised between the two would leave a committed
    batch out of what the import says it kept."""
    import signal  # here: the hooks, which import this module, never block a signal
    import threading

    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not (
        threading.main_thread()
    ):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def import_streams(
    store: Storage,
    capture: Capture,
    config: CaptureConfig,
    streams: Sequence[tuple[str, BinaryIO]],
    summary: ImportSummary,
    progress: ProgressCallback | None = None,
    project: str | None = None,
) -> None:
    """Store every good line of ``streams`` in batches of ``IMPORT_BATCH``, each its own
    commit; a bad line is rejected by number into ``summary``, which counts the rest.
    ``project`` stores every event under that project, whatever it names."""
    from memplug.capture.bulk_rows import prepared_lines
    from memplug.capture.jsonl import Rejected

    many = len(streams) > 1
    for name, stream in streams:
        batch: list[PreparedRow] = []
        lines = prepared_lines(stream, config, file=name if many else None, project=project)
        for _, item, size in lines:
            if isinstance(item, Rejected):
                summary.rejected.append(item)
            else:
                batch.append(item)
                if len(batch) >= IMPORT_BATCH:
                    _commit_batch(store, capture, batch, summary)
                    batch = []
            if progress is not None:
                progress(size)
        _commit_batch(store, capture, batch, summary)


def _commit_batch(
    store: Storage, capture: Capture, batch: list[PreparedRow], summary: ImportSummary
) -> None:
    with interrupt_after():
        with store.write_transaction():
            result = capture.insert(batch, origin="import", ingested_at=utc_now(), bulk=True)
        summary.add(result)


def export_jsonl(store: Storage, out: IO[str], session_ids: Sequence[str] | None = None) -> int:
    """Write :func:`export_lines` to ``out``; return how many lines were written."""
    count = 0
    for line in export_lines(store, session_ids):
        out.write(line)
        count += 1
    return count


def export_readable(store: Storage, out: IO[bytes]) -> tuple[int, int]:
    """Write every event a damaged database still yields to ``out`` as JSONL; return
    the sessions walked and how many of them were cut short. A session whose pages fail
    midway keeps the events read before the failure."""
    try:
        sessions = store.events.session_ids()
    except Exception:  # the session table itself is unreadable: nothing to walk
        sessions = []
    damaged = 0
    for session in sessions:
        try:
            for line in export_lines(store, [session]):
                out.write(line.encode("utf-8"))
        except Exception:  # a damaged page: the events before it are kept
            damaged += 1
    return len(sessions), damaged


def export_lines(store: Storage, session_ids: Sequence[str] | None = None) -> Iterator[str]:
    """Each stored event as a line of generic JSONL, in ``(session_id, seq)`` order."""
    from memplug.capture.append import event_to_json
    from memplug.capture.jsonl import dump_line

    events = store.events
    for row in events.iter_events(session_ids):
        yield dump_line(event_to_json(row, events.full_text(row)))
