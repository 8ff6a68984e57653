"""The capture rows of a JSONL import; a large file's are made in a second process.

Parsing a line and making its row depend on the capture configuration alone, and were
about a fifth of a 100k-event import; writing and deriving, the rest, must stay in the
process that holds the database. So for a large regular file a second process
(``python -m memplug.capture.bulk_rows``) reads and parses it chunk after chunk, in order, while
this one writes and derives the chunks before. The rows, their order and every
rejection are those of reading in-process; should the second process fail, reading
goes on here from the first line it did not deliver.

The second process lives only as long as the import and only reads the file: it is no
worker a hook could wait on (hooks read in-process).
"""

from __future__ import annotations

import os
import pickle
import queue
import signal
import stat
import struct
import subprocess
import sys
import threading
from collections.abc import Generator, Iterable, Iterator
from itertools import islice
from typing import IO, BinaryIO

import msgspec
from msgspec.structs import replace

from memplug.base.config import CaptureConfig
from memplug.base.events import HostEvent
from memplug.capture.append import EventRows, PreparedRow
from memplug.capture.jsonl import Rejected, TooLong, bounded_lines, read_events

# A smaller file is read in-process: starting the second one (~0.1 s) would cost more
# than it saves.
PARALLEL_MIN_BYTES = 8 << 20
CHUNK_LINES = 2_000
# Chunks read ahead of the writer: the second process runs up to this far in front.
AHEAD = 16

Line = tuple[int, PreparedRow | Rejected, int]
# Each chunk the second process writes: its pickled size, then the number and byte
# offset of the line after it (where reading resumes here if the process fails). A
# header of size 0 ends the file: without it, what came is all the process delivered.
_HEADER = struct.Struct("<QQQ")


def prepared_lines(
    stream: BinaryIO,
    config: CaptureConfig,
    *,
    file: str | None = None,
    project: str | None = None,
) -> Iterator[Line]:
    """``(line_number, row or Rejected, bytes_read)`` for each non-blank line of
    ``stream``, in order; ``project`` replaces every event's project."""
    rows = EventRows(config)
    path = _large_file(stream)
    number = 1
    if path is not None:
        number, offset = yield from _read_there(path, stream.tell(), config, file, project)
        stream.seek(offset)
    # Line by line: a pipe's lines are committed as they come, not a chunk later.
    yield from _prepared(read_events(stream, file=file, first_line=number), rows, project)


def _large_file(stream: BinaryIO) -> str | None:
    """The path of ``stream`` when it is a regular file worth a second process."""
    name = getattr(stream, "name", None)
    try:
        status = os.fstat(stream.fileno())
        named = os.stat(name) if isinstance(name, str) else None
    except (AttributeError, OSError, ValueError):  # a BytesIO, a pipe's stand-in
        return None
    if named is None or (named.st_dev, named.st_ino) != (status.st_dev, status.st_ino):
        return None
    if not stat.S_ISREG(status.st_mode) or status.st_size < PARALLEL_MIN_BYTES:
        return None
    return str(name)


def _read_there(
    path: str, start: int, config: CaptureConfig, file: str | None, project: str | None
) -> Generator[Line, None, tuple[int, int]]:
    """The lines the second process delivers; returns the number and byte offset of the
    first line it did not (the end of the file, once all came)."""
    setup = msgspec.json.encode(
        _Setup(config=config, file=file, project=project, chunk_lines=CHUNK_LINES)
    )
    number, offset = 1, start
    try:
        child = subprocess.Popen(
            child_command(path, start),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        return number, offset
    stop = threading.Event()
    try:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(setup)
        child.stdin.close()
        for payload, next_number, next_offset in _read_ahead(child.stdout, stop):
            if payload is None:
                return next_number, next_offset
            lines: list[Line] = pickle.loads(payload)
            yield from lines
            number, offset = next_number, next_offset
    except (OSError, pickle.UnpicklingError):
        pass
    finally:
        stop.set()
        child.kill()
        child.wait()
    return number, offset  # ended early: reading goes on here from what came last


_Frame = tuple[bytes | None, int, int]


def _read_ahead(out: IO[bytes], stop: threading.Event) -> Iterator[_Frame]:
    """The chunks the process writes, read by a thread as they come: a pipe holds only
    64 KiB, so without it the process would wait for each chunk to be taken."""
    frames: queue.Queue[_Frame | None] = queue.Queue(AHEAD)

    def drain() -> None:
        try:
            while (frame := _frame(out)) is not None:
                while not stop.is_set():
                    try:
                        frames.put(frame, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if frame[0] is None or stop.is_set():
                    break
        except (OSError, ValueError):  # a pipe closed under it: what came is all
            pass
        finally:
            frames.put(None)

    threading.Thread(target=drain, name="memplug-bulk-rows", daemon=True).start()
    while (frame := frames.get()) is not None:
        yield frame


def _frame(out: IO[bytes]) -> _Frame | None:
    """The next chunk, pickled (``None`` for it at the end of the file); ``None`` when
    the process wrote nothing more, or a chunk cut short."""
    header = out.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    size, number, offset = _HEADER.unpack(header)
    if size == 0:
        return None, number, offset
    payload = out.read(size)
    return (payload, number, offset) if len(payload) == size else None


def _prepared(
    lines: Iterable[tuple[int, HostEvent | Rejected, int]], rows: EventRows, project: str | None
) -> Iterator[Line]:
    for number, item, size in lines:
        if isinstance(item, Rejected):
            yield number, item, size
        else:
            if project is not None:
                item = replace(item, project=project)
            yield number, rows.row(item), size


# -- the second process ------------------------------------------------------------------


def child_command(path: str, start: int) -> list[str]:
    """The second process: this interpreter, reading ``path`` from byte ``start``."""
    return [sys.executable, "-m", "memplug.capture.bulk_rows", path, str(start)]


class _Setup(msgspec.Struct, frozen=True):
    config: CaptureConfig
    file: str | None
    project: str | None
    chunk_lines: int


def _chunks(
    lines: Iterable[bytes | TooLong], size: int
) -> Iterator[tuple[int, list[bytes | TooLong]]]:
    source = iter(lines)
    first = 1
    while chunk := list(islice(source, size)):
        yield first, chunk
        first += len(chunk)


def main(path: str, start: int) -> None:
    """Write the rows of ``path`` from byte ``start`` to stdout, chunk by chunk."""
    # Ctrl-C reaches the whole process group; the importing process alone answers it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    setup = msgspec.json.decode(sys.stdin.buffer.read(), type=_Setup)
    rows, out = EventRows(setup.config), sys.stdout.buffer
    offset, ended = start, 1
    with open(path, "rb") as stream:
        stream.seek(start)
        for first, raw in _chunks(bounded_lines(stream), setup.chunk_lines):
            events = read_events(raw, file=setup.file, first_line=first)
            payload = pickle.dumps(list(_prepared(events, rows, setup.project)), protocol=5)
            offset += sum(len(r) if isinstance(r, bytes) else r.size for r in raw)
            ended = first + len(raw)
            out.write(_HEADER.pack(len(payload), ended, offset))
            out.write(payload)
    out.write(_HEADER.pack(0, ended, offset))
    out.flush()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
