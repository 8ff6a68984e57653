"""The pydantic-ai adapter, offline: FunctionModel and TestModel show what the model got."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

import memplug
from memplug.hosts.pydantic_ai import MEMPLUG_PREFIX, MemoryHistory, is_memory, to_events
from memplug.plugin import Plugin
from memplug.recall.assemble import LABELS

PROJECT = "/home/ana/shop"


@pytest.fixture
def plugin(db_path: Path) -> Iterator[Plugin]:
    opened = memplug.open(str(db_path))
    yield opened
    opened.close()


def recording_model(*responses: ModelResponse) -> tuple[FunctionModel, list[list[ModelMessage]]]:
    """A model that answers with ``responses`` in turn and keeps every request it got."""
    received: list[list[ModelMessage]] = []
    queue = list(responses)

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        received.append(list(messages))
        return queue.pop(0) if queue else ModelResponse(parts=[TextPart("done")])

    return FunctionModel(answer), received


def memory_parts(messages: list[ModelMessage]) -> list[UserPromptPart]:
    return [p for m in messages for p in m.parts if is_memory(p)]


def remember(plugin: Plugin, text: str, session: str = "conv-a") -> None:
    """An earlier conversation in the same project, captured through the adapter."""
    history = MemoryHistory(plugin, session, project=PROJECT)
    model, _ = recording_model(ModelResponse(parts=[TextPart("Noted.")]))
    agent = Agent(model, capabilities=[history.capability()])
    history.capture(agent.run_sync(text).all_messages())


def test_the_model_receives_memory_right_before_the_latest_prompt(plugin: Plugin) -> None:
    remember(plugin, "Decision: we deploy with blue-green on port 9090.")
    history = MemoryHistory(plugin, "conv-b", project=PROJECT)
    model, received = recording_model(ModelResponse(parts=[TextPart("Port 9090.")]))
    agent = Agent(model, system_prompt="You are a deploy bot.", capabilities=[history.capability()])
    agent.run_sync("Which port do we deploy on?")
    (request,) = received[0]
    assert isinstance(request, ModelRequest)
    system, memory, prompt = request.parts
    assert isinstance(system, SystemPromptPart) and system.content == "You are a deploy bot."
    assert isinstance(memory, UserPromptPart) and memory.content.startswith(MEMPLUG_PREFIX)
    assert "9090" in memory.content
    assert isinstance(prompt, UserPromptPart) and prompt.content == "Which port do we deploy on?"


def test_a_tool_step_adds_no_second_copy_of_the_same_memory(plugin: Plugin) -> None:
    remember(plugin, "Decision: we deploy with blue-green on port 9090.")
    history = MemoryHistory(plugin, "conv-b", project=PROJECT)
    model, received = recording_model(
        ModelResponse(parts=[ToolCallPart("deploy_status", {"env": "prod"}, tool_call_id="c1")]),
        ModelResponse(parts=[TextPart("Deployed on 9090.")]),
    )
    agent = Agent(model, capabilities=[history.capability()])

    @agent.tool_plain
    def deploy_status(env: str) -> str:
        return f"{env}: green is live"

    result = agent.run_sync("Which port do we deploy on?")
    assert len(received) == 2
    for messages in received:
        (memory,) = memory_parts(messages)
        request = messages[0]
        assert request.parts[request.parts.index(memory) + 1].content == (
            "Which port do we deploy on?"
        )
    assert len(memory_parts(result.all_messages())) == 1


def test_a_later_turn_gets_its_memory_before_its_own_prompt_and_history_is_untouched(
    plugin: Plugin,
) -> None:
    history = MemoryHistory(plugin, "conv-b", project=PROJECT)
    model, received = recording_model(
        ModelResponse(parts=[TextPart("Hi.")]), ModelResponse(parts=[TextPart("9090.")])
    )
    agent = Agent(model, capabilities=[history.capability()])
    first = agent.run_sync("Hello, shall we deploy today?")
    assert memory_parts(received[0]) == []  # nothing known yet
    remember(plugin, "Decision: we deploy with blue-green on port 9090.")
    agent.run_sync("Which port do we deploy on?", message_history=first.all_messages())
    latest = received[1]
    assert latest[:2] == first.all_messages()  # earlier messages reach the model as they were
    (memory,) = memory_parts(latest)
    parts = latest[-1].parts
    assert "9090" in memory.content and parts.index(memory) == len(parts) - 2
    assert parts[-1].content == "Which port do we deploy on?"


def test_run_messages_are_captured_with_memplugs_own_part_marked(plugin: Plugin) -> None:
    remember(plugin, "Decision: we deploy with blue-green on port 9090.")
    history = MemoryHistory(plugin, "conv-b", project=PROJECT)
    model, _ = recording_model(
        ModelResponse(parts=[ToolCallPart("deploy_status", {"env": "prod"}, tool_call_id="c1")]),
        ModelResponse(parts=[TextPart("Deployed on 9090.")]),
    )
    agent = Agent(model, system_prompt="You are a deploy bot.", capabilities=[history.capability()])

    @agent.tool_plain
    def deploy_status(env: str) -> str:
        return f"{env}: green is live"

    messages = agent.run_sync("Which port do we deploy on?").all_messages()
    history.capture(messages)
    events = plugin.memory.store.events.session_events("conv-b")
    got = [(e.type, e.role, e.source_kind) for e in events]
    assert got == [
        ("user/message", "system", "agent-instructions"),
        ("user/message", "user", "user"),
        ("user/message", "user", "memplug"),
        ("tool/call", "assistant", None),
        ("tool/result", "tool", None),
        ("assistant/message", "assistant", None),
    ]
    memory_row = events[2]
    assert memory_row.generated == 1 and memory_row.text.startswith(MEMPLUG_PREFIX)
    call, result = events[3], events[4]
    assert (call.tool_name, call.call_id, result.call_id, result.outcome) == (
        "deploy_status",
        "c1",
        "c1",
        "succeeded",
    )
    assert {e.project for e in events} == {PROJECT}
    assert history.capture(messages) == 0
    assert MemoryHistory(plugin, "conv-b", project=PROJECT).capture(messages) == 0


def test_nothing_relevant_means_the_model_gets_the_history_unchanged(plugin: Plugin) -> None:
    history = MemoryHistory(plugin, "fresh", project=PROJECT)
    model, received = recording_model()
    agent = Agent(model, capabilities=[history.capability()])
    agent.run_sync("Hello there")
    assert memory_parts(received[0]) == []
    assert [type(p) for p in received[0][0].parts] == [UserPromptPart]


def test_a_broken_database_never_breaks_the_run(plugin: Plugin) -> None:
    remember(plugin, "Decision: we deploy with blue-green on port 9090.")
    history = MemoryHistory(plugin, "conv-b", project=PROJECT)
    plugin.memory.db.conn.close()
    model, received = recording_model(ModelResponse(parts=[TextPart("ok")]))
    agent = Agent(model, capabilities=[history.capability()])
    assert agent.run_sync("Which port do we deploy on?").output == "ok"
    assert memory_parts(received[0]) == []


def test_works_with_test_model_and_its_tool_calls(plugin: Plugin) -> None:
    remember(plugin, "Remember: the staging database is db-staging-2 on port 5433.")
    history = MemoryHistory(plugin, "conv-t", project=PROJECT)
    agent = Agent(TestModel(), capabilities=[history.capability()])

    @agent.tool_plain
    def query_db(sql: str) -> str:
        return "1 row"

    result = agent.run_sync("Which staging database do we use?")
    history.capture(result.all_messages())
    assert len(memory_parts(result.all_messages())) == 1
    assert "db-staging-2" in memory_parts(result.all_messages())[0].content
    types = [e.type for e in plugin.memory.store.events.session_events("conv-t")]
    assert {"tool/call", "tool/result", "assistant/message"} <= set(types)


def test_to_events_is_stable_and_keeps_memplugs_part_at_its_own_seq() -> None:
    messages: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("first")]),
        ModelResponse(parts=[TextPart("one")]),
        ModelRequest(parts=[UserPromptPart(f"{MEMPLUG_PREFIX} memory"), UserPromptPart("second")]),
    ]
    events: list[dict[str, Any]] = to_events(messages, "s", PROJECT)
    assert [(e["seq"], e["type"], e["turn"]) for e in events] == [
        (0, "user/message", 1),
        (128, "assistant/message", 1),
        (256, "user/message", 2),
        (383, "user/message", 2),
    ]
    assert events[3]["source"] == {"kind": "memplug", "form": "evidence"}
    assert to_events(messages, "s", PROJECT) == events


def test_every_locale_header_starts_with_the_marker_the_adapter_looks_for() -> None:
    assert all(labels["header"].startswith(MEMPLUG_PREFIX) for labels in LABELS.values())
