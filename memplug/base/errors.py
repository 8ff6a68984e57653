"""One error family whose messages are written for people.

The CLI turns any ``MemplugError`` into a single ``Error: …`` line and its exit code;
the host path records it instead of raising.
"""

from __future__ import annotations

import json
import re
from typing import Any

# msgspec's validation messages end with where the value was: ``… - at `$.a.b[0]```.
_MSGSPEC_AT = re.compile(r"^(?P<why>.*?)(?: - at `\$\.?(?P<path>[^`]*)`)?$", re.DOTALL)


class MemplugError(Exception):
    """Base class: ``str(error)`` is a complete, one-line sentence for a person."""

    exit_code = 1


class UsageError(MemplugError):
    """Bad input or bad usage (exit 2)."""

    exit_code = 2


class ValidationError(UsageError):
    """A host event, JSONL line, config value or query that does not fit the contract."""


class DatabaseMissing(UsageError):
    """A reading command was pointed at a database that does not exist."""


class SchemaTooNew(MemplugError):
    """The database was written by a newer memplug; it is never downgraded."""


class DatabaseError(MemplugError):
    """The database is locked, corrupt, read-only or full."""


class DatabaseBusy(DatabaseError):
    """Another writer held the write lock longer than this one could wait."""


class DatabaseReadOnly(DatabaseError):
    """This process may read the database but not write it."""


class NotFound(UsageError):
    """An id, session or token names nothing in the database."""


class AssemblyFailed(MemplugError):
    """An assembly attempt failed; it is in ``assembly_logs`` when ``assembly_id`` is set."""

    def __init__(self, message: str, assembly_id: int | None = None) -> None:
        super().__init__(message)
        self.assembly_id = assembly_id


def split_msgspec_error(message: str) -> tuple[str, str]:
    """A msgspec validation message as what is wrong and where (``a.b[0]``; empty when
    the value at fault is the whole document)."""
    found = _MSGSPEC_AT.match(message)
    if found is None:
        return message, ""
    return found["why"], found["path"] or ""


def shown_value(value: Any) -> str:
    """A value as an error message shows it: JSON, cut to 60 characters."""
    shown = json.dumps(value, ensure_ascii=False, default=str) if value is not None else "null"
    return shown[:57] + "..." if len(shown) > 60 else shown
