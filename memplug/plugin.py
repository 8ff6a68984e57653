"""The host protocol: what a harness calls, none of which ever raises into it.

``on_event`` after the host commits an event, ``pre_step`` before an agent step (at
most one labelled evidence message back), ``pre_tool`` before a tool runs. Anything
that goes wrong goes to the plugin's error sink (by default the database's error log,
which ``memory status`` shows) and the host carries on.

A hook that reads its host's transcript itself (Claude Code, Codex) uses the same
object: ``session_writes`` stores what it read and moves its cursor in one transaction,
``step`` assembles for a :class:`HostStep` with the host's own lock wait and size cap,
and ``record`` files an error. This is the only module that turns a host's step into an
assembly request; it imports the assembler and the pydantic boundary models where a
call needs them, not at import: a tool hook opens a Plugin too, and must not pay for
them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from msgspec import Struct
from msgspec.structs import replace

from memplug.base.config import Config
from memplug.base.errors import DatabaseBusy
from memplug.base.messages import Message, TokenMeter
from memplug.base.vocab import MEMPLUG_SOURCE_KIND
from memplug.memory import Memory
from memplug.store.db import engine_error

if TYPE_CHECKING:
    from memplug.base.events import HostEvent
    from memplug.base.models import Decision, Injection, StepContext, ToolCall
    from memplug.capture.append import InsertResult
    from memplug.recall.assemble import AssemblyResult

# AssemblyResult: what a host reads of a step (typing only: the assembler loads on use).
__all__ = ["AssemblyResult", "ErrorSink", "HostStep", "Plugin", "SessionWrites", "open_plugin"]

# Where a plugin files what went wrong: (memory, stage, message, session_id, seq); the
# default is the database's error log (``Memory.record_error``). A sink that raises (the
# database is failing) has the error kept and offered again after the next good write.
ErrorSink = Callable[[Memory, str, str, "str | None", "int | None"], None]
# Characters one estimated token can stand for (ASCII), and the share of a host's cap
# kept for the newlines the estimate does not count: they turn the cap into a budget.
CHARS_PER_TOKEN = 4
NEWLINE_SHARE = 10


class HostStep(Struct, frozen=True):
    """What a host knows before an agent step, in its own terms."""

    session_id: str
    trigger: str
    query: str | None = None
    # What the model still sees (the assembler does not say again what it holds).
    messages: tuple[Message, ...] = ()
    turn: int | None = None
    step: int | None = None
    token_meter: TokenMeter | None = None
    # The working folder, whose core a session with no events yet gets.
    project: str | None = None
    # What a compaction summary in the context says the work at hand is.
    summary: str | None = None
    # The instruction files the host loads itself, as (file name, text).
    standing: tuple[tuple[str, str], ...] = ()
    # Whether memplug's MCP tools are in the agent's tool list (how the message says to pull).
    mcp: bool = False
    # The most characters the host takes: the budget shrinks until the text fits.
    max_chars: int | None = None
    # How long the assembly log may wait for another writer's lock.
    lock_wait_ms: int | None = None


class SessionWrites:
    """One session's capture in one write transaction: what a host read from its
    transcript, the links between its records, and the moved read cursor, together."""

    def __init__(self, memory: Memory, session_id: str) -> None:
        self._memory = memory
        self._hosts = memory.store.hosts
        self.session_id = session_id

    @property
    def cursor(self) -> dict[str, Any] | None:
        """The saved read position (and its host state), None before the first read."""
        return self._hosts.cursor(self.session_id)

    def resolve(self, uuids: Sequence[str]) -> dict[str, str | None]:
        """``uuid → entry id`` for the host records of this session read before."""
        return self._hosts.resolve(self.session_id, uuids)

    def store(self, events: Sequence[HostEvent], *, origin: str) -> InsertResult:
        return self._memory.store_events(events, origin=origin)

    def link(self, links: Mapping[str, str | None]) -> None:
        self._hosts.save_links(self.session_id, links)

    def move_cursor(self, host: str, path: str, offset: int, state: Mapping[str, Any]) -> None:
        self._hosts.save_cursor(self.session_id, host, path, offset, state)


class Plugin:
    """memplug bound to one database; hand it to a host loop."""

    def __init__(self, memory: Memory, *, errors: ErrorSink | None = None) -> None:
        self.memory = memory
        self._sink = errors or Memory.record_error
        # The last assembly of each call to pre_step, for hosts that want to show it.
        self.last_result: AssemblyResult | None = None
        # Errors not yet written: recording one while another writer holds the lock
        # would stall the host a second time, so they wait for the next good write.
        self._unrecorded: list[tuple[str, str, str | None, int | None]] = []

    @property
    def config(self) -> Config:
        return self.memory.config

    def close(self) -> None:
        """Write the errors still kept (a host that stops right after a skipped capture
        must leave a record of it), then close the database."""
        with contextlib.suppress(Exception):
            self._flush()
        with contextlib.suppress(Exception):
            self.memory.close()

    def __enter__(self) -> Plugin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the three calls -------------------------------------------------------------

    def on_event(self, event: HostEvent | Mapping[str, Any]) -> bool:
        """Capture one committed event (and derive memory from it); True when stored.

        memplug's own injection, committed back by the host, is captured like any
        event — the log must agree with the host's — but is marked generated, so it
        is never extracted from nor quoted; its assembly log gets the event's seq.
        """
        from memplug.base.events import HostEvent, parse_event

        session_id = _get(event, "session_id")
        seq = _get(event, "seq")
        try:
            parsed = event if isinstance(event, HostEvent) else parse_event(dict(event))
            result = self.memory.ingest([parsed], origin="live")
            if parsed.source_kind == MEMPLUG_SOURCE_KIND and result.new:
                self._link_injection(parsed)
        except Exception as error:
            self._record("capture", error, session_id, seq)
            return False
        if result.new and parsed.type == "assistant/message":
            try:
                self.memory.validate_new([parsed.session_id], trigger="on_event")
            except Exception as error:
                self._record("validate", error, session_id, seq)
        self._flush()
        return bool(result.new)

    def pre_step(self, ctx: StepContext | Mapping[str, Any]) -> Injection | None:
        """The evidence message for this step, or None (nothing relevant, or a failure)."""
        from memplug.base.models import Injection, StepContext

        session_id = _get(ctx, "session_id")
        try:
            parsed = ctx if isinstance(ctx, StepContext) else _parse_ctx(ctx)
            result = self.step(
                HostStep(
                    session_id=parsed.session_id,
                    trigger=parsed.trigger,
                    query=parsed.query,
                    messages=tuple(parsed.messages),
                    turn=parsed.turn,
                    step=parsed.step,
                    token_meter=parsed.token_meter,
                )
            )
        except Exception as error:
            self._record("assemble", error, session_id)
            return None
        self.last_result = result
        if result.errors:
            self.record("assemble", "; ".join(result.errors), result.session_id, flush=False)
        if result.assembly_id is not None:
            self._flush()
        if not result.injected:
            return None
        return Injection(text=result.text, assembly_id=result.assembly_id)

    def pre_tool(self, call: ToolCall | Mapping[str, Any]) -> Decision:
        """Preconditions before a tool runs (``validation.preconditions``): deny with a
        reason when one is broken, else allow. A failure here allows and is recorded."""
        from memplug.base.models import Decision, ToolCall
        from memplug.base.preconditions import check_preconditions

        try:
            parsed = call if isinstance(call, ToolCall) else ToolCall.model_validate(dict(call))
            found = check_preconditions(
                self.config.validation.preconditions,
                parsed.tool_name,
                parsed.arguments,
                parsed.cwd,
            )
        except Exception as error:
            self._record("pre_tool", error, _get(call, "session_id"))
            return Decision(allow=True)
        return Decision(allow=found.allow, reason=found.reason)

    # -- what a hook that reads its own transcript needs --------------------------------

    def step(self, step: HostStep) -> AssemblyResult:
        """Assemble (and log) the message for ``step``; raises what the assembly raised."""
        from memplug.recall.assemble import AssemblyRequest, Pull

        memory = self.memory if step.max_chars is None else _capped(self.memory, step.max_chars)
        return memory.assemble(
            AssemblyRequest(
                session_id=step.session_id,
                query=step.query,
                messages=step.messages,
                turn=step.turn,
                step=step.step,
                trigger=step.trigger,
                token_meter=step.token_meter,
                log_wait_ms=step.lock_wait_ms,
                project=step.project,
                summary=step.summary,
                standing=step.standing,
                # The skill names this machine's exact command; the message names
                # `memory`, so that what it says is the same bytes on every machine.
                pull=Pull(mcp=step.mcp),
            )
        )

    @contextlib.contextmanager
    def session_writes(
        self, session_id: str, *, lock_wait_ms: int | None = None
    ) -> Iterator[SessionWrites]:
        """A write transaction for one session's capture (waiting at most
        ``lock_wait_ms`` for another writer; :class:`DatabaseBusy` when it must not)."""
        store = self.memory.store
        waiting = store.lock_wait(lock_wait_ms) if lock_wait_ms else contextlib.nullcontext()
        with waiting, store.write_transaction():
            yield SessionWrites(self.memory, session_id)

    def saved_cursor(self, session_id: str) -> dict[str, Any] | None:
        """Where a host's reading of the session stopped (and its state)."""
        return self.memory.store.hosts.cursor(session_id)

    def context_events(self, session_id: str, max_chars: int) -> list[dict[str, Any]]:
        """The session's latest events, newest last, up to about ``max_chars`` of text."""
        return self.memory.store.hosts.context_events(session_id, max_chars)

    def record(
        self,
        stage: str,
        message: str,
        session_id: Any = None,
        seq: Any = None,
        *,
        flush: bool = True,
    ) -> None:
        """File an error with the sink (kept and retried when the sink fails)."""
        self._unrecorded.append(
            (
                stage,
                message,
                session_id if isinstance(session_id, str) else None,
                seq if isinstance(seq, int) and not isinstance(seq, bool) else None,
            )
        )
        if flush:
            self._flush()

    # -- helpers ---------------------------------------------------------------------

    def _link_injection(self, event: HostEvent) -> None:
        self.memory.link_injection(event.session_id, event.seq)

    def _record(
        self, stage: str, error: Exception, session_id: Any = None, seq: Any = None
    ) -> None:
        import pydantic

        from memplug.base.models import describe_validation_error

        # An engine error that escaped a store (a plain transaction, a read) is named
        # as db.translate_error names it, and a busy database is told by its type.
        error = engine_error(error, self.memory.path) or error
        if isinstance(error, pydantic.ValidationError):
            message = describe_validation_error(error)
        else:
            message = f"{type(error).__name__}: {error}"
        # Writing the error now would wait for the same lock again.
        busy = isinstance(error, DatabaseBusy)
        self.record(stage, message, session_id, seq, flush=not busy)

    def _flush(self) -> None:
        """Write the errors kept so far; stop at the first that cannot be written."""
        while self._unrecorded:
            try:
                self._sink(self.memory, *self._unrecorded[0])
            except Exception:
                # The database itself is failing; keep it for the next good write.
                return
            self._unrecorded.pop(0)


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _parse_ctx(data: Mapping[str, Any]) -> StepContext:
    from memplug.base.models import StepContext

    return StepContext.model_validate(dict(data))


