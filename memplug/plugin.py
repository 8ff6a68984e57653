"""The host protocol: three calls a harness makes, none of which ever raises into it.

``on_event`` after the host commits an event, ``pre_step`` before an agent step (at
most one labelled evidence message back), ``pre_tool`` before a tool runs. Anything
that goes wrong is recorded (``memory status`` shows it) and the host carries on.

This is the only module that turns an assembly into a host message. It imports the
pydantic boundary models where a call validates with them, not at import: a Claude Code
prompt hook takes its request types from here and must not pay for pydantic.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memplug.assemble import AssemblyRequest, AssemblyResult, Pull
from memplug.config import Config
from memplug.errors import DatabaseBusy
from memplug.memory import Memory
from memplug.vocab import MEMPLUG_SOURCE_KIND

if TYPE_CHECKING:
    from memplug.models import Decision, HostEvent, Injection, StepContext, ToolCall

# Hosts that assemble with their own request (a hook with its own lock wait) take the
# request and result types from here, not from the assembler.
__all__ = ["AssemblyRequest", "AssemblyResult", "Plugin", "Pull", "open_plugin"]


class Plugin:
    """memplug bound to one database; hand it to a host loop."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
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
        from memplug.events import HostEvent, parse_event

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
        from memplug.models import Injection, StepContext

        session_id = _get(ctx, "session_id")
        try:
            step = ctx if isinstance(ctx, StepContext) else _parse_ctx(ctx)
            result = self.memory.assemble(
                AssemblyRequest(
                    session_id=step.session_id,
                    query=step.query,
                    messages=tuple(step.messages),
                    turn=step.turn,
                    step=step.step,
                    trigger=step.trigger,
                    token_meter=step.token_meter,
                )
            )
        except Exception as error:
            self._record("assemble", error, session_id)
            return None
        self.last_result = result
        if result.errors:
            self._record_message(
                "assemble", "; ".join(result.errors), result.session_id, flush=False
            )
        if result.assembly_id is not None:
            self._flush()
        if not result.injected:
            return None
        return Injection(text=result.text, assembly_id=result.assembly_id)

    def pre_tool(self, call: ToolCall | Mapping[str, Any]) -> Decision:
        """Preconditions before a tool runs (``validation.preconditions``): deny with a
        reason when one is broken, else allow. A failure here allows and is recorded."""
        from memplug.models import Decision, ToolCall
        from memplug.preconditions import check_preconditions

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

    # -- helpers ---------------------------------------------------------------------

    def _link_injection(self, event: HostEvent) -> None:
        self.memory.link_injection(event.session_id, event.seq)

    def _record(
        self, stage: str, error: Exception, session_id: Any = None, seq: Any = None
    ) -> None:
        import pydantic

        from memplug.db import engine_error
        from memplug.models import describe_validation_error

        # An engine error that escaped a store (a plain transaction, a read) is named
        # as db.translate_error names it, and a busy database is told by its type.
        error = engine_error(error, self.memory.path) or error
        if isinstance(error, pydantic.ValidationError):
            message = describe_validation_error(error)
        else:
            message = f"{type(error).__name__}: {error}"
        # Writing the error now would wait for the same lock again.
        busy = isinstance(error, DatabaseBusy)
        self._record_message(stage, message, session_id, seq, flush=not busy)

    def _record_message(
        self,
        stage: str,
        message: str,
        session_id: Any = None,
        seq: Any = None,
        *,
        flush: bool = True,
    ) -> None:
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

    def _flush(self) -> None:
        """Write the errors kept so far; stop at the first that cannot be written."""
        while self._unrecorded:
            try:
                self.memory.record_error(*self._unrecorded[0])
            except Exception:
                # The database itself is failing; keep it for the next good write.
                return
            self._unrecorded.pop(0)


def _get(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _parse_ctx(data: Mapping[str, Any]) -> StepContext:
    from memplug.models import StepContext

    return StepContext.model_validate(dict(data))


def open_plugin(
    path: str | None = None,
    config: Mapping[str, Any] | Config | None = None,
    *,
    config_path: str | None = None,
) -> Plugin:
    """Open (creating when needed) a database and return its :class:`Plugin`."""
    overrides: dict[str, Any] | None
    if config is None:
        overrides = None
    elif isinstance(config, Config):
        overrides = config.to_dict()
    else:
        overrides = dict(config)
    return Plugin(Memory.open(path, config_path=config_path, config=overrides))
