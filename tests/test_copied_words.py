"""The own-words check's pieces: which words of an assistant line a recent tool output
holds verbatim (copied_words), and the output it is checked against (output_before)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from memplug.memory import Memory
from memplug.recall.assemble.render import COPY_MIN_CHARS, COPY_WORDS, copied_words


def slide(words: list[str], output: list[str]) -> list[bool]:
    """The check as first written: every window searched in the whole output."""
    haystack = " ".join(" ".join(output).split()).lower()
    copied = [False] * len(words)
    if not haystack:
        return copied
    lowered = [w.lower() for w in words]
    for i in range(len(words) - COPY_WORDS + 1):
        window = " ".join(lowered[i : i + COPY_WORDS])
        if len(window) >= COPY_MIN_CHARS and window in haystack:
            copied[i : i + COPY_WORDS] = [True] * COPY_WORDS
    return copied


# Few words, so that windows recur; case pairs and the Greek final sigma, whose lower
# case depends on what follows; words that are parts of others (a window may start or
# end inside an output word); short ones, for windows under COPY_MIN_CHARS.
VOCAB = ["port", "Port", "report", "rep", "ΟΔΟΣ", "οδος", "ς", "İstanbul", "a", "ab", "deploy"]
SPACES = st.sampled_from([" ", "  ", "\n", "\t", "\xa0 "])
WORDS = st.lists(st.sampled_from(VOCAB), max_size=40)


@st.composite
def outputs(draw: st.DrawFn) -> list[str]:
    texts = []
    for _ in range(draw(st.integers(0, 3))):
        words = draw(WORDS)
        texts.append("".join(w + draw(SPACES) for w in words))
    return texts


@settings(max_examples=400, deadline=None)
@given(words=WORDS, output=outputs(), copy=st.data())
def test_same_answer_as_sliding_every_window(
    words: list[str], output: list[str], copy: st.DataObject
) -> None:
    if output and words:
        # Often a run of the line itself, so that there is something to find.
        start = copy.draw(st.integers(0, len(words) - 1))
        output = [*output, " ".join(words[start : start + copy.draw(st.integers(1, 12))])]
    expected = slide(words, output)
    joined = " ".join(output)
    assert copied_words(words, joined) == expected
    assert copied_words(words, joined) == expected  # the kept answer


def test_a_copied_run_and_its_partial_edges() -> None:
    line = "so the log says nection refused on port 5432 agai today".split()
    output = ["FATAL: connection refused on port 5432 again"]
    # The window starts inside "connection" and ends inside "again": a substring match.
    assert copied_words(line, " ".join(output)) == slide(line, output)
    assert copied_words(line, " ".join(output)) == [False] * 4 + [True] * 6 + [False]
    assert copied_words(line, "") == [False] * len(line)


def _memory_with(path: Path, events: list[dict[str, object]]) -> Memory:
    memory = Memory.open(path)
    body = "".join(json.dumps(e) + "\n" for e in events).encode()
    summary = memory.import_jsonl([("x.jsonl", io.BytesIO(body))])
    assert summary.new == len(events)
    return memory


def _result(seq: int, text: str) -> dict[str, object]:
    return {"session_id": "s", "seq": seq, "type": "tool/result", "role": "tool", "text": text}


def test_output_before_joins_newest_first_within_the_lookback(
    fresh_db: Callable[..., Path],
) -> None:
    events = [_result(1, "oldest out"), _result(2, "middle out")]
    events.append({"session_id": "s", "seq": 3, "type": "user/message", "text": "go"})
    events += [_result(4, "newest out"), _result(5, "after the line")]
    with _memory_with(fresh_db(), events) as memory:
        store = memory.store.events
        assert store.output_before("s", 5, 10, 1_000) == "newest out middle out oldest out"
        assert store.output_before("s", 5, 3, 1_000) == "newest out middle out"
        assert store.output_before("s", 1, 10, 1_000) == ""
        assert store.output_before("other", 5, 10, 1_000) == ""


def test_output_before_cuts_at_max_chars_newest_first(fresh_db: Callable[..., Path]) -> None:
    events = [_result(1, "aaaaaaaaaa"), _result(2, "bbbbbbbbbb"), _result(3, "cccccccccc")]
    with _memory_with(fresh_db(), events) as memory:
        store = memory.store.events
        assert store.output_before("s", 4, 10, 30) == "cccccccccc bbbbbbbbbb aaaaaaaaaa"
        assert store.output_before("s", 4, 10, 25) == "cccccccccc bbbbbbbbbb aaaaa"
        assert store.output_before("s", 4, 10, 20) == "cccccccccc bbbbbbbbbb"
        assert store.output_before("s", 4, 10, 4) == "cccc"
