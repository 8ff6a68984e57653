"""A helper process that computes a large import's pure text analysis ahead of its
derivation, on a second core (memplug/derive/ahead.py says why the bytes cannot change).

The importing process derives its sessions one after another, and that used to leave
every other core idle. The helper reads the same sessions from the committed database
(a WAL reader beside the writer), makes the calls that deriving each will make
(:meth:`Deriving.prepare`), and writes their results to its stdout, one pickled
message per session, in the order they are derived (memplug/ahead_helper.py). It is
a plain subprocess (not ``multiprocessing``, which would run the caller's own script
again to start it), and a pipe is its only channel: a full pipe holds it about one
session ahead, and a parent that is gone breaks the pipe and ends it. If it cannot
start or fails, the importing process computes everything itself, as it does for a
small import.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from memplug.base.config import LoadedConfig
from memplug.derive.ahead import hand_over, withdraw

# Below this many new events, an import derives in about the time the helper takes to
# start (a Python process and memplug's derivation modules: ~0.3 s).
AHEAD_EVENTS = 20_000


class Helper:
    """The importing side: hands each session's results over as it starts."""

    def __init__(self, process: subprocess.Popen[bytes], sessions: Sequence[str]) -> None:
        self._process = process
        self._coming = set(sessions)

    def before(self, session_id: str) -> None:
        """Serve the results the helper computed for ``session_id`` (nothing when it
        computed none, or failed)."""
        withdraw()
        stream = self._process.stdout
        while stream is not None and session_id in self._coming:
            try:
                name, tables = pickle.load(stream)
            except Exception:  # a helper that died or wrote garbage: compute it all here
                self._coming.clear()
                return
            self._coming.discard(name)
            if name == session_id:
                hand_over(tables)

    def close(self) -> None:
        withdraw()
        self._process.kill()
        self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()


@contextmanager
def computed_ahead(
    path: Path, loaded: LoadedConfig, sessions: Sequence[str]
) -> Iterator[Helper | None]:
    """A helper for deriving ``sessions`` (in sorted order), or None when there is no
    second core to run it on or it cannot start."""
    ordered = sorted(set(sessions))
    # An embedded interpreter may not know its own executable.
    if len(ordered) < 2 or _cores() < 2 or not sys.executable:
        yield None
        return
    # The first session is derived while the helper starts; it computes the rest.
    ahead = ordered[1:]
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "memplug.ahead_helper"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert process.stdin is not None
        pickle.dump((str(path), loaded, ahead), process.stdin)
        process.stdin.close()
    except (OSError, pickle.PicklingError):
        yield None
        return
    helper = Helper(process, ahead)
    try:
        yield helper
    finally:
        helper.close()


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
