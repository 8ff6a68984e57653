"""`memory search` and `memory expand`: the retrieval engine from the command line."""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from memplug.base.call_tokens import needs_query
from memplug.base.errors import DatabaseMissing, MemplugError, NotFound, UsageError, ValidationError
from memplug.base.redaction import redact_tree
from memplug.base.refs import event_ref, event_ref_at
from memplug.base.text import clip
from memplug.cli.output import CliContext, emit, json_option, output_width
from memplug.recall.retrieve.expand import EXPAND_MAX_CHARS, EXPAND_MAX_CONTEXT
from memplug.recall.retrieve.ranking import HARD_LIMIT
from memplug.recall.retrieve.request import SEARCH_PAGE_DEFAULT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memplug.memory import Memory

_MODES = click.Choice(["literal", "phrase", "regex"])
_MATCHES = click.Choice(["any", "all"])
_BRANCHES = click.Choice(["active", "all"])


def _render_page(data: dict[str, Any]) -> str:
    hits = data["hits"]
    coverage = data["coverage"]
    head = f"scope: {data['scope']}"
    if hits:
        first = data.get("offset", 0) + 1
        head += f" · hits {first}–{first + len(hits) - 1} of {data['total']}"
        if any(hit["pinned"] for hit in hits):
            head += " (* = exact symbol pinned)"
    lines: list[str] = [head]
    for hit in hits:
        # One line per hit, no column padding or header: the reader is as often an
        # agent paying for every character as a person (docs/search.md).
        lines.append(f"{hit['score']:.3f}{'*' if hit['pinned'] else ''}  {_hit_ref(hit)}  "
                     f"{_hit_kind(hit)}  {clip(hit['why'], 28)}")  # fmt: skip
        # The snippet whole, under its hit: it is centred on the matched words, and a
        # reader that sees the answer there needs no expand.
        lines += indented(hit["snippet"])
    if not hits:
        lines.append("no hits")
    if coverage["complete"]:
        lines.append(
            "coverage: complete" + (" — this empty result is authoritative" if not hits else "")
        )
    else:
        lines.append(
            "coverage: INCOMPLETE ("
            + ", ".join(coverage["reasons"])
            + ")"
            + (" — absence here is not proof" if not hits else "")
        )
        lines += [f"  next: {step}" for step in coverage.get("next_steps") or ()]
    if coverage.get("error"):
        lines.append(f"error: {coverage['error']['code']}: {coverage['error']['message']}")
    if data.get("next"):
        again = "QUERY " if needs_query(data["next"]) else ""
        lines.append(f"next page: memory search {again}--next {data['next']}")
        if again:
            lines.append("  (the same QUERY: one this long rides in the token as a digest only)")
    return "\n".join(lines)


def _hit_ref(hit: dict[str, Any]) -> str:
    if hit["kind"] != "memory":
        if hit.get("opens_at") is not None:
            # What the follow token opens, in a form a reader of this page can type.
            return event_ref_at(hit["session_id"], hit["seq"], hit["opens_at"])
        return event_ref(hit["session_id"], hit["seq"])
    # The events the item came from: they are folded under it, not listed.
    sources = ", ".join(event_ref(s["session_id"], s["seq"]) for s in hit["sources"] or ())
    return hit["id"] + (f" from {sources}" if sources else "")


def _hit_kind(hit: dict[str, Any]) -> str:
    return str((hit.get("item_kind") if hit["kind"] == "memory" else hit.get("type")) or "")


def indented(text: str, indent: str = "    ") -> list[str]:
    """``text`` under a row: wrapped to the terminal's width, one line when piped."""
    width = output_width()
    if width is None or width <= len(indent) + 20:
        return [indent + text]
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent)


