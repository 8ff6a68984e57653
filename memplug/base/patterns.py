"""Regular expressions compiled when first used (``lazy``), for module-level tables.

Every hook is a fresh process that imports the modules it might need and then uses a
few of their patterns: a ``Stop`` over lines with no cue in them compiled ~150 patterns
and read ~30, and compiling is most of what importing those modules costs. A
``LazyPattern`` compiles on the first call of any of its methods and then puts the
compiled pattern's own methods in their place, so every later call costs what a plain
``re.Pattern`` does. Patterns a module uses on every call stay ``re.compile``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

_METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "split")


class LazyPattern:
    """``re.compile(source, flags)``, compiled by the first method call."""

    __slots__ = ("source", "flags", "_compiled", *_METHODS)

    search: Callable[..., re.Match[str] | None]
    match: Callable[..., re.Match[str] | None]
    fullmatch: Callable[..., re.Match[str] | None]
    finditer: Callable[..., Iterator[re.Match[str]]]
    findall: Callable[..., list[Any]]
    sub: Callable[..., str]
    split: Callable[..., list[str]]

    def __init__(self, source: str, flags: int = 0) -> None:
        self.source = source
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None
        for name in _METHODS:
            setattr(self, name, self._first_call(name))

    @property
    def pattern(self) -> str:
        return self.source

    @property
    def groupindex(self) -> Mapping[str, int]:
        return self.compiled().groupindex

    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern (compiling it now if no method has been called yet)."""
        if self._compiled is None:
            self._compiled = re.compile(self.source, self.flags)
            for name in _METHODS:
                setattr(self, name, getattr(self._compiled, name))
        return self._compiled

    def _first_call(self, name: str) -> Callable[..., Any]:
        return lambda *args, **kwargs: getattr(self.compiled(), name)(*args, **kwargs)


def lazy(source: str, flags: int = 0) -> LazyPattern:
    return LazyPattern(source, flags)
