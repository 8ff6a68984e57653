"""pydantic-ai adapter: a history processor that puts memplug's message in front of the
latest user prompt before every model request, and captures the run's messages.

    from memplug.hosts.pydantic_ai import MemoryHistory
    memory = MemoryHistory.open("conversation-42")          # memplug.open() underneath
    agent = Agent(model, capabilities=[memory.capability()])  # pydantic-ai 2.x
    agent = Agent(model, history_processors=[memory])        # pydantic-ai 1.x
    result = agent.run_sync("Which port did we pick?")
    memory.capture(result.all_messages())                    # the final answer too

Needs the ``pydantic-ai`` extra (``pip install 'memplug-local[pydantic-ai]'``).

Choices, and why:

* The memory message is a ``UserPromptPart`` inserted in the latest prompt's request,
  right before the prompt: the model reads it as context for that prompt, after the
  system prompt. Its text starts with ``[memplug]`` (the assembled header, in every
  locale), which is how it is recognised later.
* History stays append-only. pydantic-ai 2.x keeps what a processor returns, so an
  injection becomes part of the conversation like any committed message; the next
  step's assembly sees it among the visible messages and leaves out what it already
  said, so a step adds a message only when it has something new. Earlier messages are
  never rewritten (that would also break the provider's prompt cache).
* Capture follows the conversation as pydantic-ai keeps it, append-only: part ``k`` of
  message ``i`` is ``seq = i × 128 + k`` in the session (memplug's own part is
  ``k = 127``, wherever it sits), so capturing the same history again stores nothing
  twice. A history trimmed between runs would shift the indices: give such a
  conversation a new session id.
* Nothing here raises into the run: a failure is recorded (``memory status``) and the
  messages go to the model unchanged.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from memplug.plugin import open_plugin

try:
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ThinkingPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "memplug.hosts.pydantic_ai needs pydantic-ai: pip install 'memplug-local[pydantic-ai]'"
    ) from error

from memplug.base.models import Message, Source, StepContext
from memplug.base.vocab import MEMPLUG_SOURCE_FORM, MEMPLUG_SOURCE_KIND
from memplug.plugin import Plugin

HOST = "pydantic-ai"
MEMPLUG_PREFIX = "[memplug]"
PARTS_PER_MESSAGE = 128
MEMPLUG_PART = PARTS_PER_MESSAGE - 1


class MemoryHistory:
    """A pydantic-ai history processor bound to one memplug session (one conversation)."""

    def __init__(
        self,
        plugin: Plugin,
        session_id: str,
        *,
        project: str | None = None,
        capture: bool = True,
    ) -> None:
        self.plugin = plugin
        self.session_id = session_id
        self.project = project or os.getcwd()
        self.capture_enabled = capture
        self._captured = -1

    @classmethod
    def open(
        cls,
        session_id: str,
        path: str | None = None,
        config: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> MemoryHistory:
        """Open the database (``memplug.open``) and bind a processor to ``session_id``."""
        return cls(open_plugin(path, config), session_id, **options)

    def capability(self) -> Any:
        """The processor as a pydantic-ai 2.x capability (``capabilities=[…]``)."""
        from pydantic_ai.capabilities import ProcessHistory

        return ProcessHistory(self)

    def close(self) -> None:
        self.plugin.close()

    # -- the processor ----------------------------------------------------------------

    def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """Capture what is new; return the history, with a memory message when there is one."""
        try:
            if self.capture_enabled:
                self.capture(messages)
            found = latest_prompt(messages)
            if found is None:
                return messages
            index, prompt = found
            turn, step = _turn_and_step(messages)
            injection = self.plugin.pre_step(
                StepContext(
                    session_id=self.session_id,
                    turn=turn,
                    step=step,
                    messages=visible_messages(messages),
                    query=prompt,
                    trigger=HOST,
                )
            )
            if injection is None:
                return messages
            return with_memory(messages, index, injection.text)
        except Exception as error:
            # Recording can fail too (a broken database); the run must still go on.
            with contextlib.suppress(Exception):
                message = f"{type(error).__name__}: {error}"
                self.plugin.memory.record_error(HOST, message, self.session_id)
            return messages

    def capture(self, messages: Sequence[ModelMessage]) -> int:
        """Capture the parts not captured yet (a run's ``all_messages()``); how many."""
        stored = 0
        for event in to_events(messages, self.session_id, self.project):
            if event["seq"] <= self._captured:
                continue
            if self.plugin.on_event(event):
                stored += 1
            self._captured = max(self._captured, event["seq"])
        return stored


# -- messages ↔ memplug ---------------------------------------------------------------


def is_memory(part: Any) -> bool:
    return isinstance(part, UserPromptPart) and _text(part.content).startswith(MEMPLUG_PREFIX)


def latest_prompt(messages: Sequence[ModelMessage]) -> tuple[int, str] | None:
    """Index of the request holding the latest user prompt, and the prompt's text."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ModelRequest):
            prompts = [p for p in message.parts if isinstance(p, UserPromptPart)]
            typed = [p for p in prompts if not is_memory(p)]
            if typed:
                return index, _text(typed[-1].content)
    return None


def with_memory(messages: Sequence[ModelMessage], index: int, text: str) -> list[ModelMessage]:
    """``messages`` with ``text`` as a user part right before the prompt of ``index``."""
    request = messages[index]
    assert isinstance(request, ModelRequest)
    parts = list(request.parts)
    at = max(i for i, p in enumerate(parts) if isinstance(p, UserPromptPart) and not is_memory(p))
    parts.insert(at, UserPromptPart(content=text))
    out = list(messages)
    out[index] = dataclasses.replace(request, parts=parts)
    return out


def visible_messages(messages: Sequence[ModelMessage]) -> list[Message]:
    """What the model sees this step, as memplug's step messages."""
    visible = []
    for message in messages:
        for part in message.parts:
            role, text = _role_and_text(part)
            if text:
                visible.append(Message(role=role, text=text, source=_source(part)))
    return visible


def to_events(
    messages: Sequence[ModelMessage], session_id: str, project: str | None = None
) -> list[dict[str, Any]]:
    """The history as memplug host events (generic JSONL form), in seq order."""
    events: list[dict[str, Any]] = []
    turn = step = 0
    previous: str | None = None
    for index, message in enumerate(messages):
        if isinstance(message, ModelResponse):
            step += 1
        # A prompt opens its turn for the whole request: memplug's part sits before it.
        prompts = [p for p in message.parts if isinstance(p, UserPromptPart) and not is_memory(p)]
        if prompts:
            turn, step = turn + len(prompts), 0
        k = 0
        for part in message.parts:
            event = _part_event(part)
            if event is None:
                continue
            position = MEMPLUG_PART if is_memory(part) else min(k, MEMPLUG_PART - 1)
            k += 0 if is_memory(part) else 1
            entry = f"m{index}.{position}"
            event.update(
                session_id=session_id,
                seq=index * PARTS_PER_MESSAGE + position,
                turn=turn,
                step=step,
                entry_id=entry,
                host=HOST,
            )
            if previous is not None:
                event["parent_id"] = previous
            if project is not None:
                event["cwd"] = event["project"] = project
            stamp = getattr(part, "timestamp", None) or getattr(message, "timestamp", None)
            if stamp is not None:
                event["time"] = stamp.isoformat()
            previous = entry
            events.append(event)
    return sorted(events, key=lambda e: e["seq"])


def _part_event(part: Any) -> dict[str, Any] | None:
    if isinstance(part, UserPromptPart):
        if is_memory(part):
            source = {"kind": MEMPLUG_SOURCE_KIND, "form": MEMPLUG_SOURCE_FORM}
        else:
            source = {"kind": "user", "form": "prompt"}
        return {
            "type": "user/message",
            "role": "user",
            "text": _text(part.content),
            "source": source,
        }
    if isinstance(part, SystemPromptPart):
        return {
            "type": "user/message",
            "role": "system",
            "text": part.content,
            "source": {"kind": "agent-instructions", "form": "system-prompt"},
        }
    if isinstance(part, TextPart):
        return {"type": "assistant/message", "role": "assistant", "text": part.content}
    if isinstance(part, ThinkingPart):
        return {"type": "assistant/thinking", "role": "assistant", "text": part.content}
    if isinstance(part, ToolCallPart):
        args = part.args if isinstance(part.args, str) else json.dumps(part.args, default=str)
        return {
            "type": "tool/call",
            "role": "assistant",
            "text": f"{part.tool_name} {args}",
            "tool_name": part.tool_name,
            "call_id": part.tool_call_id,
        }
    if isinstance(part, ToolReturnPart):
        failed = getattr(part, "outcome", "success") not in (None, "success")
        return {
            "type": "tool/result",
            "role": "tool",
            "text": _text(part.content),
            "tool_name": part.tool_name,
            "call_id": part.tool_call_id,
            "outcome": "failed" if failed else "succeeded",
            "is_error": failed,
        }
    if isinstance(part, RetryPromptPart):
        text = (
            part.content if isinstance(part.content, str) else json.dumps(part.content, default=str)
        )
        if part.tool_name:
            return {
                "type": "tool/result",
                "role": "tool",
                "text": text,
                "tool_name": part.tool_name,
                "call_id": part.tool_call_id,
                "outcome": "failed",
                "is_error": True,
            }
        return {
            "type": "user/message",
            "role": "user",
            "text": text,
            "source": {"kind": "host-generated", "form": "retry-prompt"},
        }
    return None


def _role_and_text(part: Any) -> tuple[str, str]:
    event = _part_event(part)
    if event is None:
        return "user", ""
    return str(event["role"]), str(event["text"])


def _source(part: Any) -> Source | None:
    event = _part_event(part)
    source = event.get("source") if event else None
    return Source(**source) if source else None


def _turn_and_step(messages: Sequence[ModelMessage]) -> tuple[int, int]:
    events = to_events(messages, "-")
    if not events:
        return 0, 0
    last = events[-1]
    # The request about to be sent opens the next step.
    return int(last["turn"]), int(last["step"]) + 1


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and not isinstance(content, bytes | bytearray):
        return "\n".join(_text(item) for item in content)
    kind = getattr(content, "kind", None)
    if kind is not None:
        return f"[{kind}]"
    return json.dumps(content, default=str, ensure_ascii=False)
