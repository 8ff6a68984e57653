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
    # With the tool weight assembly uses, the long output wins: the setting is what moves it.
    retrieval = replace(memory.config.retrieval, search_tool_weight=0.5)
    config = replace(memory.config, retrieval=retrieval)
    same = Memory(memory.db, replace(memory.loaded, config=config))
    hits = _refs(same)
    assert hits.index("s:2") < hits.index("s:3"), hits


def _refs(memory: Memory) -> list[str]:
    page = memory.search("hatchling build error", limit=5)
    return [f"{h['session_id']}:{h['seq']}" for h in page["hits"] if h["kind"] == "event"]
