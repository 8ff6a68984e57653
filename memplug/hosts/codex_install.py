"""Install memplug into Codex CLI, and take it out again (docs/codex.md).

Three pieces, each idempotent, each keeping whatever else is in its file:

* the hooks, in ``hooks.json`` (``$CODEX_HOME/hooks.json`` for ``--user``, default
  ``~/.codex``; ``./.codex/hooks.json`` for ``--project``), the same shape as Claude
  Code's settings, so the Claude Code installer's merge does it;
* with ``--mcp``, an ``[mcp_servers.memplug]`` table in the same folder's
  ``config.toml``;
* with ``--agents-md``, a short section on searching memory in the project's
  ``AGENTS.md``, between two marker comments.

``uninstall codex`` removes every piece it finds.
"""

from __future__ import annotations

import os
import re
import shlex
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memplug.base.errors import UsageError
from memplug.base.paths import memory_script
from memplug.hosts import claude_install as ci
from memplug.hosts.codex import HOST

MARKER = f"hook {HOST}"
# Codex's hook events memplug answers or captures on (no PreToolUse: no precondition
# runs on this host). No matcher: every tool.
EVENTS: tuple[tuple[str, str | None], ...] = (
    ("SessionStart", None),
    ("UserPromptSubmit", None),
    ("PostToolUse", None),
    ("PreCompact", None),
    ("PostCompact", None),
    ("Stop", None),
)
MCP_TABLE = "mcp_servers.memplug"
AGENTS_BEGIN = "<!-- memplug:begin (written by `memory install codex --agents-md`) -->"
AGENTS_END = "<!-- memplug:end -->"
AGENTS_SECTION = """\
## Project memory (memplug)

This project keeps a long-term memory of earlier sessions (Codex and Claude Code alike):
what was decided, the constraints, what was tried and failed. Before answering a question
about earlier work, or re-deriving something that may already be settled, search it:

- `{memory} search "DISTINCTIVE WORDS"`: ranked hits with refs (`[mem ID]`, `SESSION:SEQ`);
- `{memory} expand REF`: the full text around a hit;
- `{memory} core`: the project's standing constraints and decisions.

An empty result is proof of absence only when its coverage is complete. When the person
states a lasting decision, rule or project fact, keep it: `{memory} remember "TEXT"`.
"""


def codex_home(home: Path | None = None) -> Path:
    return Path(os.environ.get("CODEX_HOME") or (home or Path.home()) / ".codex")


def folder(scope: str, project_dir: Path | None = None) -> Path:
    if scope == "user":
        return codex_home()
    if scope == "project":
        return (project_dir or Path.cwd()) / ".codex"
    raise UsageError(f"unknown scope {scope!r} (expected user or project)")


def default_command(options: Sequence[str], *, shared: bool) -> str:
    """The hook command: this install's script with the ``--db``/``--config`` in force;
    ``memory`` from PATH in a project's file, which others share."""
    if shared:
        return f"memory {MARKER}"
    return shlex.join([memory_script(), *options, *MARKER.split()])


def install_scope(
    scope: str,
    command: str | None = None,
    *,
    dry_run: bool = False,
    options: Sequence[str] = (),
) -> ci.InstallReport:
    """Merge memplug's hooks into Codex's hooks.json.

    --user: $CODEX_HOME/hooks.json (default ~/.codex); --project: ./.codex/hooks.json,
    whose command is `memory hook codex` from PATH (the file is shared). Idempotent;
    other hooks untouched; a backup first."""
    path = folder(scope) / "hooks.json"
    command = default_command(options, shared=scope == "project") if command is None else command
    wanted = ci.hook_settings(command, EVENTS)
    merged, changes = ci.merge(ci.read_settings(path), command, wanted_hooks=wanted, marker=MARKER)
    return ci.write_report(path, command, merged, changes, dry_run)


