"""memplug as an MCP server on stdio: the model navigates its own memory (docs/mcp.md).

Every tool is one entry of ``TOOLS``: a name, a description, a pydantic model of its
arguments (whose JSON schema ``tools/list`` publishes, and which validates each call)
and a function from an open :class:`~memplug.memory.Memory` to a JSON result. The
results are the CLI's ``--json`` shapes — coverage and call tokens included — with
three differences a model needs:

* **read-only but one**: the database is opened read-only for each call, except for
  ``memory_remember``, which captures one explicit remember (as ``memory remember``
  does); no tool retracts, promotes or purges;
* **bounded**: every argument that sizes a result has a cap, and a result larger than
  ``MAX_RESULT_CHARS`` is refused with an error naming the smaller call to make;
* **redacted**: every string of every result goes through the secret scanner, each
  secret replaced by a marker naming its kind (call tokens are not text and pass); and
  a search hit that only a withheld value matched is left out (:func:`unconfirmed`),
  so a search cannot confirm a guessed password.

A bad argument, an unknown token or a missing database is a tool error
(``isError``), never a crash of the server.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Literal

from msgspec import Struct
from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as ArgumentError

from memplug.base.errors import MemplugError
from memplug.base.paths import DISTRIBUTION, memory_script
from memplug.base.redaction import SecretSpan, find_secrets, redact_tree
from memplug.base.vocab import TIMELINE_KINDS
from memplug.memory import Memory
from memplug.plugin import Plugin, open_plugin

SERVER_NAME = "memplug"
MAX_RESULT_CHARS = 60_000
INSTRUCTIONS = (
    "memplug is this project's long-term memory: every message, tool call and result "
    "captured so far, and the decisions, constraints and facts derived from them. "
    "Search it, follow a hit's `follow` token with memory_expand to read the evidence, "
    "and pass `next` back to get the next page. An empty result is proof of absence "
    "only when coverage.complete is true."
)

ScopeText = Field(
    None, description="global, project:<key>, session:<id> or agent:<id> (default: current)"
)


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchArgs(_Args):
    query: str | None = Field(
        None,
        description="Words, symbols or a quoted phrase (with `next` too when the query is "
        "over 1,000 characters: its token keeps only a digest).",
    )
    next: str | None = Field(None, description="A `next` token from an earlier page.")
    scope: str | None = Field(
        None, description="session, project, global, session:<id> or agent:<id>."
    )
    session: str | None = Field(None, description="The session the search is about.")
    mode: Literal["literal", "phrase", "regex"] = "literal"
    match: Literal["any", "all"] = "any"
    role: list[str] = Field(default_factory=list, max_length=5)
    type: list[str] = Field(default_factory=list, max_length=12)
    tool: list[str] = Field(default_factory=list, max_length=10)
    outcome: list[str] = Field(default_factory=list, max_length=4)
    since: str | None = None
    until: str | None = None
    limit: int | None = Field(None, ge=1, le=40, description="Page size (default 5).")


class ExpandArgs(_Args):
    target: str = Field(
        description="A `follow` or `next` token, SESSION:SEQ, SESSION:SEQ@OFFSET or a mem_ id."
    )
    before: int = Field(0, ge=0, le=10)
    after: int = Field(0, ge=0, le=10)
    max_chars: int = Field(8_000, ge=200, le=20_000)


class TimelineArgs(_Args):
    next: str | None = Field(None, description="A `next` token from an earlier page.")
    scope: str | None = ScopeText
    project: str | None = None
    session: str | None = None
    since: str | None = Field(None, description="ISO-8601 date or time.")
    until: str | None = Field(None, description="ISO-8601 date or time.")
    entity: str | None = Field(None, description="Only entries naming this entity.")
    kinds: list[Literal[TIMELINE_KINDS]] = Field(default_factory=list)  # type: ignore[valid-type]
    limit: int = Field(20, ge=1, le=50)


class NeighborsArgs(_Args):
    entity: str = Field(description="An entity id (port:8080, file:/a/b.py) or a name.")
    hops: int = Field(2, ge=1, le=3)
    scope: str | None = ScopeText
    project: str | None = None
    session: str | None = None


class RememberArgs(_Args):
    text: str = Field(
        min_length=1, max_length=4_000,
        description="The lasting decision, rule or project fact, in one or two sentences.",
    )  # fmt: skip
    kind: Literal["fact", "decision", "constraint", "preference", "open_question"] | None = None
    project: str | None = Field(None, description="A project (its cwd); default: the current one.")


def _remember(memory: Memory, args: RememberArgs, cwd: str) -> dict[str, Any]:
    return memory.remember(args.text, kind=args.kind, project=args.project or cwd, actor="mcp")


class CoreArgs(_Args):
    project: str | None = Field(
        None, description="A project (its cwd); default: the current one, else global."
    )


def _core(memory: Memory, args: CoreArgs, cwd: str) -> dict[str, Any]:
    return memory.core(args.project, cwd=cwd)


def _search(memory: Memory, args: SearchArgs, cwd: str) -> dict[str, Any]:
    return unconfirmed(memory, _page(memory, args, cwd), args.query)


def _page(memory: Memory, args: SearchArgs, cwd: str) -> dict[str, Any]:
    if args.next:
        return memory.search(args.query, next_token=args.next)
    return memory.search(
        args.query,
        cwd=cwd,
        session=args.session,
        scope=args.scope,
        mode=args.mode,
        match=args.match,
        role=args.role,
        type=args.type,
        tool=args.tool,
        outcome=args.outcome,
        since=args.since,
        until=args.until,
        limit=args.limit,
    )


def _expand(memory: Memory, args: ExpandArgs, cwd: str) -> dict[str, Any]:
    return memory.expand(
        args.target, before=args.before, after=args.after, max_chars=args.max_chars
    )


def _timeline(memory: Memory, args: TimelineArgs, cwd: str) -> dict[str, Any]:
    if args.next:
        return memory.timeline.page(args.next)
    return memory.timeline.query(
        scope=args.scope,
        project=args.project,
        session=args.session,
        since=args.since,
        until=args.until,
        entity=args.entity,
        kinds=args.kinds,
        limit=args.limit,
        cwd=cwd,
    )


def _neighbors(memory: Memory, args: NeighborsArgs, cwd: str) -> dict[str, Any]:
    where = memory.scope(scope=args.scope, project=args.project, session=args.session, cwd=cwd)
    return memory.graph.neighbors(args.entity, where, hops=args.hops)


def unconfirmed(memory: Memory, page: dict[str, Any], query: str | None) -> dict[str, Any]:
    """``page`` without the hits that only a withheld value matched, nor the hits found
    near them: a model that searches for a guessed password must not learn from a
    pinned ``exact:`` hit, its score or its rank that the guess was right. A hit is left
    out when a term it was found by (named in its ``why``, or a word of the query) occurs
    in its text only inside a span :func:`find_secrets` withholds; its score counted
    that term, so no rank given to it would be honest (docs/security.md)."""
    hits = page.get("hits") or []
    dropped = {_ref(hit) for hit in hits if _confirms_secret(memory, hit, query)}
    if not dropped:
        return page
    kept = [hit for hit in hits if _ref(hit) not in dropped and _via(hit) not in dropped]
    total = page.get("total")
    out = {**page, "hits": kept}
    if isinstance(total, int):
        out["total"] = total - (len(hits) - len(kept))
    return out


def _via(hit: dict[str, Any]) -> str | None:
    """The hit a ``near:REF`` or ``source:ID`` hit was found through."""
    how, _, ref = str(hit.get("why", "")).partition(":")
    return ref if how in ("near", "source") else None


def _ref(hit: dict[str, Any]) -> str:
    return str(hit["id"]) if hit.get("kind") == "memory" else f"{hit['session_id']}:{hit['seq']}"


def _confirms_secret(memory: Memory, hit: dict[str, Any], query: str | None) -> bool:
    if hit.get("kind") == "memory":
        text = memory.item_text(str(hit["id"]))
    else:
        text = memory.event_text(str(hit["session_id"]), int(hit["seq"]))
    spans = find_secrets(text)
    if not spans:
        return False
    # Offsets into the lowered text are the spans' only when lowering kept them all.
    lowered = text.lower() if len(text.lower()) == len(text) else text
    how = str(hit.get("why", "")).split(" +", 1)[0]
    if how == "regex":
        # A pattern can probe a value character by character, and where its matches
        # fell would take running it again: a regex hit on such a text is left out
        # whatever it matched (that the text withholds a value, its marker says anyway).
        return True
    named = how.split(":", 1)[1].split(",") if how.startswith(("exact:", "word:")) else []
    words = _QUERY_WORD.findall(query or "")
    return any(_only_withheld(lowered, term.lower(), spans) for term in [*named, *words])


_QUERY_WORD = re.compile(r"[^\s\"'`.,;:!?()\[\]{}]+")


def _only_withheld(lowered: str, term: str, spans: list[SecretSpan]) -> bool:
    """``term`` starts a word of ``lowered`` (as the index finds it: a whole word or a
    prefix), and each time it does, it overlaps a withheld span."""
    found = False
    for at in (m.start() for m in re.finditer(rf"(?<![a-z0-9]){re.escape(term)}", lowered)):
        if not _withheld(at, at + len(term), spans):
            return False
        found = True
    return found


def _withheld(start: int, end: int, spans: list[SecretSpan]) -> bool:
    return any(span.start < end and start < span.end for span in spans)


class Tool(Struct, frozen=True):
    name: str
    description: str
    args: type[_Args]
    run: Callable[[Memory, Any, str], dict[str, Any]]
    writes: bool = False

    def schema(self) -> dict[str, Any]:
        return self.args.model_json_schema()


# One entry per tool.
TOOLS: tuple[Tool, ...] = (
    Tool(
        "memory_search",
        "Search captured events and memory items. Returns ranked hits with why each "
        "matched, a `follow` token per hit (pass it to memory_expand), `next` for the "
        "next page and coverage (an empty result is authoritative only when complete).",
        SearchArgs,
        _search,
    ),
    Tool(
        "memory_expand",
        "Read the full text around a hit: a `follow` token, SESSION:SEQ or a mem_ id. "
        "Long text comes in chunks; pass `next` back to continue.",
        ExpandArgs,
        _expand,
    ),
    Tool(
        "memory_timeline",
        "What happened and when: decisions, constraints, tool failures and successes, "
        "files touched, compactions, sessions — in time order, each with its session, "
        "seq range and a `follow` token. Filters by the current project unless told.",
        TimelineArgs,
        _timeline,
    ),
    Tool(
        "memory_neighbors",
        "Entities related to an entity (file, host, port, package, version, identifier, "
        "project, subject) within `hops` edges, with the events that state each relation; "
        "a relation a later statement contradicted carries `superseded_by`.",
        NeighborsArgs,
        _neighbors,
    ),
    Tool(
        "memory_core",
        "The project's resident core: its standing constraints, task state, latest "
        "decisions and open questions, each line with its [mem …]/[ev …] provenance and "
        "why it is there — what every injected memory message starts with.",
        CoreArgs,
        _core,
    ),
    Tool(
        "memory_remember",
        'Keep a lasting decision, rule or project fact the person stated ("we use pnpm", '
        '"never push to main") as a memory item of this project; a later one about the '
        "same subject supersedes it. Not for the task at hand or for guesses.",
        RememberArgs,
        _remember,
        writes=True,
    ),
)
TOOLS_BY_NAME: dict[str, Tool] = {tool.name: tool for tool in TOOLS}


def server_entry(options: Sequence[str] = (), *, shared: bool = False) -> dict[str, Any]:
    """How a harness starts this server (the ``mcpServers`` entry most harnesses read):
    this installation's ``memory`` script with ``options``, the ``--db``/``--config`` in
    force at install time (``CliContext.global_options``). A ``shared`` entry (a file
    meant to be committed, such as a project's ``.mcp.json``) names no path of this
    machine: ``memory`` from each person's PATH, their own default database."""
    if shared:
        return {"type": "stdio", "command": "memory", "args": ["mcp"], "env": {}}
    return {"type": "stdio", "command": memory_script(), "args": [*options, "mcp"], "env": {}}


class ServerSettings(Struct, frozen=True):
    db_path: str | None
    config_path: str | None
    cwd: str


def call(settings: ServerSettings, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
    """Run one tool; any problem a caller can fix raises ``MemplugError`` or
    ``ArgumentError`` with a message for the model."""
    tool = TOOLS_BY_NAME.get(name)
    if tool is None:
        raise MemplugError(f"unknown tool '{name}' (tools: {', '.join(TOOLS_BY_NAME)})")
    args = tool.args.model_validate(arguments or {})
    with _open(settings, writes=tool.writes) as plugin:
        result = tool.run(plugin.memory, args, settings.cwd)
    result = redact_tree(result)
    size = len(json.dumps(result, ensure_ascii=False))
    if size > MAX_RESULT_CHARS:
        raise MemplugError(
            f"the result is {size:,} characters (limit {MAX_RESULT_CHARS:,}); "
            "ask for fewer (limit, max_chars, hops)"
        )
    return result


def _open(settings: ServerSettings, *, writes: bool = False) -> Plugin:
    """The database through the host protocol, as every host opens it; a tool that only
    reads opens it read-only (and never creates it)."""
    return open_plugin(
        settings.db_path, config_path=settings.config_path, create=writes, readonly=not writes
    )


def error_message(error: Exception) -> str:
    if isinstance(error, ArgumentError):
        problems = [
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
            for e in error.errors()
        ]
        return "Error: bad arguments: " + "; ".join(problems)
    return f"Error: {error}"


def build_server(settings: ServerSettings) -> Any:
    """The SDK's low-level server with memplug's tool table."""
    import mcp.types as types
    from mcp.server.lowlevel import Server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool.name,
                    description=tool.description,
                    input_schema=tool.schema(),
                    annotations=types.ToolAnnotations(
                        read_only_hint=not tool.writes, destructive_hint=False
                    ),
                )
                for tool in TOOLS
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            result = call(settings, params.name, params.arguments)
        except (MemplugError, ArgumentError) as error:
            text = error_message(error)
            return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
        body = json.dumps(result, ensure_ascii=False, indent=1)
        return types.CallToolResult(
            content=[types.TextContent(text=body)], structured_content=result
        )

    return Server(
        SERVER_NAME,
        version=_version(),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def serve(db_path: str | None, config_path: str | None) -> None:
    """Serve MCP on stdin/stdout until the client closes the connection."""
    import anyio
    from mcp.server.stdio import stdio_server

    settings = ServerSettings(db_path, config_path, os.getcwd())
    server = build_server(settings)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


def _version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0"
