"""The search store's own reads, checked against a real database file."""

from __future__ import annotations

import io
import json

from memplug.memory import Memory


def _import(memory: Memory, events: list[dict[str, object]]) -> None:
    data = "\n".join(json.dumps(e) for e in events) + "\n"
    summary = memory.import_jsonl([("-", io.BytesIO(data.encode("utf-8")))])
    assert not summary.rejected, summary.rejected


def _event(session: str, text: str) -> dict[str, object]:
    return {"session_id": session, "seq": 1, "type": "user/message", "role": "user",
            "text": text, "cwd": f"/p/{session}"}  # fmt: skip


def test_has_truncated_answers_for_the_scope_it_is_given(memory: Memory) -> None:
    search = memory.store.search
    _import(memory, [_event("small", "a short turn")])
    assert not search.has_truncated(None)
    assert not search.has_truncated(("small",))

    _import(memory, [_event("big", "kingfisher " + "x " * 15_000)])
    assert search.has_truncated(None)
    assert search.has_truncated(("big",))
    assert search.has_truncated(("small", "big"))
    assert not search.has_truncated(("small",))
    assert not search.has_truncated(())


def test_truncated_matching_looks_only_at_what_the_index_could_not_see(memory: Memory) -> None:
    search = memory.store.search
    head = "kingfisher " + "x " * 10_000
    _import(memory, [_event("big", head + " zebrafinch"), _event("small", "zebrafinch here")])
    # In the tail only: the index cannot find it there.
    assert search.truncated_matching(None, ["zebrafinch"])
    assert search.truncated_matching(("big",), ["nothing", "zebrafinch"])
    # In the indexed head: the index finds it, the tail changes nothing.
    assert not search.truncated_matching(None, ["kingfisher"])
    # Nowhere, or outside the scope, or no needle at all.
    assert not search.truncated_matching(None, ["xyzzy"])
    assert not search.truncated_matching(("small",), ["zebrafinch"])
    assert not search.truncated_matching((), ["zebrafinch"])
    assert not search.truncated_matching(None, [])
