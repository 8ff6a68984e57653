"""The Python API every host and the CLI share: one open database plus its services.

``Memory`` wires the layers together (capture → extract; retrieve → assemble) and is
the only place that orders them; the services themselves only depend downward.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from msgspec.structs import replace

from memplug.base.clock import utc_now
from memplug.base.errors import NotFound, UsageError, ValidationError
from memplug.base.paths import default_db_path, project_of
from memplug.capture.transfer import (
    ImportInterrupted,
    ImportSummary,
    ProgressCallback,
    import_streams,
)
from memplug.derive.upgrades import SessionProgress, UpgradeReport, Upgrades
from memplug.store.db import Database
from memplug.store.peek import lagging_derivation, saved_positions
from memplug.store.records import (
    EventRow,
    InsertResult,
    LogRecord,
    RuleRow,
    SkillRow,
)
from memplug.store.sqlite import Store

if TYPE_CHECKING:
    # Imported where used: a hook that finds no transcript grew goes through
    # ``Memory.saved_cursors`` and must not pay for pydantic.
    from memplug.base.config import Config, LoadedConfig
    from memplug.base.events import HostEvent
    from memplug.capture.append import Capture
    from memplug.capture.transfer import ImportSummary
    from memplug.derive.extract import Extractor, ExtractReport
    from memplug.derive.graph import Graph
    from memplug.derive.scopes import NamedScope
    from memplug.derive.timeline import Timeline
    from memplug.recall.assemble import Assembler, AssemblyRequest, AssemblyResult
    from memplug.recall.core import Core
    from memplug.recall.retrieve import Retriever
    from memplug.recall.validate import Validator
    from memplug.semantic.service import EmbedReport, Semantic

# What a write that captured events (a hook, ``on_event``) may spend re-deriving state
# made by older rules, a session at a time; a command run by a person does it all.
UPGRADE_STEP_MS = 500.0


class Memory:
    """An open memplug database with its configuration and services."""

    def __init__(self, db: Database, loaded: LoadedConfig) -> None:
        self.db = db
        self.loaded = loaded
        self.config = loaded.config
        self.store = Store(db)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        config_path: str | os.PathLike[str] | None = None,
        config: dict[str, Any] | None = None,
        create: bool = True,
        readonly: bool = False,
        upgrade: bool = False,
        progress: SessionProgress | None = None,
    ) -> Memory:
        """Open (and with ``create``, make) the database; config from file, env, ``config``.
        ``readonly`` opens it for reading only (a file or snapshot the user cannot write).
        ``upgrade`` re-derives at once, to the end, state that older rules derived
        (``progress(done, total, session)`` as each session starts); otherwise that is
        done a step at a time by writes that capture events (:meth:`derive`)."""
        from memplug.base.config import load_for_database

        db_path = default_db_path(path)
        loaded = load_for_database(db_path, config_path, config)
        memory = cls(Database.open(db_path, create=create, readonly=readonly), loaded)
        if upgrade and memory.behind():
            try:
                memory.upgrade_on_open(config_path, config, progress)
            except BaseException:
                memory.close()
                raise
        return memory

    def upgrade_on_open(
        self,
        config_path: str | os.PathLike[str] | None,
        config: dict[str, Any] | None,
        progress: SessionProgress | None,
    ) -> UpgradeReport:
        """Re-derive what older rules made, all of it (a command a person runs can afford
        it). A read-only opening does it through a writing one when the file allows; a
        file this user cannot write is read as it is (``memory status`` says so)."""
        if not self.db.readonly:
            report = self.upgrade_derived(progress=progress)
            # Sessions never derived (an import that stopped early, a memplug that did
            # not extract on import) are caught up as a write would.
            self.derive((), upgrade_ms=0)
            return report
        path = self.store.path
        if not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
            return UpgradeReport("read-only")
        with Memory.open(path, config_path=config_path, config=config, create=False) as writer:
            return writer.upgrade_on_open(config_path, config, progress)

    def behind(self) -> bool:
        """Whether derived state lags its events, or was made by other versions (or is
        not yet known to be this code's)."""
        if not self.config.extraction.enabled:
            return False
        return bool(self.store.events.lagging_sessions()) or not self.upgrades.known_current()

    def with_config(self, config: Config) -> Memory:
        """The same open database under another configuration (closing either closes it)."""
        other = Memory(self.db, replace(self.loaded, config=config))
        if config.semantic == self.config.semantic and "semantic" in self.__dict__:
            # The same provider, loaded once: its table is a prompt hook's largest fixed
            # cost after the imports (a cached_property is seeded through __dict__).
            other.__dict__["semantic"] = self.__dict__["semantic"]
        return other

    @staticmethod
    def saved_cursors(
        path: str | os.PathLike[str] | None, session_ids: Sequence[str]
    ) -> dict[str, dict[str, Any]]:
        """``session_id → host cursor state`` read without opening (or migrating) the
        database: a hook tells in milliseconds that no transcript grew. A database that
        is missing, older than the cursors or unreadable answers with nothing."""
        database = default_db_path(path)
        if not database.exists():
            return {}
        return saved_positions(str(database), session_ids)

    @staticmethod
    def derivation_lags(path: str | os.PathLike[str] | None, session_ids: Sequence[str]) -> bool:
        """Whether derivation of any of ``session_ids`` waits (a tool hook captured and
        left it), read without opening the database; a missing file has nothing waiting."""
        database = default_db_path(path)
        return database.exists() and lagging_derivation(str(database), session_ids)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- services -------------------------------------------------------------------

    @cached_property
    def capture(self) -> Capture:
        from memplug.capture.append import Capture

        return Capture(self.store, self.config.capture)

    @cached_property
    def extractor(self) -> Extractor:
        from memplug.derive.extract import Extractor
        from memplug.derive.graph import GraphDeriver
        from memplug.derive.timeline import TimelineDeriver
        from memplug.derive.work import WorkDeriver

        followers = (
            TimelineDeriver(self.store),
            GraphDeriver(self.store),
            WorkDeriver(self.store),
        )
        return Extractor(self.store, self.config, followers)

    @cached_property
    def retriever(self) -> Retriever:
        from memplug.recall.retrieve import Retriever

        semantic = self.semantic if self.config.semantic.provider != "off" else None
        return Retriever(self.store, self.config, semantic)

    @cached_property
    def assembler(self) -> Assembler:
        from memplug.recall.assemble import Assembler, MemorySource
        from memplug.recall.core import core_for

        def core(request: AssemblyRequest) -> Core | None:
            return core_for(self.store, self.config, request)

        source = MemorySource(self.retriever, self.store, self.config)
        return Assembler(self.config, source, self.store, core)

    @cached_property
    def validator(self) -> Validator:
        from memplug.recall.validate import Validator

        # A check script's relative path is read from beside the config file.
        base = str(Path(self.loaded.file).parent) if self.loaded.file else None
        return Validator(self.store, self.config, base)

    def validate_new(self, session_ids: Iterable[str], *, trigger: str) -> None:
        """Check each session's latest assistant message once, when checks are configured
        (the validation module is not even imported otherwise: hooks pay for imports)."""
        cfg = self.config.validation
        if not cfg.enabled or not cfg.checks:
            return
        for session_id in sorted(set(session_ids)):
            self.validator.run_latest_once(session_id, trigger=trigger)

    @cached_property
    def timeline(self) -> Timeline:
        from memplug.derive.timeline import Timeline

        return Timeline(self.store, self.config)

    @cached_property
    def graph(self) -> Graph:
        from memplug.derive.graph import Graph

        return Graph(self.store)

    def core(self, project: str | None = None, *, cwd: str | None = None) -> dict[str, Any]:
        """The resident core of ``project`` in the ``memory core --json`` shape; an
        unknown project is :class:`NotFound`. With no project: the working directory's
        project when ``cwd`` is given and the database knows it, else the global core
        (every session)."""
        from memplug.recall.core import resident_core, scope_for_project

        if project is None and cwd is not None:
            name = self.scope(cwd=cwd).name
            project = name.removeprefix("project:") if name.startswith("project:") else None
        scope = scope_for_project(self.store, project)
        if project is not None and not scope.session_ids:
            raise NotFound(f"no project {project!r} in this database")
        core = resident_core(self.store, self.config, scope)
        return core.as_dict(self.config.assembly.core_budget_tokens)

    def scope(
        self,
        *,
        scope: str | None = None,
        project: str | None = None,
        session: str | None = None,
        cwd: str | None = None,
    ) -> NamedScope:
        """The scope a timeline or graph query reads (see :mod:`memplug.derive.scopes`)."""
        from memplug.derive.scopes import resolve

        return resolve(self.store, scope=scope, project=project, session=session, cwd=cwd)

    def items(
        self,
        *,
        scope: str | None = None,
        project: str | None = None,
        sessions: Sequence[str] = (),
        status: str | None = None,
        kind: str | None = None,
        limit: int | None = None,
        cwd: str | None = None,
    ) -> dict[str, Any]:
        """``{scope, items}``: memory items (``ItemRow.as_dict``) in session and creation
        order. Given sessions and neither a scope nor a project, those sessions' items;
        else the scope's (default: the current context, see :mod:`memplug.derive.scopes`)."""
        where = None
        self.require_sessions(sessions)
        if sessions and scope is None and project is None:
            name = ", ".join(f"session:{s}" for s in sessions)
        else:
            resolved = self.scope(scope=scope, project=project, cwd=cwd)
            name, where = resolved.name, resolved.where
        rows = self.store.items.find(
            session_ids=list(sessions) or None, status=status, kind=kind, limit=limit, where=where
        )
        return {"scope": name, "items": [row.as_dict() for row in rows]}

    def expand(self, target: str, **options: Any) -> dict[str, Any]:
        """``memory expand --json`` (``options`` are :meth:`Retriever.expand`'s), plus the
        ``scope`` it read: the one session whose events it returns."""
        data = self.retriever.expand(target, **options).as_json()
        data.setdefault("next", None)
        events = data.get("events") or []
        session = events[0]["session_id"] if events else (data.get("item") or {}).get("session_id")
        data["scope"] = f"session:{session}" if session else None
        return data

    def search(
        self,
        query: str | None = None,
        *,
        next_token: str | None = None,
        cwd: str | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """A search page as ``memory search --json`` gives it, plus the ``scope`` it read.

        ``next_token`` continues an earlier page (with ``query`` again when the token
        carries only its digest: a query over 1,000 characters); ``options`` are
        :meth:`Retriever.search`'s. With ``cwd`` and neither a scope nor a session, the
        search reads the working directory's project (the current context)."""
        from memplug.base.call_tokens import decode_token
        from memplug.derive.scopes import context_session, searched

        session, scope = options.pop("session", None), options.pop("scope", None)
        if next_token is not None:
            given = decode_token(next_token).get("a")
            if isinstance(given, dict):
                session, scope = given.get("session"), given.get("scope")
            page = self.retriever.page(next_token, query)
        elif query is None:
            raise ValidationError("give a query (or the next token of an earlier page)")
        else:
            if cwd is not None and session is None and scope is None:
                session = context_session(self.store, cwd)
                scope = "project" if session else "global"
            page = self.retriever.search(query, session=session, scope=scope, **options)
        data = page.as_json()
        data.setdefault("next", None)
        data["scope"] = searched(self.store, scope, session)
        self._name_agents(data["hits"])
        return data

    def _name_agents(self, hits: list[dict[str, Any]]) -> None:
        """Each hit of a coding host's session says which agent it came from (``host``:
        ``claude-code``, ``codex``): one memory serves both."""
        from memplug.base.host_registry import is_coding_host

        origins: dict[str, str | None] = {}
        for hit in hits:
            name = hit["session_id"]
            if name not in origins:
                origins[name] = self.store.search.session_origin(name)
            if is_coding_host(origins[name]):
                hit["host"] = origins[name]

    @cached_property
    def semantic(self) -> Semantic:
        from memplug.semantic.service import Semantic

        return Semantic(self.store, self.config.semantic)

    def embed_vectors(
        self, *, budget_ms: float | None = None, progress: ProgressCallback | None = None
    ) -> EmbedReport | None:
        """Bring vectors up to date (within ``budget_ms``); ``None`` when semantic is off.

        A provider that fails is recorded and reported, never raised: the events are
        already committed and lexical search goes on without vectors."""
        if self.config.semantic.provider == "off":
            return None
        report = self.semantic.embed_pending(budget_ms=budget_ms, progress=progress)
        if report.error:
            self.record_error("semantic", report.error)
        return report

    def assemble(self, request: AssemblyRequest) -> AssemblyResult:
        """What a pre-step would inject now, logged in ``assembly_logs``; a failed
        attempt is logged too, then raised as :class:`~memplug.base.errors.AssemblyFailed`."""
        return self.assembler.run(request)

    # -- capture --------------------------------------------------------------------

    def ingest(
        self, events: Sequence[HostEvent], *, origin: str = "api", bulk: bool = False
    ) -> InsertResult:
        """Capture ``events`` in one transaction, then derive memory for their sessions."""
        with self.store.write_transaction():
            result = self.store_events(events, origin=origin, bulk=bulk)
        self.derive(result.sessions)
        if result.new:
            self.embed_vectors(budget_ms=self.config.semantic.capture_budget_ms)
        return result

    def store_events(
        self, events: Sequence[HostEvent], *, origin: str, bulk: bool = False
    ) -> InsertResult:
        """Capture ``events`` inside the caller's write transaction, deriving nothing: a
        host that keeps its own read cursor commits the events and the cursor at once."""
        return self.capture.capture(events, origin=origin, ingested_at=utc_now(), bulk=bulk)

    def remember(
        self,
        text: str,
        *,
        kind: str | None = None,
        project: str | None = None,
        actor: str = "api",
    ) -> dict[str, Any]:
        """Keep ``text`` as a memory item of ``project`` (default: the working folder's),
        on a person's or an agent's explicit word. It is captured as an event of the
        project's own remember session, so ``rebuild`` derives the same item and id; a
        later remember of the same subject supersedes it. Returns the item and its event."""
        from memplug.base.events import parse_event
        from memplug.base.text import short_hash
        from memplug.derive.cues.structural import REMEMBER_KINDS, REMEMBER_SOURCE

        if not text.strip():
            raise UsageError("nothing to remember: the text is empty")
        if kind is not None and kind not in REMEMBER_KINDS:
            raise UsageError(
                f"cannot remember a {kind!r}; choose one of {', '.join(REMEMBER_KINDS)}"
            )
        where = project or project_of(os.getcwd()) or os.getcwd()
        session_id = f"remember-{short_hash(where, length=12)}"
        with self.store.write_transaction():
            seq = (self.store.items.newest_seq(session_id) or 0) + 1
            data: dict[str, Any] = {
                "session_id": session_id, "seq": seq, "type": "user/message", "role": "user",
                "time": utc_now(), "text": text, "cwd": where, "project": where,
                "source": {"kind": REMEMBER_SOURCE, "form": actor}, "host": "memplug",
            }  # fmt: skip
            if kind is not None:
                data["kind"] = kind
            self.store_events([parse_event(data)], origin=actor)
        self.derive([session_id])
        made = self.store.items.citing(session_id, seq)
        item = made[0] if made else None
        return {
            "event": f"{session_id}:{seq}",
            "project": where,
            "item": None if item is None else {"id": item.id, "kind": item.kind,
                                               "content": item.content, "status": item.status},
            "supersedes": [] if item is None else item.supersedes,
        }  # fmt: skip

    def correct(self, memory_id: str, text: str, *, actor: str = "api") -> dict[str, Any]:
        """Correct an item: ``text`` is remembered (as :meth:`remember`, of the item's kind
        and project) and the item is superseded by what it made; nothing is overwritten."""
        from memplug.derive.cues.structural import REMEMBER_KINDS

        item = self.store.items.get(memory_id)
        if item is None:
            raise NotFound(f"no memory item {memory_id}")
        if item.status not in ("active", "disputed"):
            raise UsageError(f"{memory_id} is {item.status}; only a standing item is corrected")
        kind = item.kind if item.kind in REMEMBER_KINDS else None
        made = self.remember(text, kind=kind, project=item.project or item.session_id,
                             actor=actor)  # fmt: skip
        if made["item"] is not None and made["item"]["id"] != memory_id:
            self.extractor.correct(memory_id, made["item"]["id"], actor=actor)
        return {**made, "corrected": memory_id}

    def derive(
        self,
        session_ids: Iterable[str],
        *,
        upgrade_ms: float | None = UPGRADE_STEP_MS,
        ahead: bool = False,
    ) -> str | None:
        """Run incremental extraction for sessions that received events or lag behind,
        after re-deriving, within ``upgrade_ms`` (None: all), what older rules made.
        ``ahead``: a helper process computes the sessions' text analysis ahead, on a
        second core (memplug/derive/derive_ahead.py; for a large import).

        Extraction failures are queued by the extractor itself; a crash escaping it is
        recorded and returned, not raised — captured evidence is already committed —
        for the caller to report (``memory import`` does; a host must go on).
        """
        if not self.config.extraction.enabled:
            return None
        try:
            self.upgrade_derived(budget_ms=upgrade_ms)
            # Sessions whose extraction lags their events too: a process that died
            # between the capture commit and extraction left them behind.
            sessions = sorted(set(session_ids) | set(self.store.events.lagging_sessions()))
            if sessions and ahead:
                from memplug.derive.derive_ahead import computed_ahead

                with computed_ahead(self.db.path, self.loaded, sessions) as helper:
                    self.extractor.run(sessions, before=helper.before if helper else None)
            elif sessions:
                self.extractor.run(sessions)
        except Exception as error:
            message = f"{type(error).__name__}: {error}"
            self.record_error("extract", message)
            return message
        return None

    @cached_property
    def upgrades(self) -> Upgrades:
        """What derived the state, and the pass that derives again what other code made."""
        return Upgrades(self.store, self.config, lambda: self.extractor)

    def derivation_state(self) -> dict[str, Any]:
        """Which code derived the state, against this code's (``Upgrades.state``)."""
        return self.upgrades.state()

    def upgrade_derived(
        self, *, budget_ms: float | None = None, progress: SessionProgress | None = None
    ) -> UpgradeReport:
        """Derive again what code with other versions derived (``Upgrades.run``)."""
        return self.upgrades.run(budget_ms=budget_ms, progress=progress)

    def derivation_waits(self) -> bool:
        """Whether any session's extraction lags its events (a tool hook left it)."""
        return bool(self.store.events.lagging_sessions())

    # -- rebuilding -----------------------------------------------------------------------

    def rebuild(
        self, session_id: str | None = None, *, progress: SessionProgress | None = None
    ) -> ExtractReport:
        """``memory rebuild``: derive everything (or one session) again from events and
        a person's actions. A full rebuild records that this code made the state; of a
        large database, with a helper process on a second core (as a large import)."""
        from memplug.derive.derive_ahead import AHEAD_EVENTS, computed_ahead

        large = session_id is None and self.counts()["events"] >= AHEAD_EVENTS
        sessions = self.store.items.derived_sessions() if large else []
        with self.store.write_transaction():
            with computed_ahead(self.db.path, self.loaded, sessions) as helper:
                report = self.extractor.rebuild(
                    session_id, progress=progress, before=helper.before if helper else None
                )
            if session_id is None:
                self.upgrades.stamp(self.extractor.versions())
        return report

    def record_error(
        self, stage: str, message: str, session_id: str | None = None, seq: int | None = None
    ) -> None:
        with self.store.write_transaction():
            self.store.events.record_error(stage, message, session_id, seq)
            self.store.events.prune_errors(self.config.diagnostics.error_log_retention)

    # -- what hosts, the CLI and the demo read and set (they do not reach into store) --

    @property
    def path(self) -> Path:
        """The database file."""
        return self.store.path

    def set_lock_wait(self, ms: int) -> None:
        """How long a write waits for another writer's lock from now on."""
        self.store.set_lock_wait(ms)

    def counts(self) -> dict[str, int]:
        """Rows per table."""
        return self.store.counts()

    def item_text(self, item_id: str) -> str:
        """A memory item's stored content; empty when there is no such item."""
        item = self.store.search.item_by_id(item_id)
        return item.content if item is not None else ""

    def event_text(self, session_id: str, seq: int) -> str:
        """An event's stored (capped) text; empty when there is no such event."""
        found = self.store.search.events_by_refs([(session_id, seq)])
        return (found[0].text if found else None) or ""

    def session_events(
        self, session_id: str, *, after_seq: int = -1, types: Sequence[str] | None = None
    ) -> list[EventRow]:
        """A session's stored events after ``after_seq``, of ``types`` when given."""
        return self.store.events.session_events(session_id, after_seq=after_seq, types=types)

    def assembly_log(self, assembly_id: int) -> LogRecord | None:
        """One logged assembly attempt."""
        return self.store.logs.get(assembly_id)

    def sessions(self) -> list[dict[str, Any]]:
        """Every session with its project, times, event count and extraction state."""
        return self.store.events.sessions()

    def assembly_summaries(self, session_id: str | None, limit: int) -> list[dict[str, Any]]:
        """A session's (None: every) logged assembly attempts, newest first, without text."""
        return self.store.logs.summaries(session_id, limit=limit)

    def link_injection(self, session_id: str, seq: int) -> None:
        """Tie the logged assembly whose text the host stored as event ``seq`` to it."""
        stored = self.store.events.get(session_id, seq)
        if stored is not None:
            self.store.logs.link_message(session_id, stored.content_hash, seq)

    def skills(self) -> list[SkillRow]:
        """The ingested skills."""
        return self.store.skills.skills()

    def rules(
        self, *, skill: str | None = None, category: str | None = None, active: bool | None = None
    ) -> list[RuleRow]:
        """Rules with people's overrides applied (docs/skills.md)."""
        return self.store.skills.rules(skill=skill, category=category, active=active)

    def import_jsonl(
        self,
        streams: Sequence[tuple[str, BinaryIO]],
        *,
        progress: ProgressCallback | None = None,
        embed: bool = True,
        project: str | None = None,
    ) -> ImportSummary:
        """Import generic JSONL; bad lines are rejected by number, good ones kept;
        ``project`` stores every event under that project, whatever it names.

        Each batch commits on its own, so an interrupted import keeps every batch
        before it and a rerun completes the rest (duplicates are ignored). Ctrl-C raises
        :class:`ImportInterrupted` (a ``KeyboardInterrupt``) carrying what was committed;
        extraction then catches up on the next write (:meth:`derive` takes lagging
        sessions too). With a semantic provider on, the new events are embedded afterwards
        (``embed=False`` leaves that to the caller, as the CLI does to show its own
        progress).
        """
        from memplug.derive.derive_ahead import AHEAD_EVENTS

        summary = ImportSummary()
        try:
            import_streams(
                self.store, self.capture, self.config.capture, streams, summary, progress, project
            )
            summary.extraction_error = self.derive(
                summary.sessions, ahead=summary.new >= AHEAD_EVENTS
            )
            if summary.new:
                self.store.truncate_wal()
            if embed:
                summary.vectors = self.embed_vectors()
        except KeyboardInterrupt:
            raise ImportInterrupted(summary) from None
        return summary

    def require_sessions(self, session_ids: Sequence[str]) -> None:
        """Raise :class:`NotFound` for the first of ``session_ids`` not in the database."""
        for session_id in session_ids:
            if self.store.events.session(session_id) is None:
                raise NotFound(f"no session {session_id!r} in this database")
