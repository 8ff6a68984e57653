"""Retrieval engine: ranking, pinning, CJK, scopes, branches, coverage, paging, expand.

Real SQLite files in temporary directories, filled through the public import path.
``UPDATE_GOLDEN=1`` rewrites ``fixtures/golden/search-rankings.json`` after an
intended ranking change (review the diff: it is the point of the file).
"""

from __future__ import annotations

import io
import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import new_db
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from memplug.base.call_tokens import decode_token, encode_token
from memplug.base.config import validate_config
from memplug.base.errors import MemplugError, NotFound, ValidationError
from memplug.memory import Memory
from memplug.recall.retrieve import (
    HARD_LIMIT,
    Retriever,
    SearchPage,
    active_path,
)
from memplug.recall.retrieve.expand import FOLLOW_CHARS, FOLLOW_TURN_CHARS
from memplug.reports.purge import purge
from memplug.store.records import BranchRow

REPO = Path(__file__).resolve().parent.parent
SESSIONS = REPO / "fixtures" / "sessions"
GOLDEN = REPO / "fixtures" / "golden" / "search-rankings.json"
FIXTURE_FILES = ("shop.jsonl", "shop2.jsonl", "other_project.jsonl", "branches.jsonl")


def _import(memory: Memory, files: tuple[str, ...] = FIXTURE_FILES) -> None:
    for name in files:
        with open(SESSIONS / name, "rb") as stream:
            summary = memory.import_jsonl([(name, stream)])
        assert not summary.rejected


def _lines(memory: Memory, events: list[dict[str, Any]]) -> None:
    data = "\n".join(json.dumps(e, ensure_ascii=False) for e in events) + "\n"
    summary = memory.import_jsonl([("-", io.BytesIO(data.encode("utf-8")))])
    assert not summary.rejected, summary.rejected


@pytest.fixture(scope="module")
def fixture_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("retrieve") / "m.sqlite"
    with Memory.open(path) as memory:
        _import(memory)
    return path


@pytest.fixture
def retriever(fixture_db: Path) -> Iterator[Retriever]:
    with Memory.open(fixture_db, create=False) as memory:
        yield Retriever(memory.store, memory.config)


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Memory]:
    with Memory.open(new_db(tmp_path / "fresh" / "m.sqlite")) as memory:
        yield memory


def refs(page: SearchPage) -> list[str]:
    return [h.id if h.kind == "memory" else f"{h.session_id}:{h.seq}" for h in page.hits]


def matched(page: SearchPage) -> list[str]:
    """The refs of hits that matched the query themselves (not its neighbours)."""
    return [r for r, h in zip(refs(page), page.hits, strict=True) if not h.why.startswith("near:")]


def turns(page: SearchPage) -> set[str]:
    """The events a page points at: event hits, and the sources of memory hits."""
    out = {f"{h.session_id}:{h.seq}" for h in page.hits if h.kind == "event"}
    return out | {f"{s['session_id']}:{s['seq']}" for h in page.hits for s in h.sources or ()}


# -- golden rankings -----------------------------------------------------------------------

GOLDEN_QUERIES: list[dict[str, Any]] = [
    {"query": "what port does the API listen on", "session": "shop-1"},
    {"query": "值班室分机号是多少", "session": "shop-1"},
    {"query": "requests v2.31.5", "session": "shop-1"},
    {"query": "how big may the Redis cache be", "session": "shop-2"},
    {"query": "port 8080", "session": "shop-1", "scope": "global"},
    {"query": "featured recipe", "session": "dag-1"},
]


def _golden_row(page: SearchPage) -> list[dict[str, Any]]:
    return [
        {"ref": ref, "why": hit.why, "pinned": hit.pinned, "score": hit.score}
        for ref, hit in zip(refs(page), page.hits, strict=True)
    ]


