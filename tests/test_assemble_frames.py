"""More evidence per token: query-focused quotes of long events and the line frame a
group's heading says once (memplug.recall.assemble.focus, sections/evidence.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from msgspec.structs import replace

from memplug.memory import Memory
from memplug.recall.assemble import AssemblyRequest, cited_refs
from memplug.recall.assemble.focus import ELLIPSIS, FOCUS_MIN_SAVED, focused
from memplug.recall.query import parse_query
from memplug.recall.retrieve.ranking import Ranking
from memplug.recall.retrieve.strength import QueryTerms


def _terms(query: str, df: dict[str, float]) -> QueryTerms:
    return QueryTerms(parse_query(query), df, 1000.0, Ranking())


FILLER = (
    "We talked about the weather for a while and nothing else came of it that day. "
    "Then the kids wanted pancakes, so breakfast took most of the morning again. "
)
LONG = (
    "Melanie: Hey Caroline, long time no see! "
    + FILLER
    + "I ran a charity race for mental health last Saturday. "
    + FILLER
    + "Anyway, how are you?"
)


def test_a_long_event_is_quoted_by_the_sentences_that_hold_the_query() -> None:
    terms = _terms(
        "when did melanie run the charity race", {"chariti": 2, "race": 3, "melani": 400}
    )
    out = focused(LONG, terms, FOCUS_MIN_SAVED)
    # The speaker's label stays; what was left out is marked at each cut.
    assert out == (
        f"Melanie: {ELLIPSIS} I ran a charity race for mental health last Saturday. {ELLIPSIS}"
    )
    # Nothing of the query in it: the event is quoted as it is (and head-cut as before).
    assert focused(LONG, _terms("stripe key", {"stripe": 3, "key": 9}), FOCUS_MIN_SAVED) == LONG
    # A cut that saves little is not worth the "…": the whole text stays.
    short = "Melanie: I ran a charity race. It was fun."
    assert focused(short, terms, FOCUS_MIN_SAVED) == short
    assert focused(LONG, None, FOCUS_MIN_SAVED) == LONG


def test_cjk_sentences_are_cut_at_their_own_stops_and_kept_as_written() -> None:
    terms = _terms("值班室 分机号", {"值班室": 2, "分机号": 2})
    text = (
        "记住：今天天气很好，我们下午去公园散步，顺便买些水果和面包回来当晚饭。"
        "值班室分机号 4324。"
        "还有，不要在周五下午部署，也不要在周末发布任何新版本，等周一大家都在再说。"
    )
    assert focused(text, terms, 20) == f"记住： {ELLIPSIS} 值班室分机号 4324。 {ELLIPSIS}"


_WORDS = st.sampled_from(["race", "charity", "pancakes", "weather", "Melanie:", "ran", "kids"])
_SENTENCE = st.lists(_WORDS, min_size=1, max_size=12).map(" ".join).map(lambda s: s + ".")


@given(st.lists(_SENTENCE, min_size=1, max_size=12).map(" ".join))
def test_a_focused_quote_is_the_text_or_its_own_sentences_in_order(text: str) -> None:
    terms = _terms("charity race", {"chariti": 2, "race": 3})
    out = focused(text, terms, FOCUS_MIN_SAVED)
    assert focused(text, terms, FOCUS_MIN_SAVED) == out  # deterministic
    if out == text:
        return
    assert len(text) - len(out) >= FOCUS_MIN_SAVED
    # Every kept run is verbatim and in the order of the text.
    at = 0
    for part in (p.strip() for p in out.split(ELLIPSIS)):
        if part:
            at = text.index(part, at) + len(part)
    assert "race" in out.lower() or "charity" in out.lower()


def _memory(tmp_path: Path, events: list[dict[str, object]]) -> Memory:
    memory = Memory.open(tmp_path / "m.sqlite")
    data = "\n".join(json.dumps(e) for e in events) + "\n"
    memory.import_jsonl([("-", io.BytesIO(data.encode()))])
    return memory


def _turn(session: str, seq: int, text: str, time: str, role: str = "user") -> dict[str, object]:
    return {"session_id": session, "seq": seq, "type": f"{role}/message", "role": role,
            "text": text, "time": time, "cwd": "/p"}  # fmt: skip


def test_a_groups_shared_role_and_minute_are_said_once_in_its_heading(tmp_path: Path) -> None:
    at = "2026-05-08T13:14:00Z"
    events = [
        _turn("chat", 1, "Caroline: Did you hear about the charity race?", at),
        _turn("chat", 2, "Melanie: Yes, I ran the charity race on Saturday.", at),
        _turn("chat", 3, "Caroline: The charity race raised a lot, I heard.", at),
        _turn("talk", 1, "I asked about the charity race results.", "2026-05-09T09:00:00Z"),
        _turn("talk", 2, "The charity race results come out on Monday.", "2026-05-09T09:05:00Z"),
    ]
    with _memory(tmp_path, events) as memory:
        result = memory.assemble(AssemblyRequest("chat", query="charity race"))
        lines = result.text.splitlines()
        # Same minute, same role: both in the heading, and the lines carry only the quote.
        assert "### [ev chat] 2026-05-08 13:14, user" in lines
        assert "- [ev :2] Melanie: Yes, I ran the charity race on Saturday." in lines
        # Minutes differ: each line keeps its own, the shared role goes to the heading.
        assert "### [ev talk] 2026-05-09 user" in lines
        assert "- [ev :2] 09:05: The charity race results come out on Monday." in lines
        assert sorted(cited_refs(result.text)) == [
            "chat:1",
            "chat:2",
            "chat:3",
            "talk:1",
            "talk:2",
        ]
        # Off, every line says its role and minute, as before, and costs more.
        assembly = replace(memory.config.assembly, shared_frames=False)
        config = replace(memory.config, assembly=assembly)
        old = Memory(memory.db, replace(memory.loaded, config=config)).assemble(
            AssemblyRequest("chat", query="charity race")
        )
        assert "### [ev chat] 2026-05-08" in old.text.splitlines()
        assert (
            "- [ev :2] user, 13:14: Melanie: Yes, I ran the charity race on Saturday." in old.text
        )
        assert result.used_tokens < old.used_tokens


def test_an_assistant_answer_over_its_limit_is_quoted_where_it_matched(tmp_path: Path) -> None:
    answer = FILLER * 3 + "The charity race starts at the north gate at nine. " + FILLER * 2
    events = [
        _turn("s", 1, "Where does the charity race start?", "2026-05-08T13:14:00Z"),
        _turn("s", 2, answer, "2026-05-08T13:15:00Z", role="assistant"),
    ]
    with _memory(tmp_path, events) as memory:
        result = memory.assemble(AssemblyRequest("s", query="charity race start gate"))
        line = next(e.line for e in result.included if e.ref == "s:2")
        # Head-cut at assistantSnippetChars (300) it would be filler only.
        assert "The charity race starts at the north gate at nine." in line
        assert line.startswith("- [ev :2] assistant said, 13:15: …")
