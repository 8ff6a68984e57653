"""What a session said before the event being read: whether an agent is listening (a
coding host's session, or a tool call so far) and the assistant messages a short reply
may pick an option from (see docs/extraction.md). Read by :mod:`memplug.derive.extract`."""

from __future__ import annotations

import msgspec
from msgspec import Struct, field

from memplug.base.host_registry import is_coding_host
from memplug.base.vocab import USER_INPUT_SOURCE_KINDS
from memplug.store.ports import EventPort
from memplug.store.records import EventRow

# A tool call says an agent is acting in the session: what a person says after it is
# said to that agent (cues.agent_rules: the rules read only where an agent is listening).
TOOL_CALL = "tool/call"
TOOL_RESULT = "tool/result"
# At most this many assistant messages since the person last spoke are searched for
# the options a short reply picks (one turn's text blocks).
OFFERED_MESSAGES = 8


def is_user_statement(event: EventRow) -> bool:
    """Whether an event is text a person typed (not harness-generated, not a tool's)."""
    if event.generated or event.type != "user/message":
        return False
    return event.source_kind is None or event.source_kind in USER_INPUT_SOURCE_KINDS


class Dialogue(Struct):
    """What a session said before the event being read: whether an agent is acting in
    it (a tool call so far) and the assistant's messages since the person last spoke.
    Built from events in seq order only, so a live catch-up and a rebuild agree."""

    tools: bool = False
    offered: list[EventRow] = field(default_factory=list)

    def listening(self, event: EventRow) -> bool:
        """Whether ``event`` was said to an agent: a coding host's, or after a tool call."""
        return self.tools or is_coding_host(_host(event))

    def see(self, event: EventRow) -> None:
        if event.type == TOOL_CALL:
            self.tools = True
        elif event.type == "assistant/message" and not event.generated:
            self.offered = [*self.offered[-(OFFERED_MESSAGES - 1) :], event]
        elif is_user_statement(event):
            self.offered = []

    @classmethod
    def before(cls, events: EventPort, session_id: str, seq: int) -> Dialogue:
        """The dialogue as it stood before ``seq``, read back from the stored events."""
        tools = events.last_seq(session_id, seq, (TOOL_CALL,)) is not None
        spoke = events.last_seq(session_id, seq, ("user/message",), sorted(USER_INPUT_SOURCE_KINDS))
        after = -1 if spoke is None else spoke
        offered = [
            e
            for e in events.session_events(
                session_id, after_seq=after, types=("assistant/message",)
            )
            if e.seq < seq and not e.generated
        ]
        return cls(tools, offered[-OFFERED_MESSAGES:])


def _host(event: EventRow) -> str | None:
    """The host the event came from (``host`` in its extras), else None."""
    if not event.extra_json or '"host"' not in event.extra_json:
        return None  # most imported events: no parse
    extra = msgspec.json.decode(event.extra_json)
    host = extra.get("host") if isinstance(extra, dict) else None
    return host if isinstance(host, str) else None
