"""Results of pure functions computed ahead, by another process, for exactly the
calls a derivation is about to make.

A large import derives its sessions one after another on one core, and much of that
time goes to pure functions of an event's text (cue analysis, a call's description,
what a text names). A function marked :func:`served` first looks for a result handed
over for exactly its arguments (the arguments are the key, so a result is only ever
used for the call it answers, and is used once); anything not found is computed as
always. So what is handed over can make derivation faster, never different.
memplug/derive/derive_ahead.py is the process that computes them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import Any, TypeVar

Tables = dict[str, dict[tuple[Any, ...], Any]]

_SERVED: Tables = {}
# Where a computing process collects what its served functions return (None: nowhere).
_recorded: Tables | None = None
_MISSING = object()

F = TypeVar("F", bound=Callable[..., Any])


def served(function: F) -> F:
    """Mark a pure function of hashable positional arguments whose results may be
    handed over ahead of time (see the module's docstring)."""
    name = f"{function.__module__}.{function.__qualname__}"
    table = _SERVED.setdefault(name, {})

    @wraps(function)
    def call(*args: Any) -> Any:
        if table:
            found = table.pop(args, _MISSING)
            if found is not _MISSING:
                return found
        result = function(*args)
        if _recorded is not None:
            _recorded.setdefault(name, {})[args] = result
        return result

    return call  # type: ignore[return-value]


def hand_over(tables: Tables) -> None:
    """Serve ``tables`` (what :func:`recording` collected elsewhere) from now on,
    instead of what was handed over before."""
    for name, table in _SERVED.items():
        table.clear()
        table.update(tables.get(name, {}))


def withdraw() -> None:
    """Serve nothing any more."""
    for table in _SERVED.values():
        table.clear()


@contextmanager
def recording() -> Iterator[Tables]:
    """Collect, for the block, what every served function returns, by its arguments."""
    global _recorded
    tables: Tables = {}
    _recorded = tables
    try:
        yield tables
    finally:
        _recorded = None