def _render_expand(data: dict[str, Any]) -> str:
    lines: list[str] = [f"scope: {data['scope']}"] if data["scope"] else []
    if data.get("item"):
        item = data["item"]
        lines.append(f"{item['id']}  {item['kind']} ({item['evidence_type']}, {item['status']})")
        lines.append(f"  {item['content']}")
        if item.get("superseded_by"):
            lines.append(f"  superseded by {item['superseded_by']}")
        lines.append("sources:")
    for event in data["events"]:
        header = f"── {event_ref(event['session_id'], event['seq'])}  {event['type']}"
        if event.get("role"):
            header += f"  {event['role']}"
        if event.get("time"):
            header += f"  {event['time']}"
        if event.get("anchor"):
            header += "  ◀"
        lines.append(header)
        lines.append(event["text"])
        rng = event["text_range"]
        if not rng["complete"]:
            ref = event_ref(event["session_id"], event["seq"])
            whole = f"; from the start: memory expand {ref}" if rng["start"] else ""
            lines.append(f"   [characters {rng['start']}–{rng['end']} of {rng['total']}{whole}]")
    coverage = data["coverage"]
    if coverage.get("error"):
        lines.append(f"error: {coverage['error']['code']}: {coverage['error']['message']}")
    elif not coverage["complete"]:
        lines.append("coverage: INCOMPLETE (" + ", ".join(coverage["reasons"]) + ")")
    if data.get("next"):
        lines.append(f"more: memory expand {data['next']}")
    return "\n".join(lines)


# The results a failed call prints on stdout under --json (docs/search.md, JSON shapes).
_FAILED_SEARCH: dict[str, Any] = {"total": 0, "offset": 0, "hits": [], "next": None}
_FAILED_EXPAND: dict[str, Any] = {"anchor": None, "events": [], "next": None}
# Error codes of the failures raised before a result exists (coverage carries the rest:
# stale_pointer, address_not_found).
_CODES: tuple[tuple[type[MemplugError], str], ...] = (
    (DatabaseMissing, "no_database"),
    (NotFound, "not_found"),
    (UsageError, "invalid_input"),
)


def error_code(error: MemplugError) -> str:
    return next((code for kind, code in _CODES if isinstance(error, kind)), "failed")


@contextmanager
def _json_errors(as_json: bool, failed: dict[str, Any]) -> Iterator[None]:
    """Under --json, a failure is also a result on stdout (the one ``Error:`` line and the
    exit code stay as they are): ``coverage.error`` says what went wrong."""
    try:
        yield
    except MemplugError as error:
        if as_json:
            info = {"code": error_code(error), "message": str(error)}
            coverage = {"complete": False, "reasons": [], "error": info}
            emit({**failed, "coverage": coverage}, True)
        raise


