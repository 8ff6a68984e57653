"""What ``memory import`` reports: the counts and rejections of an import, and the
interrupt that carries them when a person stops it (:meth:`Memory.import_jsonl`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field

from memplug.store.records import InsertResult

if TYPE_CHECKING:
    from memplug.jsonl import Rejected
    from memplug.semantic.service import EmbedReport


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
