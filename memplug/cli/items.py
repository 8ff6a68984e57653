"""`memory items`, `inspect`, `retract`, `promote` and `rebuild`: thin shells over
:class:`memplug.derive.extract.Extractor`."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from memplug.base.errors import MemplugError, UsageError
from memplug.base.refs import event_ref
from memplug.base.text import clip
from memplug.base.vocab import ITEM_STATUSES, MEMORY_KINDS
from memplug.cli.capture import embed_with_bar
from memplug.cli.output import CliContext, emit, json_option, table, terminal_progress
from memplug.derive.cues.structural import REMEMBER_KINDS
from memplug.derive.extract import ACTOR_CLI, PROMOTE_KINDS

_LIST_FIELDS = (
    "id",
    "session_id",
    "kind",
    "content",
    "status",
    "evidence_type",
    "superseded_by",
    "subject_key",
    "source_refs",
    "extractor",
    "conditions",
    "numbers",
    "agent",
    "created_at",
)


def _render_items(data: dict[str, Any]) -> str:
    head = f"scope: {data['scope']}"
    if not data["items"]:
        return f"{head}\nno memory items"
    rows = [
        [item["id"], item["kind"], item["status"], clip(item["content"].replace("\n", " "), 60)]
        for item in data["items"]
    ]
    lines = table(rows, ["id", "kind", "status", "content"], fit=("content",)).split("\n")
    out = [head, *lines[:2]]
    for line, item in zip(lines[2:], data["items"], strict=True):
        out.append(line)
        if item["superseded_by"]:
            # A line of its own: an id is copied whole, never clipped to fit.
            out.append(f"  └ superseded by {item['superseded_by']}")
    return "\n".join(out)


@click.command("items")
@click.option("--project", help="Only this project (default: the current context).")
@click.option("--scope", help="global, project:<key>, session:<id> or agent:<id>.")
@click.option("--session", "sessions", multiple=True, help="Only this session (repeatable).")
@click.option("--status", type=click.Choice(ITEM_STATUSES), help="Only items with this status.")
@click.option("--kind", type=click.Choice(MEMORY_KINDS), help="Only items of this kind.")
@click.option("--limit", type=click.IntRange(1, 100_000), help="At most this many items.")
@json_option
@click.pass_obj
def items_cmd(
    ctx: CliContext,
    project: str | None,
    scope: str | None,
    sessions: tuple[str, ...],
    status: str | None,
    kind: str | None,
    limit: int | None,
    as_json: bool,
) -> None:
    """List memory items (in session and creation order).

    Reads the current context (the working directory's project, else every session)
    unless told otherwise (--project, --scope, --session) and says which scope it read;
    `--json` gives {scope, items}."""
    with ctx.read() as memory:
        data = memory.items(
            scope=scope,
            project=project,
            sessions=sessions,
            status=status,
            kind=kind,
            limit=limit,
            cwd=os.getcwd(),
        )
    data["items"] = [{k: item[k] for k in _LIST_FIELDS} for item in data["items"]]
    emit(data, as_json, _render_items)


def _render_inspect(data: dict[str, Any]) -> str:
    if data["object"] == "event":
        lines = [
            f"event      {data['ref']}",
            f"type       {data['type']}"
            + (f"  tool {data['tool_name']}" if data["tool_name"] else "")
            + (f"  outcome {data['outcome']}" if data["outcome"] else ""),
            f"role       {data['role'] or '-'}"
            + (f"  agent {data['agent']}" if data["agent"] else ""),
            f"scope      {data['in_scope']}",
            f"time       {data['event_time'] or '-'}  turn {data['turn']}",
            f"source     {data['source_kind'] or '-'}{' (generated)' if data['generated'] else ''}",
            f"extracted  {data['extracted_as'] or 'no (not read by extraction)'}",
        ]
        if data["truncated"]:
            lines.append(f"text       {data['text_chars']} chars, full text from the archive")
        lines += ["", data["text"], ""]
        for item in data["items"]:
            lines.append(f"item       {item['id']} {item['kind']} {item['status']}")
        if data["pending_extraction"]:
            pending = data["pending_extraction"]
            lines.append(f"pending    {pending['attempts']} attempts: {pending['last_error']}")
        return "\n".join(lines).rstrip()
    lines = [
        f"item       {data['id']}",
        f"kind       {data['kind']} ({data['evidence_type']})",
        f"status     {data['status']}",
        f"scope      {data['in_scope']}" + (f"  agent {data['agent']}" if data["agent"] else ""),
        f"content    {data['content']}",
        f"subject    {data['subject_key'] or '-'}",
        f"extractor  {data['extractor']}",
    ]
    if data["conditions"]:
        lines.append(f"conditions {'; '.join(data['conditions'])}")
    for number in data["numbers"]:
        flag = "  (no unit or condition)" if number.get("flagged") else ""
        lines.append(f"number     {number['raw']}{flag}")
    for link in reversed(data["chain"]["older"]):
        lines.append(f"replaced   {link['id']} [{link['status']}] {clip(link['content'], 60)}")
    for link in data["chain"]["newer"]:
        lines.append(f"replaced by {link['id']} [{link['status']}] {clip(link['content'], 60)}")
    lines.append("")
    for source in data["sources"]:
        if source.get("missing"):
            lines.append(f"[{source['ref']}] (event no longer stored)")
        else:
            lines.append(f"[{source['ref']}] {source['role'] or ''} {source['time'] or ''}")
            lines.append(f"  {source['text']}")
    lines.append("")
    for event in data["lifecycle"]:
        lines.append(f"{event['at'] or '-'}  {event['event']:<11} {event['actor']}")
    for assembly in data["assemblies"]:
        what = "included" if assembly["included"] else f"omitted ({assembly['reason']})"
        lines.append(f"assembly #{assembly['id']} {what}")
    return "\n".join(lines).rstrip()


@click.command("inspect")
@click.argument("ref")
@json_option
@click.pass_obj
def inspect_cmd(ctx: CliContext, ref: str, as_json: bool) -> None:
    """Show one memory item (mem_…) or event (SESSION:SEQ).

    An item with its sources, supersession chain and lifecycle; an event with its
    type, tool and what extraction made of it."""
    with ctx.read() as memory:
        data = memory.extractor.inspect(ref)
    emit(data, as_json, _render_inspect)


def _render_change(data: dict[str, Any]) -> str:
    item = data["item"]
    return f"{item['id']} is now {item['status']} ({item['kind']}, {item['evidence_type']})"


def _render_remembered(data: dict[str, Any]) -> str:
    item = data["item"]
    if item is None:
        return f"captured {data['event']}; it made no item"
    line = f"remembered as {item['id']} ({item['kind']}) in project {data['project']}"
    if data["supersedes"]:
        line += "; it supersedes " + ", ".join(data["supersedes"])
    return line


@click.command("remember")
@click.argument("text")
@click.option("--kind", type=click.Choice(REMEMBER_KINDS),
              help="What it is (default: read from the text, else a fact).")  # fmt: skip
@click.option("--project", help="The project it belongs to (default: the working folder's).")
@json_option
@click.pass_obj
def remember_cmd(
    ctx: CliContext, text: str, kind: str | None, project: str | None, as_json: bool
) -> None:
    """Keep TEXT as a lasting decision, rule or project fact.

    It is captured as an event (so `rebuild` makes the same item) and supersedes an
    earlier remembered item of the same subject; `--json` gives {event, project, item,
    supersedes}."""
    with ctx.open(create=True) as memory:
        data = memory.remember(text, kind=kind, project=project, actor=ACTOR_CLI)
        emit(data, as_json, _render_remembered)


@click.command("retract")
@click.argument("memory_id")
@click.option("--note", help="Why (kept with the action).")
@json_option
@click.pass_obj
def retract_cmd(ctx: CliContext, memory_id: str, note: str | None, as_json: bool) -> None:
    """Retract a memory item: kept with its history, no longer used."""
    with ctx.open(create=False) as memory:
        item = memory.extractor.retract(memory_id, actor=ACTOR_CLI, note=note)
        emit({"item": item.as_dict()}, as_json, _render_change)


@click.command("promote")
@click.argument("memory_id")
@click.option(
    "--kind",
    type=click.Choice(PROMOTE_KINDS),
    default="decision",
    show_default=True,
    help="What the accepted proposal becomes.",
)
@click.option("--note", help="Why (kept with the action).")
@json_option
@click.pass_obj
def promote_cmd(
    ctx: CliContext, memory_id: str, kind: str, note: str | None, as_json: bool
) -> None:
    """Accept an assistant proposal as a user_explicit item.

    It becomes an item of KIND."""
    with ctx.open(create=False) as memory:
        item = memory.extractor.promote(memory_id, kind=kind, actor=ACTOR_CLI, note=note)
        emit({"item": item.as_dict()}, as_json, _render_change)


def _render_rebuild(data: dict[str, Any]) -> str:
    lines = [
        f"rebuilt {len(data['sessions'])} session(s) from {data['events']} statement events: "
        f"{data['created']} items created, {data['superseded']} superseded, "
        f"{data['disputed']} disputed, {data['retracted']} retracted, "
        f"{data['actions']} recorded actions replayed"
    ]
    for failure in data["failed"]:
        failed = event_ref(failure["session_id"], failure["seq"])
        lines.append(f"  failed {failed}: {failure['error']}")
    return "\n".join(lines)


def _render_vectors(data: dict[str, Any]) -> str:
    v = data["vectors"]
    line = f"embedded {v['embedded']:,} event(s); {v['remaining']:,} still without a vector"
    return line + (f"\nprovider failed: {v['error']}" if v["error"] else "")


@click.command("rebuild")
@click.option("--session", help="Only this session.")
@click.option(
    "--vectors",
    is_flag=True,
    help="Instead: embed the events whose vector is missing or stale (semantic provider).",
)
@json_option
@click.pass_obj
def rebuild_cmd(ctx: CliContext, session: str | None, vectors: bool, as_json: bool) -> None:
    """Drop derived memory and derive it again from events.

    The items, their text, ids and links come out identical (docs/extraction.md)."""
    if vectors:
        _rebuild_vectors(ctx, session, as_json)
        return
    with ctx.open(create=False, upgrade=False) as memory:
        progress = terminal_progress("rebuilding session", quiet=as_json)
        report = memory.rebuild(session, progress=progress)
    emit(report.as_dict(), as_json, _render_rebuild)


def _rebuild_vectors(ctx: CliContext, session: str | None, as_json: bool) -> None:
    if session is not None:
        raise UsageError("--vectors embeds every session; drop --session")
    with ctx.open(create=False) as memory:
        semantic = memory.semantic
        if not semantic.enabled:
            raise UsageError("semantic.provider is off: there are no vectors to rebuild")
        if semantic.embedder is None:
            raise MemplugError(str(semantic.unavailable))
        report = embed_with_bar(memory, show_bar=not as_json and sys.stderr.isatty())
    assert report is not None
    emit({"vectors": report.as_dict()}, as_json, _render_vectors)
    if report.error:
        sys.exit(1)
