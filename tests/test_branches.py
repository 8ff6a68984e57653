"""The one active-path walk (memplug.base.branches), pinned where the two walks it replaced
(retrieval's and the Claude Code reader's) disagreed."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from memplug.base.branches import Link, active_path
from memplug.base.models import parse_event
from memplug.hosts import claude_code as cc
from memplug.memory import Memory
from memplug.recall.retrieve import Retriever


def seqs(*links: Link) -> tuple[int, ...]:
    return active_path(links).seqs


def test_the_walk_follows_parents_from_the_last_entry_and_leaves_abandoned_branches() -> None:
    path = active_path(
        [Link(1, "e1"), Link(2, "e2", "e1"), Link(3, "e3", "e2"), Link(4, "e4", "e1")]
    )
    assert path.seqs == (1, 4) and not path.cycle and path.branched


def test_a_session_without_entry_ids_is_one_path() -> None:
    path = active_path([Link(1), Link(2), Link(3)])
    assert path.seqs == (1, 2, 3) and not path.branched


def test_the_leaf_is_the_last_event_carrying_an_entry_id() -> None:
    # The reader's walk started at the last event whatever it was: an event with no
    # entry id (memplug's own message committed back, a host without a tree) made
    # every earlier event look abandoned.
    assert seqs(Link(1, "e1"), Link(2, "e2", "e1"), Link(3, "e3", "e1"), Link(4)) == (1, 3, 4)


def test_an_event_without_an_entry_id_is_on_the_path() -> None:
    # The reader's walk dropped it unless it was the leaf.
    assert seqs(Link(1, "e1"), Link(2), Link(3, "e3", "e1"), Link(4, "e4", "e1")) == (1, 2, 4)


def test_sidechain_events_are_off_the_main_path_unless_the_session_is_all_sidechain() -> None:
    # Retrieval's walk read no sidechain flag.
    main = [Link(1, "e1"), Link(2, "s2", "e1", sidechain=True), Link(3, "e3", "e1")]
    assert seqs(*main) == (1, 3)
    side = [Link(1, "s1", sidechain=True), Link(2, "s2", "s1", sidechain=True)]
    assert seqs(*side) == (1, 2)


def test_results_of_parallel_tool_calls_are_on_the_path_with_their_calls() -> None:
    # Retrieval's walk kept only the result the chain ran through.
    links = [
        Link(1, "u1"),
        Link(2, "a1", "u1", type="tool/call", call_id="c1"),
        Link(3, "a2", "a1", type="tool/call", call_id="c2"),
        Link(4, "r1", "a1", type="tool/result", call_id="c1"),
        Link(5, "r2", "a2", type="tool/result", call_id="c2"),
        Link(6, "a3", "r2"),
    ]
    assert seqs(*links) == (1, 2, 3, 4, 5, 6)
    abandoned = [*links, Link(7, "x", "u1", type="tool/result", call_id="c9")]
    assert seqs(*abandoned) == (1, 7)


def test_a_parent_cycle_stops_the_walk_and_is_reported() -> None:
    path = active_path([Link(1, "a", "c"), Link(2, "b", "a"), Link(3, "c", "b")])
    assert path.cycle and path.seqs == (1, 2, 3)
    assert not active_path([Link(1, "a"), Link(2, "b", "a")]).cycle


def test_a_parent_naming_no_entry_is_a_root() -> None:
    assert seqs(Link(1, "e1"), Link(2, "e2", "gone"), Link(3, "e3", "e2")) == (2, 3)


def test_of_two_events_with_one_entry_id_the_later_is_the_entry() -> None:
    assert seqs(Link(1, "e1"), Link(2, "d"), Link(3, "d", "e1"), Link(4, "e4", "d")) == (1, 3, 4)


links_strategy = st.lists(
    st.builds(
        Link,
        seq=st.integers(0, 40),
        entry_id=st.none() | st.sampled_from("abcdefg"),
        parent_id=st.none() | st.sampled_from("abcdefgz"),
        sidechain=st.booleans(),
        type=st.none() | st.sampled_from(["tool/call", "tool/result"]),
        call_id=st.none() | st.sampled_from(["c1", "c2"]),
    ),
    max_size=20,
    unique_by=lambda link: link.seq,
)


@given(links_strategy, st.randoms(use_true_random=False))
def test_the_path_depends_on_the_events_not_on_the_order_they_arrive_in(
    links: list[Link], rnd: Any
) -> None:
    shuffled = list(links)
    rnd.shuffle(shuffled)
    path = active_path(links)
    assert active_path(shuffled) == path
    assert set(path.seqs) <= {link.seq for link in links}
    assert list(path.seqs) == sorted(set(path.seqs))


def test_the_claude_code_reader_uses_the_same_walk() -> None:
    events: list[dict[str, Any]] = [
        {"seq": 1, "type": "user/message", "entry_id": "e1"},
        {"seq": 2, "type": "assistant/message", "entry_id": "e2", "parent_id": "e1"},
        {"seq": 3, "type": "user/message", "entry_id": "e3", "parent_id": "e1"},
        {"seq": 4, "type": "user/message", "source": {"kind": "memplug"}},
    ]
    assert [e["seq"] for e in cc.active_path(events)] == [1, 3, 4]
    assert [e["seq"] for e in cc.active_path(reversed(events))] == [1, 3, 4]


def test_search_on_the_active_branch_follows_the_same_rule(memory: Memory) -> None:
    # Retrieval's walk used to ignore sidechains and keep only the tool result the
    # chain ran through; it reads both from storage now.
    base = {"session_id": "s", "cwd": "/p"}
    events = [
        {"seq": 1, "type": "user/message", "role": "user", "text": "kiwi prompt",
         "entry_id": "u1"},
        {"seq": 2, "type": "tool/call", "role": "assistant", "text": "grep kiwi a",
         "tool_name": "bash", "call_id": "c1", "entry_id": "a1", "parent_id": "u1"},
        {"seq": 3, "type": "tool/call", "role": "assistant", "text": "grep kiwi b",
         "tool_name": "bash", "call_id": "c2", "entry_id": "a2", "parent_id": "a1"},
        {"seq": 4, "type": "tool/result", "role": "tool", "text": "kiwi in a",
         "tool_name": "bash", "call_id": "c1", "entry_id": "r1", "parent_id": "a1"},
        {"seq": 5, "type": "tool/result", "role": "tool", "text": "kiwi in b",
         "tool_name": "bash", "call_id": "c2", "entry_id": "r2", "parent_id": "a2"},
        {"seq": 6, "type": "assistant/message", "role": "assistant", "text": "kiwi done",
         "entry_id": "a3", "parent_id": "r2"},
        # A subagent's record inside the main transcript, written last: not the leaf.
        {"seq": 7, "type": "user/message", "role": "user", "text": "kiwi aside",
         "entry_id": "x1", "parent_id": "r2", "is_sidechain": True},
    ]  # fmt: skip
    memory.ingest([parse_event(base | e) for e in events])
    rows = memory.store.search.branch_rows("s", memory.store.search.snapshot())
    assert [r.sidechain for r in rows] == [False] * 6 + [True]
    assert [(r.type, r.call_id) for r in rows][3] == ("tool/result", "c1")
    retriever = Retriever(memory.store, memory.config)
    seqs = lambda branches: sorted(  # noqa: E731
        h.seq for h in retriever.search("kiwi", session="s", branches=branches, limit=20).hits
    )
    assert seqs("active") == [1, 2, 3, 4, 5, 6]
    assert seqs("all") == [1, 2, 3, 4, 5, 6, 7]
