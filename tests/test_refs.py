"""The one ``SESSION:SEQ`` rule: written one way, read one way, round-trips exactly."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memplug.base.errors import UsageError, ValidationError
from memplug.base.refs import MAX_SEQ, EventRef, event_ref, event_ref_at, parse_source_refs

# Session ids as a host may send them: any non-blank text, colons and spaces included.
sessions = st.text(min_size=1, max_size=40).filter(lambda s: s.strip() != "")
seqs = st.integers(min_value=0, max_value=MAX_SEQ)


@given(sessions, seqs)
def test_format_then_parse_gives_back_the_same_ref(session: str, seq: int) -> None:
    ref = EventRef(session, seq)
    assert EventRef.parse(str(ref)) == ref
    assert EventRef.find(event_ref(session, seq)) == (session, seq)


@given(sessions, seqs)
def test_the_written_form_is_session_colon_decimal_seq(session: str, seq: int) -> None:
    assert event_ref(session, seq) == session + ":" + str(seq)
    assert f"{EventRef(session, seq)}" == event_ref(session, seq)


@given(st.text(max_size=40))
def test_whatever_parses_is_written_back_canonically(text: str) -> None:
    ref = EventRef.find(text)
    if ref is not None:
        # Canonical apart from leading zeros, which are read but never written.
        session, _, seq = text.rpartition(":")
        assert str(ref) == f"{session}:{int(seq)}"
        assert EventRef.find(str(ref)) == ref


@given(sessions, seqs, st.integers(min_value=0, max_value=10**9))
def test_a_ref_at_an_offset_round_trips_and_a_plain_ref_has_none(
    session: str, seq: int, offset: int
) -> None:
    assert EventRef.find_at(event_ref_at(session, seq, offset)) == ((session, seq), offset)
    assert EventRef.find_at(event_ref(session, seq)) == ((session, seq), None)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a@b:5", (("a@b", 5), None)),  # an @ inside a session is the session's
        ("x:1@2:5", (("x:1@2", 5), None)),
        ("s:5@007", (("s", 5), 7)),
        ("s:5@", None),
        ("s:5@x", None),
        ("s@7", None),
    ],
)
def test_what_is_a_reference_at_an_offset(text: str, expected: object) -> None:
    assert EventRef.find_at(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("s1:7", ("s1", 7)),
        ("proj:a:b:12", ("proj:a:b", 12)),  # the last colon splits
        ("my session:3", ("my session", 3)),  # spaces in a session are kept verbatim
        (" s1:3", (" s1", 3)),  # nothing is stripped
        ("s1:007", ("s1", 7)),
        ("s1:0", ("s1", 0)),
        (f"s1:{MAX_SEQ}", ("s1", MAX_SEQ)),
    ],
)
def test_what_is_a_reference(text: str, expected: tuple[str, int]) -> None:
    assert EventRef.find(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "s1",  # no colon
        "s1:",  # no seq
        ":7",  # no session
        "  :7",  # a blank session
        "s1:-1",  # no negative seq: a host event's seq is >= 0
        "s1:+1",
        "s1: 7",  # no spaces in the seq
        "s1:7 ",
        "s1:7\n",
        "s1:²",  # digits are ASCII: str.isdigit() would say yes
        "s1:٣",
        "s1:1.5",
        "s1:0x10",
        f"s1:{MAX_SEQ + 1}",
        "mem_abc",
    ],
)
def test_what_is_not_a_reference(text: str) -> None:
    assert EventRef.find(text) is None
    with pytest.raises(ValidationError, match="not a SESSION:SEQ reference"):
        EventRef.parse(text)


def test_not_text_is_not_a_reference() -> None:
    assert EventRef.find(7) is None
    assert EventRef.find(None) is None
    assert EventRef.find(["s1", 7]) is None


def test_the_error_names_what_was_expected_and_is_bad_input() -> None:
    with pytest.raises(UsageError) as raised:
        EventRef.parse("nonsense", what="an item id or SESSION:SEQ reference")
    assert str(raised.value) == "not an item id or SESSION:SEQ reference: 'nonsense'"
    assert raised.value.exit_code == 2


def test_refs_sort_by_session_then_seq_as_numbers() -> None:
    refs = [EventRef("b", 1), EventRef("a", 10), EventRef("a", 9)]
    assert sorted(refs) == [("a", 9), ("a", 10), ("b", 1)]


def test_source_refs_in_every_stored_spelling() -> None:
    raw = json.dumps(
        ["s:1", 2, "3", {"session_id": "t", "seq": 4}, {"seq": 5}, ["u", 6], ["u", "7"],
         "s:1", "s:-1", -2, True, "²", {"seq": "x"}, ["u"], ["", 8], None, "mem_x"]
    )  # fmt: skip
    assert parse_source_refs(raw, "s") == (
        ("s", 1), ("s", 2), ("s", 3), ("t", 4), ("s", 5), ("u", 6), ("u", 7),
    )  # fmt: skip
    assert parse_source_refs("not json", "s") == ()
    assert parse_source_refs('{"seq": 1}', "s") == ()
    assert parse_source_refs(None, "s") == ()


@given(st.lists(st.tuples(sessions, seqs), max_size=8))
def test_written_source_refs_read_back(refs: list[tuple[str, int]]) -> None:
    raw = json.dumps([event_ref(s, q) for s, q in refs])
    assert parse_source_refs(raw, "other") == tuple(dict.fromkeys(refs))
