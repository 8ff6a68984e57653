"""TermCounter remembers how it judged each word match (memplug/retrieve/lexical.py):
what one text counts must not depend on the texts counted before it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memplug.query import parse_query
from memplug.retrieve.lexical import TermCounter

QUERY = "painted billing port checkout"
WORDS = ["painted", "painting", "painter", "paint", "billing", "bill", "port", "portal",
         "ports", "checkout", "checked", "x9", "端口"]  # fmt: skip
texts = st.lists(st.sampled_from(WORDS), max_size=12).map(lambda ws: " ".join(ws))


@given(st.lists(texts, min_size=1, max_size=6), st.sampled_from([1.0, 0.5, 0.0]))
def test_counts_are_those_of_a_fresh_counter(seq: list[str], prefix_weight: float) -> None:
    signals = parse_query(QUERY)
    shared = TermCounter(signals, prefix_weight)
    for text in seq:
        assert shared.counts(text) == TermCounter(signals, prefix_weight).counts(text)


def test_a_word_that_only_begins_like_the_query_word_counts_its_prefix_weight() -> None:
    counter = TermCounter(parse_query("painted"), 0.5)
    counter.counts("painter")
    found, whole = counter.counts("painting painter painting")
    assert found == {"paint": 2.5}
    assert whole == {"painting", "painter"}
