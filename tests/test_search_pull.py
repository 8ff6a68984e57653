"""On the pull path a turn's conclusion ranks above raw tool output that says the same
words more often (retrieval.searchToolWeight; docs/search.md)."""

from __future__ import annotations

import io
import json
from typing import Any

from msgspec.structs import replace

from memplug.memory import Memory

OUTPUT = "hatchling build error: hatchling build error in hatchling build backend"
CONCLUSION = "Fixed the hatchling build error by naming the module file explicitly."


def _import(memory: Memory, events: list[dict[str, Any]]) -> None:
    data = "".join(json.dumps(e) + "\n" for e in events).encode()
    assert not memory.import_jsonl([("-", io.BytesIO(data))]).rejected


def _events() -> list[dict[str, Any]]:
    base = {"session_id": "s", "cwd": "/p"}
    return [
        {**base, "seq": 1, "type": "user/message", "role": "user", "text": "install it with uv"},
        {**base, "seq": 2, "type": "tool/result", "role": "tool", "text": OUTPUT},
        {**base, "seq": 3, "type": "assistant/message", "role": "assistant", "text": CONCLUSION},
    ]


def test_search_ranks_the_conclusion_above_the_tool_output(memory: Memory) -> None:
    _import(memory, _events())
    hits = _refs(memory)
    assert hits.index("s:3") < hits.index("s:2"), hits
    # With the weights assembly uses, the long output wins: the settings are what move it.
    retrieval = replace(
        memory.config.retrieval, search_tool_weight=0.5, search_assistant_weight=0.5
    )
    config = replace(memory.config, retrieval=retrieval)
    same = Memory(memory.db, replace(memory.loaded, config=config))
    hits = _refs(same)
    assert hits.index("s:2") < hits.index("s:3"), hits


def _refs(memory: Memory) -> list[str]:
    page = memory.search("hatchling build error", limit=5)
    return [f"{h['session_id']}:{h['seq']}" for h in page["hits"] if h["kind"] == "event"]


def test_search_ranks_the_agents_reply_before_the_question_it_answers(memory: Memory) -> None:
    """The agent's reply that holds the finding comes before a person's message that
    shares fewer of the words but weighs as a person's (retrieval.searchAssistantWeight);
    at assembly's weight for the assistant, the person's message wins."""
    question = "why is ci failing again? it all passed locally"
    reply = (
        "CI was failing on lint: main had lint errors, rebased onto the fixed main. The fix "
        "is in the lint config now and the pipeline is green again after the rebase onto "
        "the fixed main branch today."
    )
    _import(memory, [
        {"session_id": "a", "cwd": "/p", "seq": 1, "type": "user/message", "role": "user",
         "text": question},
        {"session_id": "b", "cwd": "/p", "seq": 1, "type": "assistant/message",
         "role": "assistant", "text": reply},
    ])  # fmt: skip

    def ranked(weight: float) -> list[str]:
        retrieval = replace(memory.config.retrieval, search_assistant_weight=weight)
        config = replace(memory.config, retrieval=retrieval)
        page = Memory(memory.db, replace(memory.loaded, config=config)).search(
            "why was ci failing on lint", limit=5
        )
        return [f"{h['session_id']}:{h['seq']}" for h in page["hits"] if h["kind"] == "event"]

    assert memory.config.retrieval.search_assistant_weight == 0.7
    assert ranked(0.7) == ["b:1", "a:1"]
    assert ranked(0.5) == ["a:1", "b:1"]


def test_text_the_host_wrote_into_a_persons_turn_weighs_as_tool_output(memory: Memory) -> None:
    """A command's output recorded in the person's turn (``<bash-stdout>``: the host wrote
    it, no one said it) ranks with tool output on the pull path, below the agent's reply
    that names the same thing; it follows retrieval.searchToolWeight."""
    output = (
        "<bash-stdout>opened pull request 9: research/pull/9 (pull request created)</bash-stdout>"
    )
    reply = "The test passed and the agent opened pull request research/pull/9."
    _import(memory, [
        {"session_id": "o", "cwd": "/p", "seq": 1, "type": "user/message", "role": "user",
         "text": output},
        {"session_id": "p", "cwd": "/p", "seq": 1, "type": "assistant/message",
         "role": "assistant", "text": reply},
    ])  # fmt: skip

    def ranked(tool_weight: float) -> list[str]:
        retrieval = replace(memory.config.retrieval, search_tool_weight=tool_weight)
        config = replace(memory.config, retrieval=retrieval)
        page = Memory(memory.db, replace(memory.loaded, config=config)).search(
            "which pull request did the agent open", limit=5
        )
        return [f"{h['session_id']}:{h['seq']}" for h in page["hits"] if h["kind"] == "event"]

    generated = memory.search("pull request", limit=5)["hits"]
    assert {h["session_id"]: h["generated"] for h in generated}["o"] is True
    assert ranked(memory.config.retrieval.search_tool_weight) == ["p:1", "o:1"]
    assert ranked(4.0) == ["o:1", "p:1"]