def test_golden_rankings_on_the_fixture_sessions(retriever: Retriever) -> None:
    got = {}
    for case in GOLDEN_QUERIES:
        args = {k: v for k, v in case.items() if k != "query"}
        page = retriever.search(case["query"], limit=8, **args)
        assert page.coverage.complete
        got[case["query"]] = _golden_row(page)
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(got, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    assert got == json.loads(GOLDEN.read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", GOLDEN_QUERIES, ids=lambda c: c["query"])
def test_an_item_and_its_source_event_never_take_two_slots(
    retriever: Retriever, case: dict[str, Any]
) -> None:
    args = {k: v for k, v in case.items() if k != "query"}
    page = retriever.search(case["query"], limit=HARD_LIMIT, **args)
    events = {f"{h.session_id}:{h.seq}" for h in page.hits if h.kind == "event"}
    for hit in page.hits:
        if hit.kind == "memory":
            assert hit.sources, hit.id
            assert not events & {f"{s['session_id']}:{s['seq']}" for s in hit.sources}


def test_extraction_keeps_the_turns_a_search_finds(tmp_path: Path) -> None:
    """With extraction on, a page points at every turn it did with extraction off: an
    item takes its source event's slot, and a further item of that event follows the
    ranked events instead of taking another."""
    pages = {}
    for enabled in (False, True):
        config = {"extraction": {"enabled": enabled}}
        with Memory.open(tmp_path / f"{enabled}.sqlite", config=config) as memory:
            _import(memory, ("shop.jsonl",))
            retriever = Retriever(memory.store, memory.config)
            pages[enabled] = [
                retriever.search(c["query"], session="shop-1", limit=10) for c in GOLDEN_QUERIES
            ]
    assert any(h.kind == "memory" for p in pages[True] for h in p.hits)
    for off, on in zip(pages[False], pages[True], strict=True):
        assert turns(off) <= turns(on)


def _long_and_short(memory: Memory) -> None:
    filler = " ".join(f"Step {i}: feed it flour and water, keep it warm." for i in range(30))
    answer = f"A sourdough starter needs care. {filler} That is all a sourdough starter needs."
    _lines(
        memory,
        [
            {"session_id": "b", "seq": 1, "type": "user/message", "role": "user",
             "text": "My sourdough starter is called Bubbles.", "cwd": "/p"},
            {"session_id": "b", "seq": 2, "type": "user/message", "role": "user",
             "text": "How do I keep it alive?", "cwd": "/p"},
            {"session_id": "b", "seq": 3, "type": "user/message", "role": "user",
             "text": answer, "cwd": "/p"},
        ],
    )  # fmt: skip


@pytest.mark.parametrize("b, first", [(0.5, "b:1"), (0.0, "b:3")])
def test_length_normalisation_keeps_a_long_text_from_outranking_the_fact(
    tmp_path: Path, b: float, first: str
) -> None:
    # Same role for all three: only length separates them. With b = 0 the long text,
    # which repeats the words, wins; with the default it ranks under the short turns.
    config = {"extraction": {"enabled": False}, "retrieval": {"bm25B": b}}
    with Memory.open(tmp_path / "m.sqlite", config=config) as memory:
        _long_and_short(memory)
        page = Retriever(memory.store, memory.config).search("sourdough starter")
    assert refs(page)[0] == first


def test_length_normalisation_is_capped(tmp_path: Path) -> None:
    config = {"retrieval": {"lengthPivotChars": 100, "lengthCap": 2.0}}
    with Memory.open(tmp_path / "m.sqlite", config=config) as memory:
        ranking = Retriever(memory.store, memory.config).ranking
    assert ranking.length_norm(50) == pytest.approx(0.75)
    assert ranking.length_norm(200) == ranking.length_norm(10_000) == pytest.approx(1.5)


def test_the_current_api_port_outranks_the_superseded_one(retriever: Retriever) -> None:
    result = retriever.retrieve("shop-1", "what port does the API listen on?")
    items = {item.content: item for item in result.items}
    current = items["the API port is 9090 now."]
    old = items["the API port is 8080."]
    assert old.status == "superseded" and old.superseded_by == current.id
    assert current.score > old.score
    assert result.successors[current.id].content == current.content
    # The evidence behind the selected items comes along, to be quoted verbatim.
    assert any(e.why == f"source:{current.id}" or e.seq == 105 for e in result.evidence)


# -- CJK and short terms ------------------------------------------------------------------


def test_cjk_question_finds_the_extension_note(retriever: Retriever) -> None:
    page = retriever.search("值班室分机号是多少", session="shop-1")
    top = page.hits[:3]
    item = next(h for h in top if h.kind == "memory" and "值班室分机号 4324" in h.snippet)
    # The turn the note came from is folded under it: named, not given a slot of its own.
    assert item.sources == [{"session_id": "shop-1", "seq": 93}]
    assert "shop-1:93" not in refs(page)
    assert all(h.why == "word:值班室分机号" for h in page.hits[:5] if not h.why.startswith("near:"))
    assert sum(h.why == "word:值班室分机号" for h in page.hits[:5]) >= 3


def test_two_character_terms_are_found(fresh: Memory) -> None:
    _lines(
        fresh,
        [
            {"session_id": "t", "seq": 1, "type": "user/message", "role": "user",
             "text": "测试环境的端口是 5433", "cwd": "/p"},
            {"session_id": "t", "seq": 2, "type": "user/message", "role": "user",
             "text": "we go live on Monday", "cwd": "/p"},
            {"session_id": "t", "seq": 3, "type": "user/message", "role": "user",
             "text": "going home, good night", "cwd": "/p"},
        ],
    )  # fmt: skip
    retriever = Retriever(fresh.store, fresh.config)
    assert matched(retriever.search("端口", session="t")) == ["t:1"]
    # A two-letter word is a whole word: "go" is not "going" or "good".
    assert matched(retriever.search("go", session="t")) == ["t:2"]


def test_billing_prefers_the_whole_word_over_a_longer_one(fresh: Memory) -> None:
    _lines(
        fresh,
        [
            {"session_id": "b", "seq": 1, "type": "user/message", "role": "user",
             "text": "billing2服务 的端口是 8444", "cwd": "/p"},
            {"session_id": "b", "seq": 2, "type": "user/message", "role": "user",
             "text": "billing服务 的端口是 8443", "cwd": "/p"},
        ],
    )  # fmt: skip
    page = Retriever(fresh.store, fresh.config).search("billing 端口", session="b")
    assert refs(page)[:2] == ["b:2", "b:1"]


def _user(session: str, seq: int, text: str, role: str = "user") -> dict[str, Any]:
    return {"session_id": session, "seq": seq, "type": f"{role}/message", "role": role,
            "text": text, "cwd": "/p"}  # fmt: skip


def test_a_word_that_only_begins_like_the_query_word_counts_part(fresh: Memory) -> None:
    # Snowball stems: "painting" is a spelling of "painted", "painter" another word.
    _lines(fresh, [_user("p", 1, "my painter friend came over"),
                   _user("p", 9, "I love painting landscapes")])  # fmt: skip
    painter = []
    for weight in (0.0, 0.5, 1.0):
        config = validate_config({"retrieval": {"prefixMatchWeight": weight}})
        page = Retriever(fresh.store, config).search("what had she painted", session="p")
        assert refs(page) == ["p:9", "p:1"] and page.hits[0].why == "word:painted"
        painter.append(page.hits[1].score)
    assert painter[0] < painter[1] < painter[2]
    default = Retriever(fresh.store, fresh.config).search("what had she painted", session="p")
    assert default.hits[1].score == painter[1]


def test_an_irregular_form_finds_its_word(fresh: Memory) -> None:
    _lines(fresh, [_user("m", 1, "We met at a pottery class in college"),
                   _user("m", 5, "the weather is fine")])  # fmt: skip
    retriever = Retriever(fresh.store, fresh.config)
    assert matched(retriever.search("how did they first meet", session="m")) == ["m:1"]
    assert matched(retriever.search("children", session="m")) == []


def test_a_search_hit_brings_its_neighbours_weighed_by_their_role(fresh: Memory) -> None:
    question = "which port does the billing service use?"
    _lines(fresh, [_user("u", 1, question), _user("u", 2, "It is 9090 since Monday."),
                   _user("a", 1, question),
                   _user("a", 2, "It is 9090 since Monday.", role="assistant")])  # fmt: skip
    page = Retriever(fresh.store, fresh.config).search("billing port", scope="global")
    why = {r: h.why for r, h in zip(refs(page), page.hits, strict=True)}
    assert why["u:2"] == "near:u:1" and why["a:2"] == "near:a:1"
    score = {r: h.score for r, h in zip(refs(page), page.hits, strict=True)}
    # Same hit, same share: the assistant's reply receives less (its pull-path weight).
    assert score["u:2"] > score["a:2"]
    even = validate_config(
        {"retrieval": {"roleWeights": {"user": 1.0}, "searchAssistantWeight": 1.0}}
    )
    page = Retriever(fresh.store, even).search("billing port", scope="global")
    score = {r: h.score for r, h in zip(refs(page), page.hits, strict=True)}
    assert score["u:2"] == pytest.approx(score["a:2"])
    # Under --match all every hit holds every term: no neighbours.
    page = Retriever(fresh.store, fresh.config).search("billing port", scope="global", match="all")
    assert sorted(refs(page)) == ["a:1", "u:1"]


def test_the_event_one_step_further_receives_far_spread_of_the_share(fresh: Memory) -> None:
    _lines(fresh, [_user("f", 1, "morning"), _user("f", 2, "quick question"),
                   _user("f", 3, "which port does the billing service use?"),
                   _user("f", 4, "let me look"), _user("f", 5, "It is 9090 since Monday."),
                   _user("f", 6, "thanks"), _user("f", 7, "bye")])  # fmt: skip
    page = Retriever(fresh.store, fresh.config).search("billing port", session="f")
    why = {r: h.why for r, h in zip(refs(page), page.hits, strict=True)}
    assert {r: w for r, w in why.items() if r != "f:3"} == {
        r: "near:f:3" for r in ("f:1", "f:2", "f:4", "f:5")
    }
    score = {r: h.score for r, h in zip(refs(page), page.hits, strict=True)}
    # The hit scores B x (1 + sessionWeight 0.5); every neighbour gets 0.5 B from the
    # session and its share of B: 0.6 next, 0.3 after it, 0.3 before, 0.15 before that.
    hit = score["f:3"] / 1.5
    assert score["f:4"] - score["f:5"] == pytest.approx(0.3 * hit, abs=1e-3)
    assert score["f:2"] - score["f:1"] == pytest.approx(0.15 * hit, abs=1e-3)
    near = validate_config({"retrieval": {"farSpread": 0.0}})
    page = Retriever(fresh.store, near).search("billing port", session="f")
    assert sorted(refs(page)) == ["f:2", "f:3", "f:4"]


def test_the_far_neighbour_follows_the_active_path(fresh: Memory) -> None:
    texts = [
        "which port does the billing service use?",
        "let me look",
        "abandoned guess",
        "It is 9090 since Monday.",
        "thanks",
    ]
    parents = [None, "e1", "e2", "e2", "e4"]
    pairs = enumerate(zip(texts, parents, strict=True))
    _lines(fresh, [dict(_user("br", i + 1, t), entry_id=f"e{i + 1}", parent_id=parent)
                   for i, (t, parent) in pairs])  # fmt: skip
    page = Retriever(fresh.store, fresh.config).search("billing port", session="br")
    # Along the path the second step after the question is seq 4, not the abandoned 3.
    assert refs(page) == ["br:1", "br:2", "br:4"]


# -- pinning ----------------------------------------------------------------------------


def test_exact_symbols_pin_above_everything_else(retriever: Retriever) -> None:
    page = retriever.search("which process holds port 8080", session="shop-1", limit=50)
    pinned = [h.pinned for h in page.hits]
    assert pinned[0] and pinned == sorted(pinned, reverse=True)
    for hit in page.hits:
        if hit.pinned:
            assert hit.why == "exact:8080"
    # Pinned hits are ordered among themselves by score.
    scores = [h.score for h in page.hits if h.pinned]
    assert scores == sorted(scores, reverse=True)


def test_a_lone_digit_never_pins(fresh: Memory) -> None:
    _lines(
        fresh,
        [
            {"session_id": "z", "seq": 1, "type": "user/message", "role": "user",
             "text": "0 errors in the billing0 run", "cwd": "/p"},
            {"session_id": "z", "seq": 2, "type": "user/message", "role": "user",
             "text": "port 18080 is not port 8080", "cwd": "/p"},
            {"session_id": "z", "seq": 3, "type": "user/message", "role": "user",
             "text": "the service listens on 80800", "cwd": "/p"},
        ],
    )  # fmt: skip
    retriever = Retriever(fresh.store, fresh.config)
    page = retriever.search("0 errors", session="z")
    assert not any(h.pinned for h in page.hits)
    # A number pins only where it stands alone, not inside a longer number.
    page = retriever.search("8080", session="z")
    assert (refs(page)[0], page.hits[0].pinned) == ("z:2", True)
    assert all(not h.pinned for r, h in zip(refs(page), page.hits, strict=True) if r == "z:3")


def test_a_version_pins_with_or_without_its_v(retriever: Retriever) -> None:
    page = retriever.search("requests v2.31.5", session="shop-1", scope="session")
    pinned = [r for r, h in zip(refs(page), page.hits, strict=True) if h.pinned]
    assert "shop-1:53" in pinned  # pyproject.toml: "requests==2.31.5"


# -- negative controls and scopes -------------------------------------------------------------


def test_an_absent_term_is_an_authoritative_empty_result(retriever: Retriever) -> None:
    # Every term long enough for the trigram index (a two-digit `77` would not be: see
    # test_a_short_query_never_claims_an_authoritative_empty).
    for query in ("quokka", "zzqx unheard-of-symbol-777", "完全没有的词语"):
        page = retriever.search(query, scope="global")
        assert page.total == 0 and page.hits == [] and page.next is None
        assert page.coverage.complete and page.coverage.reasons == []


def test_a_query_with_no_usable_term_is_empty_not_an_error(retriever: Retriever) -> None:
    for query in ("", "   ", "\x00"):  # nothing asked (NUL is removed first)
        page = retriever.search(query)
        assert page.total == 0 and page.coverage.complete
    # Text the index could not look up at all: empty, but absence is no proof.
    for query in ('"', "()*:^"):
        page = retriever.search(query)
        assert page.total == 0 and page.coverage.reasons == ["short_terms"]
    assert retriever.search("NEAR(").coverage.complete  # `near` is a word


def test_a_short_query_never_claims_an_authoritative_empty(fresh: Memory) -> None:
    _lines(fresh, [_user("s", 1, "db is down (see ui)\nset x to 5, ok")])
    retriever = Retriever(fresh.store, fresh.config)
    for query in ("x", "5", "db", "ui", "ok", "a", "set x"):
        page = retriever.search(query, scope="global")
        assert page.coverage.reasons == ["short_terms"], query
    for query in ("to", "set", "down"):  # found, or looked up in full
        page = retriever.search(query, scope="global")
        assert page.total == 1 and page.coverage.complete, query


def test_project_scope_keeps_other_projects_out(retriever: Retriever) -> None:
    # "Hugo" is only in the blog project.
    assert retriever.search("Hugo", session="shop-1").total == 0
    assert retriever.search("Hugo", session="shop-1", scope="global").total > 0
    project = retriever.search("port 8080", session="shop-1")
    assert {h.session_id for h in project.hits} <= {"shop-1", "shop-2"}
    one = retriever.search("port", scope="session:shop-2")
    assert {h.session_id for h in one.hits} == {"shop-2"}


def test_bad_scopes_and_sessions_are_usage_errors(retriever: Retriever) -> None:
    with pytest.raises(ValidationError, match="needs --session"):
        retriever.search("port", scope="project")
    with pytest.raises(NotFound, match="no session 'nope'"):
        retriever.search("port", session="nope")
    with pytest.raises(ValidationError, match="--scope must be"):
        retriever.search("port", scope="planet")
    with pytest.raises(ValidationError, match="unknown role"):
        retriever.search("port", role="robot")
    with pytest.raises(ValidationError, match="ISO-8601"):
        retriever.search("port", since="last tuesday")


# -- filters ----------------------------------------------------------------------------


def test_structural_filters(retriever: Retriever) -> None:
    failed = retriever.search("exit", scope="global", role="tool", outcome="failed", limit=50)
    assert {"shop-1:36", "shop-1:56"} <= set(refs(failed))
    assert {h.outcome for h in failed.hits} == {"failed"} and {h.role for h in failed.hits} == {
        "tool"
    }
    assert all(h.kind == "event" for h in failed.hits)
    calls = retriever.search("pytest", scope="global", type="tool/call", tool="bash")
    assert calls.hits and {h.type for h in calls.hits} == {"tool/call"}
    late = retriever.search("port", session="shop-1", since="2026-03-02T13:00:00Z", limit=50)
    assert late.hits and all(h.time and h.time >= "2026-03-02T13:00:00Z" for h in late.hits)
    early = retriever.search("port", session="shop-1", until="2026-03-02", limit=50)
    assert early.total == 0


def test_thinking_and_memplugs_own_injections_are_not_searched(retriever: Retriever) -> None:
    # seq 4 is assistant/thinking; seq 99 is memplug's own injected evidence.
    page = retriever.search("repo layout pyproject dependencies", session="shop-1", limit=100)
    assert "shop-1:4" not in refs(page)
    page = retriever.search("[memplug] Memory evidence", session="shop-1", limit=100)
    assert "shop-1:99" not in refs(page)


def test_generated_text_is_never_evidence(retriever: Retriever) -> None:
    result = retriever.retrieve("shop-1", "Summary of the conversation so far checkout")
    assert all(not e.generated for e in result.evidence)
    assert 96 not in {e.seq for e in result.evidence}


# -- branches -------------------------------------------------------------------------------


def test_active_branch_hides_the_abandoned_one(retriever: Retriever) -> None:
    active = retriever.search("zucchini", session="dag-1")
    assert active.total == 0 and active.coverage.complete
    every = retriever.search("zucchini", session="dag-1", branches="all")
    assert {"dag-1:5", "dag-1:9"} <= turns(every)
    assert "mem_dag1_" in " ".join(h.id or "" for h in every.hits)
    assert retriever.search("pumpkin", session="dag-1").total > 0
    # The common prefix before the fork is on the active path.
    assert "dag-1:1" in refs(retriever.search("tomato soup", session="dag-1"))


def test_a_parent_cycle_stops_the_walk_and_is_reported(fresh: Memory) -> None:
    _lines(
        fresh,
        [
            {"session_id": "c", "seq": 1, "type": "user/message", "role": "user",
             "text": "alpha kiwi", "entry_id": "a", "parent_id": "c", "cwd": "/p"},
            {"session_id": "c", "seq": 2, "type": "user/message", "role": "user",
             "text": "beta kiwi", "entry_id": "b", "parent_id": "a", "cwd": "/p"},
            {"session_id": "c", "seq": 3, "type": "user/message", "role": "user",
             "text": "gamma kiwi", "entry_id": "c", "parent_id": "b", "cwd": "/p"},
        ],
    )  # fmt: skip
    page = Retriever(fresh.store, fresh.config).search("kiwi", session="c")
    assert not page.coverage.complete and page.coverage.reasons == ["parent_cycle"]
    assert sorted(refs(page)) == ["c:1", "c:2", "c:3"]


def test_active_path_walks_from_the_last_entry() -> None:
    rows = [
        BranchRow(1, 1, "e1", None),
        BranchRow(2, 2, "e2", "e1"),
        BranchRow(3, 3, "e3", "e2"),
        BranchRow(4, 4, "e4", "e1"),
        BranchRow(5, 5, None, None),
    ]
    assert active_path(rows) == ([1, 4, 5], False)
    assert active_path([BranchRow(1, 1, None, None)]) == ([], False)


# -- coverage -------------------------------------------------------------------------------


def _one_big_event(memory: Memory) -> None:
    """A session whose one event is over the text cap: "zebrafinch" only in its tail."""
    big = "kingfisher " + "x " * 15_000 + " zebrafinch"
    _lines(
        memory,
        [{"session_id": "big", "seq": 1, "type": "user/message", "role": "user", "text": big,
          "cwd": "/p"}],
    )  # fmt: skip


def test_truncated_events_make_coverage_incomplete(fresh: Memory) -> None:
    _one_big_event(fresh)
    page = Retriever(fresh.store, fresh.config).search("zebrafinch", session="big")
    assert page.total == 0
    assert not page.coverage.complete and "truncated_events" in page.coverage.reasons


def test_a_truncated_event_taints_only_queries_it_could_have_matched(fresh: Memory) -> None:
    _one_big_event(fresh)
    retriever = Retriever(fresh.store, fresh.config)
    for query in ("xyzzy frobnicate", "kingfisher"):
        page = retriever.search(query, session="big")
        assert page.coverage.complete, (query, page.coverage)
    # A regex could match anything in the unindexed tail.
    page = retriever.search("nothing.*here", session="big", mode="regex")
    assert "truncated_events" in page.coverage.reasons


def test_the_candidate_budget_is_reported(fresh: Memory) -> None:
    _lines(
        fresh,
        [
            {"session_id": "m", "seq": i, "type": "user/message", "role": "user",
             "text": f"deploy number {i}", "cwd": "/p"}
            for i in range(1, 61)
        ],
    )  # fmt: skip
    retriever = Retriever(fresh.store, fresh.config)
    retriever.ranking = replace(
        retriever.ranking, config=replace(retriever.ranking.config, candidate_budget=10)
    )
    page = retriever.search("deploy", session="m")
    assert "candidate_budget" in page.coverage.reasons and not page.coverage.complete
    roomy = Retriever(fresh.store, fresh.config).search("deploy", session="m")
    assert roomy.coverage.complete and roomy.total == 60


def test_the_like_scan_window_is_reported(fresh: Memory) -> None:
    events = [
        {"session_id": "w", "seq": i, "type": "user/message", "role": "user",
         "text": "端口 old" if i == 1 else f"filler {i}", "cwd": "/p"}
        for i in range(1, 41)
    ]  # fmt: skip
    _lines(fresh, events)
    retriever = Retriever(fresh.store, fresh.config)
    retriever.ranking = replace(retriever.ranking, like_scan_rows=10)
    page = retriever.search("端口", session="w")
    assert page.total == 0 and page.coverage.reasons == ["like_scan_window"]
    assert matched(Retriever(fresh.store, fresh.config).search("端口", session="w")) == ["w:1"]


# -- modes ---------------------------------------------------------------------------------


def test_phrase_mode_needs_the_words_together(retriever: Retriever) -> None:
    phrase = retriever.search("partial index", session="shop-1", mode="phrase", limit=50)
    assert phrase.hits and all("partial index" in h.snippet.lower() for h in phrase.hits)
    loose = retriever.search("partial index", session="shop-1", limit=50)
    assert loose.total > phrase.total


def test_match_all_requires_every_term(retriever: Retriever) -> None:
    page = retriever.search("redis session cache", session="shop-1", match="all", limit=50)
    assert page.hits
    for hit in page.hits:
        expanded = retriever.expand(hit.follow)
        text = (expanded.item or {}).get("content") or expanded.events[0].text
        text = text.lower()
        assert "redis" in text and "session" in text and "cache" in text
    assert retriever.search("redis zucchini", scope="global", match="all").total == 0


def test_regex_mode_is_bounded_and_reports_time_outs(fresh: Memory) -> None:
    _lines(
        fresh,
        [{"session_id": "r", "seq": i, "type": "user/message", "role": "user",
          "text": "a" * 40 + "b", "cwd": "/p"} for i in range(1, 4)],
    )  # fmt: skip
    retriever = Retriever(fresh.store, fresh.config)
    ok = retriever.search(r"a{40}b", mode="regex", session="r")
    assert ok.total == 3 and ok.coverage.complete and ok.hits[0].why == "regex"
    bomb = retriever.search(r"(a|aa)+$", mode="regex", session="r")
    assert not bomb.coverage.complete and bomb.coverage.reasons == ["regex_timeout"]
    with pytest.raises(ValidationError, match="invalid regular expression"):
        retriever.search("(", mode="regex")
    with pytest.raises(ValidationError, match="the limit is"):
        retriever.search("a" * 5000, mode="regex")


# -- paging and snapshots ----------------------------------------------------------------


def test_pages_are_disjoint_and_pinned_to_their_snapshot(fresh: Memory) -> None:
    _import(fresh, ("shop.jsonl",))
    retriever = Retriever(fresh.store, fresh.config)
    whole = retriever.search("port", session="shop-1", limit=100)
    first = retriever.search("port", session="shop-1", limit=7)
    assert first.total == whole.total and first.next is not None
    # Appends after the first page must not shift the next one.
    _lines(
        fresh,
        [{"session_id": "shop-1", "seq": 500 + i, "type": "user/message", "role": "user",
          "text": f"port {9000 + i} is the new port", "cwd": "/home/ana/shop"} for i in range(5)],
    )  # fmt: skip
    seen = refs(first)
    page = first
    while page.next is not None:
        page = retriever.page(page.next)
        assert page.total == whole.total
        seen += refs(page)
    assert seen == refs(whole)
    assert decode_token(first.next)["op"] == "search"


def test_a_purged_target_is_a_stale_pointer(fresh: Memory) -> None:
    _import(fresh, ("shop.jsonl", "shop2.jsonl"))
    retriever = Retriever(fresh.store, fresh.config)
    page = retriever.search("port", session="shop-2", scope="session", limit=2)
    assert page.next is not None and page.hits
    follow = page.hits[0].follow
    purge(fresh, sessions=["shop-2"])
    stale = retriever.page(page.next)
    assert stale.hits == [] and stale.coverage.reasons == ["stale_pointer"]
    assert stale.coverage.error is not None and stale.coverage.error.code == "stale_pointer"
    gone = retriever.expand(follow)
    assert gone.coverage.error is not None and gone.coverage.error.code == "stale_pointer"


def test_tokens_are_validated() -> None:
    assert decode_token(encode_token({"op": "x", "n": 1})) == {"op": "x", "n": 1}
    for bad in ("", "mp1.", "mp1.!!!", "mp2.e30", "mp1." + "A" * 30_000, "mp1.bnVsbA"):
        with pytest.raises(ValidationError):
            decode_token(bad)


# -- expand --------------------------------------------------------------------------------


def test_expand_gives_context_around_a_hit(retriever: Retriever) -> None:
    hit = retriever.search("值班室分机号", session="shop-1", scope="session").hits
    event_hit = next(h for h in hit if h.kind == "event" and h.seq == 94)
    result = retriever.expand(event_hit.follow, before=1, after=1)
    assert [e.seq for e in result.events] == [93, 94, 95]
    assert [e.anchor for e in result.events] == [False, True, False]
    assert result.events[1].text_range.complete and "4324" in result.events[1].text
    by_ref = retriever.expand("shop-1:93", before=1, after=1)
    assert [e.seq for e in by_ref.events] == [92, 93, 94]


def test_expand_on_a_memory_item_shows_its_sources(retriever: Retriever) -> None:
    page = retriever.search("值班室分机号是多少", session="shop-1")
    item = next(h for h in page.hits if h.kind == "memory")
    result = retriever.expand(item.follow)
    assert result.item is not None and result.item["id"] == item.id
    assert [f"{e.session_id}:{e.seq}" for e in result.events] == ["shop-1:93"]


def test_expand_follows_the_active_branch(retriever: Retriever) -> None:
    path = retriever.expand("dag-1:11", before=2, after=1, branches="active")
    assert [e.seq for e in path.events] == [3, 4, 11, 12]  # e11's parent is e4, not e10
    off = retriever.expand("dag-1:9", branches="active")
    assert off.coverage.error is not None and off.coverage.error.code == "address_not_found"
    assert [e.seq for e in retriever.expand("dag-1:9", branches="all").events] == [9]


def test_expand_rebuilds_a_100_kb_event_exactly(fresh: Memory) -> None:
    body = "".join(f"line {i:05d}: 值班 α β γ — {'z' * (i % 37)}\n" for i in range(2600))
    body = body.strip()
    assert len(body.encode("utf-8")) > 100_000
    _lines(
        fresh,
        [
            {"session_id": "long", "seq": 1, "type": "user/message", "role": "user",
             "text": "before", "cwd": "/p"},
            {"session_id": "long", "seq": 2, "type": "tool/result", "role": "tool",
             "tool_name": "bash", "text": body, "cwd": "/p"},
            {"session_id": "long", "seq": 3, "type": "user/message", "role": "user",
             "text": "after", "cwd": "/p"},
        ],
    )  # fmt: skip
    retriever = Retriever(fresh.store, fresh.config)
    result = retriever.expand("long:2", before=1, after=1)
    pieces: dict[int, list[str]] = {}
    ranges = []
    while True:
        for event in result.events:
            pieces.setdefault(event.seq, []).append(event.text)
            if event.seq == 2:
                ranges.append(event.text_range)
        if result.next is None:
            break
        result = retriever.expand(result.next)
    assert "".join(pieces[2]) == fresh.store.events.full_text(fresh.store.events.get("long", 2))
    assert "".join(pieces[1]) == "before" and "".join(pieces[3]) == "after"
    assert len(ranges) > 1 and not ranges[0].complete
    assert ranges[-1].end == ranges[-1].total and ranges[0].start == 0
    assert all(a.end == b.start for a, b in itertools.pairwise(ranges))


def test_expand_rejects_bad_targets(retriever: Retriever) -> None:
    with pytest.raises(ValidationError):
        retriever.expand("not a ref")
    with pytest.raises(NotFound):
        retriever.expand("shop-1:99999")
    with pytest.raises(NotFound):
        retriever.expand("mem_nothing_0000")
    with pytest.raises(ValidationError, match="must not be negative"):
        retriever.expand("shop-1:2", before=-1)


# -- determinism and limits ---------------------------------------------------------------------


def test_same_events_same_ranking_in_two_databases(tmp_path: Path) -> None:
    pages = []
    for name, order in (("a", FIXTURE_FILES), ("b", tuple(reversed(FIXTURE_FILES)))):
        with Memory.open(tmp_path / name / "m.sqlite") as memory:
            _import(memory, order)
            page = Retriever(memory.store, memory.config).search(
                "port cache 8080 值班室", scope="global", limit=40
            )
            pages.append([(h.kind, h.session_id, h.seq, h.id, h.score, h.why) for h in page.hits])
    assert pages[0] == pages[1]


def test_limit_is_capped(retriever: Retriever) -> None:
    page = retriever.search("the", scope="global", limit=10_000)
    assert len(page.hits) <= HARD_LIMIT
    with pytest.raises(ValidationError):
        retriever.search("port", limit=0)


def test_retrieve_for_an_unknown_session_is_empty(retriever: Retriever) -> None:
    result = retriever.retrieve("never-seen", "what port")
    assert result.items == () and result.evidence == ()
    assert result.coverage.complete and result.coverage.reasons == ["unknown_session"]


def test_retrieve_omits_with_reasons(retriever: Retriever) -> None:
    result = retriever.retrieve("shop-1", "port cache redis checkout", limit=3)
    assert len(result.items) <= 3
    reasons = {o.reason for o in result.omitted}
    assert reasons <= {"below min score", "over limit", "generated source"}
    assert "over limit" in reasons


# -- hostile input -------------------------------------------------------------------------------

HOSTILE = st.one_of(
    st.text(max_size=200),
    st.lists(
        st.sampled_from(['"', "AND", "OR", "NOT", "NEAR(", "*", ":", "^", "(", ")", "'", "\\",
                         "%", "_", "\x00", "端口", "8080", "v2.31.5", "go", "col:x", "-"]),
        max_size=30,
    ).map(" ".join),
    st.text(alphabet="(a|+*?)[]{}\\$^.", max_size=40),
)  # fmt: skip


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(query=HOSTILE, mode=st.sampled_from(["literal", "phrase", "regex"]))
def test_hostile_queries_never_raise_beyond_validation(
    retriever: Retriever, query: str, mode: str
) -> None:
    try:
        page = retriever.search(query, mode=mode, scope="global", limit=5)
    except ValidationError:
        assert mode == "regex"
        return
    except MemplugError as error:  # pragma: no cover - the assertion names the leak
        raise AssertionError(f"unexpected error for {query!r}: {error}") from error
    assert page.total >= len(page.hits)
    if page.total == 0 and mode != "regex":
        # Complete, unless the index could not look up a short term (short_terms).
        assert page.coverage.complete or page.coverage.reasons == ["short_terms"]


def test_a_ten_kilobyte_query(retriever: Retriever) -> None:
    query = ("port 8080 " + '"NEAR(' + "值班室 " * 50) * 60
    page = retriever.search(query[:10_240], scope="global")
    assert page.hits[0].pinned and page.hits[0].why == "exact:8080"


def test_a_purge_under_a_global_search_is_a_stale_pointer(fresh: Memory) -> None:
    _import(fresh, ("shop.jsonl", "other_project.jsonl"))
    retriever = Retriever(fresh.store, fresh.config)
    first = retriever.search("port 8080", scope="global", limit=3)
    assert first.next is not None
    assert retriever.page(first.next).coverage.complete  # untouched: the next page is fine
    purge(fresh, sessions=["shop-1"])  # the hits already handed out came from shop-1
    stale = retriever.page(first.next)
    assert stale.hits == [] and stale.coverage.reasons == ["stale_pointer"]


def test_ranking_weights_are_read_from_config(fixture_db: Path) -> None:
    """The neighbour spread is a config weight: switched off, no neighbour joins."""
    question = "Is the Stripe key in yet? Check the staging env file."
    with Memory.open(fixture_db, create=False) as memory:
        default = Retriever(memory.store, memory.config).retrieve("shop-1", question)
    no_spread = {"retrieval": {"nextSpread": 0.0, "prevSpread": 0.0}}
    with Memory.open(fixture_db, create=False, config=no_spread) as memory:
        spread_off = Retriever(memory.store, memory.config).retrieve("shop-1", question)
    assert any(e.why.startswith("near:") for e in default.evidence)
    assert not any(e.why.startswith("near:") for e in spread_off.evidence)


def test_a_hit_s_follow_opens_a_long_event_at_the_match(fresh: Memory) -> None:
    log = "line of build output\n" * 300 + "ERROR zanzibar_quota exceeded in step 7\n"
    log += "more output\n" * 200
    _lines(
        fresh,
        [{"session_id": "s", "seq": 1, "type": "tool/call", "role": "assistant",
          "text": "make build", "cwd": "/p"},
         {"session_id": "s", "seq": 2, "type": "tool/result", "role": "tool",
          "text": log, "cwd": "/p"}],
    )  # fmt: skip
    retriever = Retriever(fresh.store, fresh.config)
    hit = retriever.search("zanzibar_quota", session="s").hits[0]
    shown = retriever.expand(hit.follow).events[0]
    at = log.index("zanzibar_quota")
    # From a little before the match, not from the top of a 9,000-character log.
    assert 0 < shown.text_range.start < at < shown.text_range.end < len(log)
    assert shown.text_range.end - shown.text_range.start <= FOLLOW_CHARS
    # SESSION:SEQ still reads it from the start, and the chunk's next reads on.
    assert retriever.expand("s:2").events[0].text_range.start == 0
    chunk = retriever.expand(hit.follow)
    assert chunk.next is not None
    assert retriever.expand(chunk.next).events[0].text_range.start == shown.text_range.end
    # Asked for the events before it, the window opens at its first event, whole.
    window = retriever.expand(hit.follow, before=1).events
    assert [e.seq for e in window] == [1, 2] and window[1].text_range.start == 0


def test_a_turn_gets_the_larger_window_and_a_short_one_is_read_whole(fresh: Memory) -> None:
    short = "we settled on the quokka_cache layer, " + "and more reasoning " * 120 + "done."
    long = "a long summary paragraph. " * 300 + "decided: quokka_queue stays on redis. "
    long += "further notes. " * 300
    assert FOLLOW_CHARS < len(short) <= FOLLOW_TURN_CHARS < len(long)
    _lines(
        fresh,
        [{"session_id": "s", "seq": 1, "type": "user/message", "role": "user",
          "text": short, "cwd": "/p"},
         {"session_id": "s", "seq": 2, "type": "assistant/message", "role": "assistant",
          "text": long, "cwd": "/p"}],
    )  # fmt: skip
    retriever = Retriever(fresh.store, fresh.config)
    short_hit = retriever.search("quokka_cache", session="s").hits[0]
    whole = retriever.expand(short_hit.follow).events[0]
    assert (whole.text_range.start, whole.text_range.end) == (0, len(short))
    long_hit = retriever.search("quokka_queue", session="s").hits[0]
    shown = retriever.expand(long_hit.follow).events[0]
    at = long.index("quokka_queue")
    assert 0 < shown.text_range.start < at < shown.text_range.end
    assert FOLLOW_CHARS < shown.text_range.end - shown.text_range.start <= FOLLOW_TURN_CHARS


def test_a_long_event_s_hit_names_where_it_opens_and_that_ref_reads_the_same(
    fresh: Memory,
) -> None:
    log = "line of build output\n" * 300 + "ERROR zanzibar_quota exceeded in step 7\n"
    log += "more output\n" * 200
    _lines(
        fresh,
        [{"session_id": "s", "seq": 1, "type": "tool/result", "role": "tool",
          "text": log, "cwd": "/p"},
         {"session_id": "s", "seq": 2, "type": "user/message", "role": "user",
          "text": "is zanzibar_quota ours?", "cwd": "/p"}],
    )  # fmt: skip
    retriever = Retriever(fresh.store, fresh.config)
    hits = {h.seq: h for h in retriever.search("zanzibar_quota", session="s").hits}
    assert hits[2].opens_at is None  # a short turn is read whole
    at = hits[1].opens_at
    assert at is not None and 0 < at < log.index("zanzibar_quota")
    by_token = retriever.expand(hits[1].follow)
    by_ref = retriever.expand(f"s:1@{at}")
    assert by_ref.events[0].text == by_token.events[0].text
    assert by_ref.events[0].text_range == by_token.events[0].text_range
    assert by_ref.next is not None
    # The caller may ask for less than the window, never more.
    assert len(retriever.expand(f"s:1@{at}", max_chars=100).events[0].text) == 100


def test_a_page_token_carries_only_what_differs_from_the_defaults(retriever: Retriever) -> None:
    page = retriever.search("port", scope="global", limit=2)
    assert page.next is not None
    args = decode_token(page.next)["a"]
    assert args == {"query": "port", "scope": "global", "limit": 2}
    again = retriever.search("port", scope="global", limit=4)
    assert refs(retriever.page(page.next)) == refs(again)[2:4]
