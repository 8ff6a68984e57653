"""Scopes: which part of memory a row belongs to and a query looks at.

A derived row (memory item, timeline entry, entity, edge) carries the scope of the
session it came from: ``project:<key>`` when the session has a project (the host's
project name, else its working directory), ``session:<id>`` when it has none; and,
when the host named the agent that made its event (``EventRow.agent``), that agent's
tag, which ``agent:<id>`` reads (the project's scope still holds the row).
``global`` spans everything. A query that names no scope takes the current context:
the project given, else the session's project, else the project of the working
directory when the database knows it, else ``global`` — and every result says which.
"""

from __future__ import annotations

import os

from msgspec import Struct

from memplug.base.errors import NotFound, ValidationError
from memplug.base.paths import project_of
from memplug.base.refs import row_scope
from memplug.store.ports import Storage
from memplug.store.records import ScopeFilter

GLOBAL = "global"


class NamedScope(Struct, frozen=True):
    """A resolved query scope: its name as results report it and the row filter."""

    name: str
    where: ScopeFilter


def resolve(
    store: Storage,
    *,
    scope: str | None = None,
    project: str | None = None,
    session: str | None = None,
    cwd: str | None = None,
) -> NamedScope:
    """The scope a query searches; see the module docstring for the defaults."""
    if session is not None and store.events.session(session) is None:
        raise NotFound(f"no session '{session}' in this database")
    # One rule for sessions and projects: one the caller names must be in the database.
    named = project or (
        scope.removeprefix("project:") if scope and scope.startswith("project:") else None
    )
    if named and not store.events.project_sessions(named):
        raise NotFound(f"no project '{named}' in this database")
    if scope is None:
        scope = _default(store, project, session, cwd)
    if scope == GLOBAL:
        return NamedScope(GLOBAL, ScopeFilter())
    if scope.startswith("project:") and len(scope) > len("project:"):
        return NamedScope(scope, ScopeFilter(scopes=(GLOBAL, scope)))
    if scope.startswith("session:") and len(scope) > len("session:"):
        target = scope[len("session:") :]
        if store.events.session(target) is None:
            raise NotFound(f"no session '{target}' in this database")
        return NamedScope(scope, ScopeFilter(session_id=target))
    if scope.startswith("agent:") and len(scope) > len("agent:"):
        agent = scope[len("agent:") :]
        if not store.timeline.agent_known(agent):
            raise NotFound(f"nothing in this database was derived from agent '{agent}'")
        return NamedScope(scope, ScopeFilter(agent=agent))
    raise ValidationError(
        f"scope must be global, project:<key>, session:<id> or agent:<id>, not '{scope}'"
    )


def context_session(store: Storage, cwd: str) -> str | None:
    """For a search that names no scope: a session of the working directory's project
    (search resolves ``project`` scope through a session), None when there is none."""
    name = _default(store, None, None, cwd)
    if name == GLOBAL:
        return None
    return store.events.project_sessions(name.removeprefix("project:"))[0]


def searched(store: Storage, scope: str | None, session: str | None) -> str:
    """The name, in these terms, of what a search with ``scope`` and ``session`` read
    (search's own scopes: ``session``, ``project``, ``global``, ``session:<id>``,
    ``agent:<id>``)."""
    if scope in ("project", None) and session is not None:
        return resolve(store, session=session).name
    if scope == "session" and session is not None:
        return f"session:{session}"
    return scope or GLOBAL


def _default(store: Storage, project: str | None, session: str | None, cwd: str | None) -> str:
    if project:
        return f"project:{project}"
    found = store.events.session(session) if session is not None else None
    if session is not None and found is not None:
        return row_scope(found.get("project"), session)
    here = (cwd if cwd is not None else os.getcwd()).rstrip("/")
    # A subfolder or a linked worktree of a repository reads the repository's project.
    here = project_of(here) or here
    if here and store.events.project_sessions(here):
        return f"project:{here}"
    return GLOBAL
