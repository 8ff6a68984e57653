"""Search requests: input checks, the request a page token carries, and the scope it
resolves to. Every bad input is a :class:`~memplug.base.errors.ValidationError` here, before
any candidate is read."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from memplug.base.errors import NotFound, ValidationError
from memplug.base.text import parse_time
from memplug.base.vocab import EVENT_TYPES, OUTCOMES, ROLES
from memplug.recall.query import scrub_surrogates
from memplug.recall.retrieve.ranking import HARD_LIMIT

if TYPE_CHECKING:
    import regex

    from memplug.store.ports import SearchPort

# A page of five: on the next-day questions the top five hits' snippets held 30 of the
# 45 answers and the top twenty 38, for four times the characters; the next page is one
# call away (docs/search.md).
SEARCH_PAGE_DEFAULT = 5
# What parse_request reads when a key is absent: a page token leaves these out.
_DEFAULTS: dict[str, Any] = {"mode": "literal", "match": "any", "branches": "active"}


class SearchRequest(Struct, frozen=True):
    query: str
    session: str | None
    scope: str | None
    mode: str
    match: str
    roles: tuple[str, ...]
    types: tuple[str, ...]
    tools: tuple[str, ...]
    outcomes: tuple[str, ...]
    since: str | None
    until: str | None
    branches: str
    limit: int

    @property
    def structural(self) -> bool:
        """Whether a filter on what events are (role, type, tool, outcome, time) is set."""
        return bool(
            self.roles or self.types or self.tools or self.outcomes or self.since or self.until
        )

    def args(self) -> dict[str, Any]:
        """The request as :func:`parse_request` reads it back (from a page token): an
        empty filter or a default is left out, so that the token an agent copies stays
        short."""
        full = {
            "query": self.query,
            "session": self.session,
            "scope": self.scope,
            "mode": self.mode,
            "match": self.match,
            "role": list(self.roles),
            "type": list(self.types),
            "tool": list(self.tools),
            "outcome": list(self.outcomes),
            "since": self.since,
            "until": self.until,
            "branches": self.branches,
            "limit": self.limit,
        }
        return {
            key: value
            for key, value in full.items()
            if value not in (None, []) and _DEFAULTS.get(key) != value
        }


def parse_request(args: Mapping[str, Any], max_pattern_bytes: int) -> SearchRequest:
    """Check a search's arguments (keyed as :meth:`SearchRequest.args` writes them)."""
    mode = args.get("mode", _DEFAULTS["mode"])
    match = args.get("match", _DEFAULTS["match"])
    branches = args.get("branches", _DEFAULTS["branches"])
    if mode not in ("literal", "phrase", "regex"):
        raise ValidationError("--mode must be one of: literal, phrase, regex")
    if match not in ("any", "all"):
        raise ValidationError("--match must be 'any' or 'all'")
    if branches not in ("active", "all"):
        raise ValidationError("--branches must be 'active' or 'all'")
    roles, types = _tuple(args.get("role")), _tuple(args.get("type"))
    tools, outcomes = _tuple(args.get("tool")), _tuple(args.get("outcome"))
    _check_vocab("role", roles, ROLES)
    _check_vocab("type", types, EVENT_TYPES)
    _check_vocab("outcome", outcomes, OUTCOMES)
    limit = _limit(args.get("limit"))
    query = scrub_surrogates(str(args.get("query", "") or ""))
    if mode == "regex":
        compile_regex(query, max_pattern_bytes)
    return SearchRequest(
        query=query,
        session=args.get("session") or None,
        scope=args.get("scope") or None,
        mode=mode,
        match=match,
        roles=roles,
        types=types,
        tools=tools,
        outcomes=outcomes,
        since=parse_time(args.get("since"), "since"),
        until=parse_time(args.get("until"), "until"),
        branches=branches,
        limit=min(limit, HARD_LIMIT),
    )


def _limit(value: Any) -> int:
    if value is None:
        value = SEARCH_PAGE_DEFAULT
    try:
        limit = int(value)
    except (TypeError, ValueError):
        raise ValidationError("--limit must be a whole number") from None
    if limit < 1:
        raise ValidationError("--limit must be at least 1")
    return limit


def _tuple(value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(sorted({str(v) for v in value}))


def _check_vocab(name: str, values: tuple[str, ...], allowed: Iterable[str]) -> None:
    allowed = tuple(allowed)
    for value in values:
        if value not in allowed:
            raise ValidationError(
                f"unknown {name} '{value}' (expected one of: {', '.join(allowed)})"
            )


def compile_regex(pattern: str, max_pattern_bytes: int) -> regex.Pattern[str]:
    size = len(pattern.encode("utf-8", "surrogatepass"))
    if size > max_pattern_bytes:
        raise ValidationError(f"regex pattern is {size} bytes; the limit is {max_pattern_bytes}")
    if not pattern:
        raise ValidationError("an empty regex pattern matches everything; give a pattern")
    import regex  # only regex mode pays for it; a hook process never does

    try:
        return regex.compile(pattern, regex.IGNORECASE | regex.VERSION1)
    except (regex.error, ValueError, OverflowError, RecursionError) as error:
        raise ValidationError(f"invalid regular expression: {error}") from None


class Scope(Struct, frozen=True):
    """Which sessions a call reads (``None``: all) and whose recency counts (``anchor``)."""

    kind: str
    session_ids: tuple[str, ...] | None
    project: str | None
    anchor: str | None


def resolve_scope(store: SearchPort, scope: str | None, session: str | None) -> Scope:
    if session is not None:
        exists, project = store.session_project(session)
        if not exists:
            raise NotFound(f"no session '{session}' in this database")
    else:
        project = None
    if scope is None:
        scope = "project" if session is not None else "global"
    if scope.startswith("session:"):
        target = scope[len("session:") :]
        if not target:
            raise ValidationError("--scope session:<id> needs a session id")
        exists, _ = store.session_project(target)
        if not exists:
            raise NotFound(f"no session '{target}' in this database")
        return Scope("session", (target,), None, target)
    agent = scope.removeprefix("agent:") if scope.startswith("agent:") else ""
    if agent:
        # The sessions the agent's events are in (Claude Code: the subagent's own).
        members = tuple(store.agent_sessions(agent))
        if not members:
            raise NotFound(f"no event in this database names agent '{agent}'")
        return Scope("agent", members, None, session)
    if scope == "global":
        return Scope("global", None, None, session)
    if scope in ("session", "project"):
        if session is None:
            raise ValidationError(f"--scope {scope} needs --session")
        if scope == "project" and project is not None:
            # events.project keeps what the host sent; the session's project (its
            # cwd when the host named none) is what groups sessions.
            members = tuple(store.project_sessions(project))
            return Scope("project", members, project, session)
        return Scope("session", (session,), None, session)
    raise ValidationError("--scope must be session, project, global, session:<id> or agent:<id>")