def open_plugin(
    path: str | None = None,
    config: Mapping[str, Any] | Config | None = None,
    *,
    config_path: str | None = None,
    create: bool = True,
    readonly: bool = False,
    errors: ErrorSink | None = None,
) -> Plugin:
    """Open (with ``create``, making it) a database and return its :class:`Plugin`;
    ``readonly`` for a file to read only, ``errors`` where failures go."""
    overrides: dict[str, Any] | None
    if config is None:
        overrides = None
    elif isinstance(config, Config):
        overrides = config.to_dict()
    else:
        overrides = dict(config)
    memory = Memory.open(
        path, config_path=config_path, config=overrides, create=create, readonly=readonly
    )
    return Plugin(memory, errors=errors)


def _capped(memory: Memory, max_chars: int) -> Memory:
    """The same database with a token budget whose text fits in ``max_chars``.

    What does not fit is then an ordinary ``over budget`` omission in the assembly log
    (which is written once, before a host could cut anything).
    """
    limit = max(50, (max_chars - max_chars // NEWLINE_SHARE) // CHARS_PER_TOKEN)
    config = memory.config
    if config.assembly.budget_tokens <= limit:
        return memory
    assembly = replace(
        config.assembly,
        min_budget_tokens=min(config.assembly.min_budget_tokens, limit),
        soft_budget_tokens=limit,
    )
    return memory.with_config(replace(config, assembly=assembly))