def _in_range(option: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise ValidationError(f"{option} must be between {low} and {high}, not {value}")


def _finish(data: dict[str, Any], as_json: bool, render: Any) -> None:
    emit(data, as_json, render)
    error = data["coverage"].get("error")
    if error:
        click.echo(f"Error: {error['code']}: {error['message']}", err=True)
        sys.exit(2)


_raw = click.option(
    "--raw", is_flag=True, help="Show credentials as captured (only to a terminal)."
)


def _check_raw(raw: bool) -> None:
    """The bytes as captured go to a person at a terminal, never into a pipe or a file
    an agent or a log could read."""
    if raw and not sys.stdout.isatty():
        raise click.UsageError("--raw shows credentials as captured: only to a terminal")


def withheld(memory: Memory, page: dict[str, Any], query: str | None) -> dict[str, Any]:
    """A search page as a model gets it from the MCP tools: credentials replaced by a
    marker naming their kind, and no hit that only a withheld value matched."""
    from memplug.hosts.mcp import unconfirmed

    return redact_tree(unconfirmed(memory, page, query))


@click.command("search")
@click.argument("query", required=False)
@click.option("--session", help="Session the search is about (scope defaults to its project).")
@click.option("--scope", help="session, project, global, session:<id> or agent:<id>.")
@click.option("--mode", type=_MODES, default="literal", show_default=True)
@click.option("--match", type=_MATCHES, default="any", show_default=True)
@click.option("--role", multiple=True, help="Only events with this role (repeatable).")
@click.option("--type", "types", multiple=True, help="Only events of this type (repeatable).")
@click.option("--tool", multiple=True, help="Only events of this tool (repeatable).")
@click.option("--outcome", multiple=True, help="Only events with this outcome (repeatable).")
@click.option("--since", help="Only events at or after this ISO-8601 date/time.")
@click.option("--until", help="Only events before this ISO-8601 date/time.")
@click.option("--branches", type=_BRANCHES, default="active", show_default=True)
@click.option(
    "--limit", type=int, default=SEARCH_PAGE_DEFAULT, show_default=True, help="Page size (max 100)."
)
@click.option("--next", "next_token", help="Continue a previous search with its next token.")
@click.option("--project", help="Search this project (a folder; default: the working folder's).")
@_raw
@json_option
@click.pass_obj
def search_cmd(
    ctx: CliContext,
    query: str | None,
    session: str | None,
    scope: str | None,
    mode: str,
    match: str,
    role: tuple[str, ...],
    types: tuple[str, ...],
    tool: tuple[str, ...],
    outcome: tuple[str, ...],
    since: str | None,
    until: str | None,
    branches: str,
    limit: int,
    next_token: str | None,
    project: str | None,
    raw: bool,
    as_json: bool,
) -> None:
    """Search captured events and memory items.

    Prints ranked hits with why each matched; `--json` gives
    {total, hits, next, coverage}. An empty result is authoritative only when
    coverage is complete. Credentials are withheld as for a model (an agent reads this
    too); `--raw` shows them as captured, to a terminal only.
    """
    if next_token is None and query is None:
        raise click.UsageError("give a QUERY (or --next TOKEN)")
    _check_raw(raw)
    with _json_errors(as_json, _FAILED_SEARCH), ctx.read() as memory:
        _in_range("--limit", limit, 1, HARD_LIMIT)
        if project is not None and (session is not None or scope is not None):
            raise click.UsageError("--project excludes --session and --scope; give one")
        where = os.path.abspath(project) if project is not None else os.getcwd()
        if project is not None and memory.scope(cwd=where).name == "global":
            raise NotFound(f"no project {project!r} in this database")
        data = memory.search(
            query,
            next_token=next_token,
            cwd=where,
            session=session,
            scope=scope,
            mode=mode,
            match=match,
            role=role,
            type=types,
            tool=tool,
            outcome=outcome,
            since=since,
            until=until,
            branches=branches,
            limit=limit,
        )
        if not raw:
            data = withheld(memory, data, query)
    _finish(data, as_json, _render_page)


@click.command("expand")
@click.argument("target")
@click.option("--before", type=int, default=0, show_default=True, help="Events before (max 50).")
@click.option("--after", type=int, default=0, show_default=True, help="Events after (max 50).")
@click.option("--branches", type=_BRANCHES, default=None, help="Walk the active path or all.")
@click.option("--max-chars", type=int, default=20_000, show_default=True, help="Text per call.")
@_raw
@json_option
@click.pass_obj
def expand_cmd(
    ctx: CliContext,
    target: str,
    before: int,
    after: int,
    branches: str | None,
    max_chars: int,
    raw: bool,
    as_json: bool,
) -> None:
    """Full text around a hit, in chunks that never cut silently.

    TARGET is a follow token, SESSION:SEQ, SESSION:SEQ@OFFSET (a long event opened at a
    search hit's match) or a mem_ id.
    Long text comes in chunks with text_range {start, end, total, complete};
    follow `next` until it is null to read everything. Credentials are withheld unless
    `--raw` (to a terminal only).
    """
    _check_raw(raw)
    with _json_errors(as_json, _FAILED_EXPAND), ctx.read() as memory:
        _in_range("--max-chars", max_chars, 1, EXPAND_MAX_CHARS)
        _in_range("--before", before, 0, EXPAND_MAX_CONTEXT)
        _in_range("--after", after, 0, EXPAND_MAX_CONTEXT)
        data = memory.expand(
            target, before=before, after=after, max_chars=max_chars, branches=branches
        )
    _finish(data if raw else redact_tree(data), as_json, _render_expand)