def uninstall_scope(scope: str, *, dry_run: bool = False) -> ci.InstallReport:
    """Remove memplug from Codex: hooks, MCP table, AGENTS.md section.

    The hooks from hooks.json, [mcp_servers.memplug] from config.toml and the section
    from AGENTS.md; everything else stays."""
    path = folder(scope) / "hooks.json"
    result, changes = ci.unmerge(ci.read_settings(path), marker=MARKER)
    report = ci.write_report(path, "", result, changes, dry_run)
    for name, change in (("mcp", _mcp(folder(scope) / "config.toml", None, dry_run)),
                         ("agents_md", agents_md(_agents_path(scope), None, dry_run))):  # fmt: skip
        if change != "unchanged":
            report.changes[name] = change
    return report


def mcp_scope(
    scope: str, server: dict[str, Any] | None, *, dry_run: bool = False
) -> ci.InstallReport:
    """Register memplug's MCP server with Codex (None: take it out): an
    [mcp_servers.memplug] table in config.toml beside hooks.json."""
    path = folder(scope) / "config.toml"
    change = _mcp(path, server, dry_run)
    command = "" if server is None else shlex.join([server["command"], *server["args"]])
    report = ci.InstallReport(str(path), command, {"mcp_servers.memplug": change}, dry_run=dry_run)
    report.written = change not in ("unchanged",) and not dry_run
    return report


def agents_scope(
    scope: str, *, dry_run: bool = False, options: Sequence[str] = ()
) -> ci.InstallReport:
    """Write the memory section into the project's AGENTS.md (between marker comments)."""
    path = _agents_path(scope)
    memory = "memory" if scope == "project" else shlex.join([memory_script(), *options])
    change = agents_md(path, AGENTS_SECTION.replace("{memory}", memory), dry_run)
    return ci.InstallReport(str(path), "", {"AGENTS.md": change}, dry_run=dry_run,
                            written=change != "unchanged" and not dry_run)  # fmt: skip


def _agents_path(scope: str) -> Path:
    """The project's AGENTS.md (``--project``) or the global one in $CODEX_HOME."""
    return Path.cwd() / "AGENTS.md" if scope == "project" else codex_home() / "AGENTS.md"


# -- text edits that keep the rest of a file byte for byte ------------------------------------


def _mcp(path: Path, server: dict[str, Any] | None, dry_run: bool) -> str:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise UsageError(
            f"{path} is not valid TOML ({error}); fix it first, nothing changed"
        ) from None
    kept = _without_table(text, MCP_TABLE)
    if kept != text and kept.strip():
        kept = kept.rstrip("\n") + "\n"  # the blank line install put before the table
    block = "" if server is None else _table(server)
    wanted = (kept.rstrip("\n") + "\n\n" + block if kept.strip() else block) if block else kept
    if wanted == text:
        return "unchanged"
    if not dry_run:
        _write(path, wanted)
    verb = "removed" if server is None else "updated" if kept != text else "added"
    return f"would be {verb}" if dry_run else verb


def _table(server: dict[str, Any]) -> str:
    args = ", ".join(_toml_string(a) for a in server["args"])
    return f"[{MCP_TABLE}]\ncommand = {_toml_string(server['command'])}\nargs = [{args}]\n"


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _without_table(text: str, name: str) -> str:
    """``text`` without the ``[name]`` table (its header to the next header)."""
    lines = text.splitlines(keepends=True)
    out, skipping = [], False
    for line in lines:
        header = re.match(r"^\s*\[([^\]]+)\]\s*$", line)
        if header:
            skipping = header.group(1).strip() == name
        if not skipping:
            out.append(line)
    return "".join(out)


def agents_md(path: Path, section: str | None, dry_run: bool) -> str:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    pattern = re.compile(re.escape(AGENTS_BEGIN) + r".*?" + re.escape(AGENTS_END) + r"\n?", re.S)
    kept = pattern.sub("", text)
    if kept != text and kept.strip():
        kept = kept.rstrip("\n") + "\n"  # the blank line install put before the section
    block = f"{AGENTS_BEGIN}\n{section}{AGENTS_END}\n" if section is not None else ""
    wanted = (kept.rstrip("\n") + "\n\n" + block if kept.strip() else block) if block else kept
    if wanted == text:
        return "unchanged"
    if not dry_run:
        if wanted.strip():
            _write(path, wanted)
        else:
            path.unlink()
    verb = "removed" if section is None else "updated" if kept != text else "added"
    return f"would be {verb}" if dry_run else verb


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.memplug")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)
