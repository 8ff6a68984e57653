"""The search store's own reads, checked against a real database file."""

from __future__ import annotations

import io
import json

from memplug.memory import Memory
from memplug.recall.query import parse_query
from memplug.store.records import EventScope, ItemScope


def _import(memory: Memory, events: list[dict[str, object]]) -> None:
    data = "\n".join(json.dumps(e) for e in events) + "\n"
    summary = memory.import_jsonl([("-", io.BytesIO(data.encode("utf-8")))])
    assert not summary.rejected, summary.rejected


def _event(session: str, text: str) -> dict[str, object]:
    return {"session_id": session, "seq": 1, "type": "user/message", "role": "user",
            "text": text, "cwd": f"/p/{session}"}  # fmt: skip


def test_truncated_without_needles_answers_for_the_scope_it_is_given(memory: Memory) -> None:
    search = memory.store.search
    _import(memory, [_event("small", "a short turn")])
    assert not search.truncated(None)
    assert not search.truncated(("small",))

    _import(memory, [_event("big", "kingfisher " + "x " * 15_000)])
    assert search.truncated(None)
    assert search.truncated(("big",))
    assert search.truncated(("small", "big"))
    assert not search.truncated(("small",))
    assert not search.truncated(())


def test_truncated_with_needles_looks_only_at_what_the_index_could_not_see(memory: Memory) -> None:
    search = memory.store.search
    head = "kingfisher " + "x " * 10_000
    _import(memory, [_event("big", head + " zebrafinch"), _event("small", "zebrafinch here")])
    # In the tail only: the index cannot find it there.
    assert search.truncated(None, ["zebrafinch"])
    assert search.truncated(("big",), ["nothing", "zebrafinch"])
    # In the indexed head: the index finds it, the tail changes nothing.
    assert not search.truncated(None, ["kingfisher"])
    # Nowhere, or outside the scope, or no needle at all.
    assert not search.truncated(None, ["xyzzy"])
    assert not search.truncated(("small",), ["zebrafinch"])
    assert not search.truncated((), ["zebrafinch"])
    assert not search.truncated(None, [])


def test_item_term_search_tests_scope_on_the_rowid_index(memory: Memory) -> None:
    # Migration 0010: each match's session and status come from `memory_items_rid_scope`;
    # the walk passes session b's items between c's and a's.
    # The answer must be the plain join's, newest first, retracted items left out.
    search = memory.store.search
    events = [
        {**_event(session, f"Remember: the kingfisher nests by bridge {n} of {session}"), "seq": n}
        for n in range(1, 13)
        for session in ("a", "b", "c")
    ]
    _import(memory, events)
    newest_c = memory.store.items.session_items("c")[-1]
    memory.store.items.update(newest_c.id, status="retracted")
    snap = search.snapshot()
    plan = search.match_plan(parse_query("kingfisher"))
    expr = plan.expression(plan.indexed[0])
    scope = ItemScope(session_ids=("a", "c"))
    found = search.item_term_matches(plan, plan.indexed[0], scope, snap, 14).handles
    plain = [
        row[0]
        for row in memory.store.db.conn.execute(
            "SELECT m.rid FROM memory_fts f JOIN memory_items m ON m.rid = f.rowid "
            "WHERE memory_fts MATCH ? AND m.session_id IN ('a', 'c') "
            "AND m.status IN ('active', 'superseded', 'disputed') ORDER BY f.rowid DESC LIMIT 14",
            (expr,),
        )
    ]
    assert found == plain and len(found) == 14
    rows = search.items_by_rids(found)
    assert {rows[r].session_id for r in found} == {"a", "c"}
    assert all(rows[r].status != "retracted" for r in found)


def test_texts_reads_each_existing_ref_once_in_chunks(memory: Memory) -> None:
    events = [{**_event("s", f"turn number {n}"), "seq": n} for n in range(1, 451)]
    _import(memory, events)
    wanted = [("s", n) for n in range(450, 0, -1)] + [("s", 7), ("s", 999), ("other", 1)]
    texts = memory.store.events.texts(wanted)
    assert len(texts) == 450
    assert texts[("s", 1)] == "turn number 1" and texts[("s", 450)] == "turn number 450"
    assert ("s", 999) not in texts and ("other", 1) not in texts
    assert memory.store.events.texts([]) == {}


def test_a_term_s_frequency_is_counted_under_the_limit_and_estimated_over_it(
    memory: Memory,
) -> None:
    search = memory.store.search
    # Every other event holds the term, so its density is a half everywhere.
    events = [
        {**_event("a", "kingfisher at the bridge" if n % 2 else "a heron"), "seq": n}
        for n in range(1, 41)
    ]
    _import(memory, events)
    snap = search.snapshot()
    plan = search.match_plan(parse_query("kingfisher"))
    scope = EventScope(session_ids=("a",))
    exact = search.event_term_matches(plan, plan.indexed[0], scope, snap, 50)
    assert (len(exact.handles), exact.df, exact.estimated) == (20, 20.0, False)
    assert exact.handles == sorted(exact.handles, reverse=True)  # newest first
    over = search.event_term_matches(plan, plan.indexed[0], scope, snap, 5)
    assert over.handles == exact.handles[:5] and over.estimated
    # The newest five span ten rows: a density of a half over the snapshot's rows.
    assert over.df == 5 * snap.max_event_id / (snap.max_event_id - over.handles[-1] + 1)
    assert abs(over.df - 20) <= 2
