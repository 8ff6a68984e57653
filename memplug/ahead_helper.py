"""The helper process of a large import (memplug/derive/derive_ahead.py): it reads its
database, configuration and sessions from stdin and writes, for each session in
turn, what its served pure functions returned (memplug/derive/ahead.py) to stdout."""

from __future__ import annotations

import contextlib
import pickle
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from memplug.base.config import LoadedConfig
from memplug.derive.ahead import recording
from memplug.memory import Memory
from memplug.store.db import Database


def compute(path: str, loaded: LoadedConfig, sessions: Sequence[str], out: IO[bytes]) -> None:
    """Prepare each session's derivation and send what it computed, one message each."""
    memory = Memory(Database.open(Path(path), create=False, readonly=True), loaded)
    try:
        for session_id in sessions:
            with recording() as tables:
                memory.extractor.prepare(session_id)
            pickle.dump((session_id, tables), out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()
    finally:
        memory.close()


if __name__ == "__main__":
    # A broken pipe: the import ended (or died) first, and nothing is left to do.
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
        path, loaded, sessions = pickle.load(sys.stdin.buffer)
        compute(path, loaded, sessions, sys.stdout.buffer)
