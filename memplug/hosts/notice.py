"""The one message a hook shows the person when the database fails it.

A hook never fails its host, so a database it cannot read or write would otherwise go
unnoticed: capture stops and memory quietly stops helping. The first hook that meets
such a failure says so once, through the host's user-facing channel (Claude Code's
``systemMessage``), with the command that helps. Later hooks meeting the same failure
on the same file stay quiet; once the file changes (repaired, replaced, written again)
a failure is told anew. The record lives in the user's state folder, since the
database's own folder may be the thing that cannot be written, and it is read only on
the failure path, so a working hook pays nothing for it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

# What each kind of failure means for the session, after the engine's own words.
_READ_ONLY_MEANS = "memory is still read and shown, but nothing new is kept"
_BROKEN_MEANS = "nothing is captured or shown until it is fixed"


def notice_file(database: Path) -> Path:
    """The record of the failure last told for ``database`` (keyed by its path)."""
    import platformdirs

    key = hashlib.sha256(str(database.resolve()).encode()).hexdigest()[:16]
    return Path(platformdirs.user_state_dir("memplug")) / "notices" / key


def notice_text(trouble: str, readable: bool) -> str:
    """The message for ``trouble`` (the error's one line) and whether reading works."""
    means = _READ_ONLY_MEANS if readable else _BROKEN_MEANS
    return f"memplug: {trouble}; {means}. `memory doctor` checks the file and says what to do."


def tell_once(database: Path, message: str) -> str | None:
    """``message`` unless it was told already for the file as it is now."""
    try:
        stat = database.stat()
        state = f"{stat.st_size}:{stat.st_mtime_ns}"
    except OSError:
        state = "absent"
    record = f"{state}\n{message}"
    path = notice_file(database)
    try:
        if path.read_text(encoding="utf-8") == record:
            return None
    except OSError:
        pass
    try:
        path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            stream.write(record)
    except OSError:
        pass  # told each time rather than never
    return message
