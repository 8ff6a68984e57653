"""Tool preconditions: before a tool runs, the paths it names must (not) exist.

``validation.preconditions`` entries name path globs (``mustExist``/``mustNotExist``)
and optionally the tools they apply to. A path the tool input names that matches a
``mustNotExist`` glob and exists, or a ``mustExist`` glob and does not, denies the call
with a reason. Standard library and config only: the Claude Code ``PreToolUse`` hook
runs this on every tool call without opening the database.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from memplug.base.text import glob_regex

if TYPE_CHECKING:
    from memplug.base.config import PreconditionConfig

# Tool input fields that name the paths a tool touches (Claude Code's and common ones).
PATH_FIELDS: tuple[str, ...] = ("file_path", "path", "notebook_path", "filePath", "paths")


class PreconditionResult(Struct, frozen=True):
    allow: bool
    reason: str | None = None
    precondition: str | None = None
    path: str | None = None


def tool_paths(arguments: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for name in PATH_FIELDS:
        value = arguments.get(name)
        values = value if isinstance(value, list) else [value]
        out.extend(v for v in values if isinstance(v, str) and v)
    return out


def check_preconditions(
    preconditions: Sequence[PreconditionConfig],
    tool_name: str,
    arguments: Mapping[str, Any],
    cwd: str | None = None,
    *,
    exists: Callable[[str], bool] = os.path.exists,
) -> PreconditionResult:
    """The first precondition (in config order) the call breaks, as a denial; else allow."""
    paths = tool_paths(arguments)
    if not preconditions or not paths:
        return PreconditionResult(True)
    for index, pre in enumerate(preconditions):
        if pre.tools and not any(glob_regex(t).match(tool_name) for t in pre.tools):
            continue
        name = pre.name or f"#{index + 1}"
        for path in paths:
            full, forms = _path_forms(path, cwd)
            for patterns, wanted in ((pre.must_not_exist, False), (pre.must_exist, True)):
                if not _matches(patterns, forms) or exists(full) == wanted:
                    continue
                state = "must exist and does not" if wanted else "must not exist and does"
                reason = pre.reason or f"memplug precondition {name}: {path} {state}"
                return PreconditionResult(False, reason, name, path)
    return PreconditionResult(True)


def _path_forms(path: str, cwd: str | None) -> tuple[str, list[str]]:
    """The path to test on disk, and the spellings patterns are matched against (as
    given, absolute, and relative to ``cwd`` when it lies below it)."""
    given = PurePosixPath(path.replace(os.sep, "/"))
    full = given if given.is_absolute() or not cwd else PurePosixPath(cwd) / given
    forms = [given.as_posix(), full.as_posix()]
    if cwd and full.is_relative_to(cwd):
        forms.append(full.relative_to(cwd).as_posix())
    return str(full), sorted(set(forms))


def _matches(patterns: Iterable[str], forms: Sequence[str]) -> bool:
    return any(glob_regex(p).match(f) for p in patterns for f in forms)
