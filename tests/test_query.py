"""Query signals (memplug.recall.query) and FTS5 query building (memplug.store.fts): pure
functions, checked against a real index."""

from __future__ import annotations

import re
import time

import apsw
import apsw.fts5query
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplug.base.text import cjk_run, count_cjk, may_hold_cjk
from memplug.recall import query as query_module
from memplug.recall.assemble import relevance
from memplug.recall.query import (
    MAX_TERMS,
    cjk_windows,
    is_numeric_symbol,
    parse_query,
    stem,
    word_stem,
)
from memplug.store.fts import (
    MatchPlan,
    bridge_trigrams,
    build_match,
    fts_quote,
    like_pattern,
    needs_verification,
    term_expression,
)

FTS5_SYNTAX = ['"', '""', "AND", "OR", "NOT", "NEAR", "NEAR(", "*", ":", "^", "(", ")", "+", "-",
               "{", "}", "col:", "text:", "'", "\\", "%", "_", "\x00", "\n", "\u3000"]  # fmt: skip


@pytest.fixture(scope="module")
def fts() -> apsw.Connection:
    """A trigram table shaped like events_fts, holding a little text to match against."""
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='trigram case_sensitive 0')")
    for body in (
        "值班室分机号 4324",
        "billing服务 runs on port 8080",
        "we go to the db at v2.31.5",
        'a "quoted" word and NEAR(x y) AND OR NOT *',
    ):
        conn.execute("INSERT INTO t (text) VALUES (?)", (body,))
    return conn


def texts(query: str) -> list[str]:
    return [t.text for t in parse_query(query).terms]


def assert_valid(conn: apsw.Connection, plan: MatchPlan) -> None:
    """Every expression the plan can produce runs, and parses to plain phrases only."""
    expressions = [expr for _, expr in plan.fts]
    expressions += [e for e in (plan.any_expression(), plan.all_expression()) if e]
    expressions += list(plan.group_expressions().values())
    needles = {t.text for t, _ in plan.fts}
    # A long punctuated needle is looked up by its bridge trigrams, then verified.
    needles |= {
        tri for t, _ in plan.fts if needs_verification(t) for tri in bridge_trigrams(t.text)
    }
    for expr in expressions:
        conn.execute("SELECT count(*) FROM t WHERE t MATCH ?", (expr,)).fetchall()
        for node in _leaves(apsw.fts5query.parse_query_string(expr)):
            assert isinstance(node, apsw.fts5query.PHRASE)
            assert not node.prefix and not node.initial and node.plus is None
            assert isinstance(node.phrase, str)
            # A padded two-letter word is the only phrase that is not a needle verbatim.
            assert node.phrase in needles or node.phrase[1:-1] in needles


def _leaves(node: object) -> list[object]:
    if isinstance(node, apsw.fts5query.AND | apsw.fts5query.OR):
        return [leaf for q in node.queries for leaf in _leaves(q)]
    assert not isinstance(node, apsw.fts5query.NOT | apsw.fts5query.NEAR)
    assert not isinstance(node, apsw.fts5query.COLUMNFILTER)
    return [node]


# -- signals ---------------------------------------------------------------------------


def test_cjk_question_yields_the_subject_windows() -> None:
    terms = texts("值班室分机号是多少")
    assert terms[0] == "值班室分机号"
    assert "分机号" in terms and "分机" in terms
    # The copula and the question word are split off, never searched for.
    assert not any("是" in t or "多少" in t for t in terms)


def test_cjk_windows_are_longest_first_and_unique() -> None:
    windows = cjk_windows("数据库迁移")
    assert windows[0] == "数据库迁移"
    assert [len(w) for w in windows] == sorted((len(w) for w in windows), reverse=True)
    assert len(windows) == len(set(windows))
    assert {"数据库", "迁移", "据库迁移"} <= set(windows)


def test_symbols_pin_only_when_numeric_and_longer_than_one_character() -> None:
    signals = parse_query("is billing2 on v2.31.5 at :8080 with src/app/main.py and 0 or 7 retries")
    pins = {t.text for t in signals.pins}
    assert pins == {"billing2", "v2.31.5", "8080"}
    assert "src/app/main.py" in {t.text for t in signals.terms if t.kind == "symbol"}
    assert "0" not in texts("billing0 0") and "billing0" in texts("billing0 0")
    assert not is_numeric_symbol("0") and is_numeric_symbol("10")


def test_numbers_keep_percent_and_drop_units_into_words() -> None:
    terms = texts("p95 under 200 ms and 5% errors, 3.5GB")
    assert {"p95", "200", "5%", "3.5"} <= set(terms)
    assert "5" not in terms


def test_identifiers_are_symbols_and_their_words_still_count() -> None:
    signals = parse_query("rename user_id in fetchUserName and memplug.store.search")
    symbols = {t.text for t in signals.terms if t.kind == "symbol"}
    assert {"user_id", "fetchusername", "memplug.store.search"} <= symbols
    assert "user" in {t.text for t in signals.terms if t.kind == "word"}


def test_quoted_phrases_come_first() -> None:
    signals = parse_query('he said “ship it friday” and "deploy  to PROD" today')
    assert [t.text for t in signals.terms[:2]] == ["ship it friday", "deploy to prod"]
    assert all(t.kind == "phrase" for t in signals.terms[:2])


def test_stop_words_kept_as_signals_but_not_for_ranking() -> None:
    signals = parse_query("what is the port")
    assert [t.text for t in signals.ranking_terms] == ["port"]
    assert {"what", "the", "is"} <= {t.text for t in signals.terms if t.stop}
    only_stops = parse_query("what is the")
    assert {t.text for t in only_stops.ranking_terms} == {"what", "is", "the"}


@pytest.mark.parametrize(
    ("word", "expected"),
    [("painted", "paint"), ("painting", "paint"), ("paints", "paint"), ("running", "run"),
     ("classes", "class"), ("go", "go"), ("port", "port"), ("stories", "stor"),
     ("cheer", "cheer"), ("kids", "kid"), ("redis", "redi"), ("using", "use")],
)  # fmt: skip
def test_a_needle_is_the_prefix_a_word_shares_with_its_snowball_stem(
    word: str, expected: str
) -> None:
    # The naive suffix stripper cut "cheer" to "che" (and found "check", "chess").
    assert stem(word) == expected


def test_spellings_of_one_word_share_a_stem_and_other_words_do_not() -> None:
    assert {word_stem(w) for w in ("paint", "painted", "painting", "paints")} == {"paint"}
    assert word_stem("painter") != word_stem("painted")
    assert word_stem("story") == word_stem("stories")
    assert word_stem("met") == word_stem("meeting") == "meet"
    assert word_stem("children") == word_stem("child")


def test_an_irregular_word_looks_for_all_its_forms_as_one_group() -> None:
    terms = parse_query("where did you meet her").ranking_terms
    assert [(t.text, t.origin) for t in terms] == [("meet", "meet"), ("met", "met")]
    assert len({t.group for t in terms}) == 1
    # A form that is a stop word (did, had, got) is not looked for.
    assert [t.text for t in parse_query("what did she buy").ranking_terms] == ["buy", "bought"]


def test_empty_and_punctuation_only_queries_have_no_terms() -> None:
    for query in ("", "   ", '"', "()*:^", "\x00\x01", "a I"):
        signals = parse_query(query)
        assert signals.empty
        assert build_match(signals).empty


def test_term_cap_is_deterministic_and_reported() -> None:
    query = " ".join(f"word{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}x" for i in range(400))
    first, second = parse_query(query), parse_query(query)
    assert len(first.terms) == MAX_TERMS
    assert first.capped
    assert first == second


def test_phrase_and_regex_modes() -> None:
    phrase = parse_query("Deploy  TO prod", mode="phrase")
    assert [t.text for t in phrase.terms] == ["deploy to prod"]
    regex = parse_query("a+b*", mode="regex")
    assert regex.mode == "regex" and regex.terms == ()


# -- match building ---------------------------------------------------------------------


def test_fts_quote_doubles_quotes_and_drops_nul() -> None:
    assert fts_quote('a"b') == '"a""b"'
    assert fts_quote("x\x00y") == '"xy"'
    assert fts_quote("AND") == '"AND"'


def test_short_terms_route_to_padded_phrase_or_like(fts: apsw.Connection) -> None:
    plan = build_match(parse_query("go 端口"))
    assert [t.text for t in plan.scanned] == ["端口"]
    padded = dict((t.text, e) for t, e in plan.fts)["go"]
    assert '" go "' in padded
    hits = fts.execute("SELECT text FROM t WHERE t MATCH ?", (padded,)).fetchall()
    assert hits == [("we go to the db at v2.31.5",)]


def test_selective_terms_first() -> None:
    plan = build_match(parse_query("the deployment window for billing v2.31.5 is long"))
    order = [t.text for t, _ in plan.fts]
    assert order[0] == "v2.31.5"
    assert order.index("deploy") < order.index("long")


def test_cjk_match_finds_the_note(fts: apsw.Connection) -> None:
    plan = build_match(parse_query("值班室分机号是多少"))
    rows = fts.execute("SELECT text FROM t WHERE t MATCH ?", (plan.any_expression(),)).fetchall()
    assert rows == [("值班室分机号 4324",)]


def test_all_expression_requires_every_group(fts: apsw.Connection) -> None:
    plan = build_match(parse_query("billing port 8080"), match="all")
    expr = plan.all_expression()
    assert expr is not None
    assert fts.execute("SELECT count(*) FROM t WHERE t MATCH ?", (expr,)).fetchone() == (1,)
    none = build_match(parse_query("billing port 9999"), match="all").all_expression()
    assert fts.execute("SELECT count(*) FROM t WHERE t MATCH ?", (none,)).fetchone() == (0,)


def test_operators_in_user_text_match_literally(fts: apsw.Connection) -> None:
    plan = build_match(parse_query('"NEAR(x y) AND OR NOT *"'))
    rows = fts.execute("SELECT text FROM t WHERE t MATCH ?", (plan.any_expression(),)).fetchall()
    assert rows == [('a "quoted" word and NEAR(x y) AND OR NOT *',)]


def test_long_punctuated_needles_use_bridge_trigrams(fts: apsw.Connection) -> None:
    (term,) = [t for t in parse_query("src/budget/tenant.py").terms if t.kind == "symbol"][:1]
    assert bridge_trigrams(term.text) == ["c/b", "t/t", "t.p"]
    assert needs_verification(term)
    assert term_expression(term) == '"c/b" AND "t/t" AND "t.p"'
    version = parse_query("v2.31.5").terms[0]
    assert not needs_verification(version) and term_expression(version) == '"v2.31.5"'
    rows = fts.execute(
        "SELECT text FROM t WHERE t MATCH ?",
        (term_expression(parse_query("db at v2.31.5", mode="phrase").terms[0]),),
    ).fetchall()
    assert rows == [("we go to the db at v2.31.5",)]


def test_like_pattern_escapes_wildcards() -> None:
    assert like_pattern("50%_a\\") == "%50\\%\\_a\\\\%"


# -- hostile input ----------------------------------------------------------------------

hostile = st.one_of(
    st.text(max_size=300),
    st.lists(
        st.sampled_from([*FTS5_SYNTAX, "billing", "端口", "v2.31.5", "go", "a"]), max_size=40
    ).map(" ".join),
    st.lists(st.sampled_from(FTS5_SYNTAX), max_size=60).map("".join),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=200),
)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    query=hostile,
    mode=st.sampled_from(["literal", "phrase"]),
    match=st.sampled_from(["any", "all"]),
)
def test_hostile_queries_build_valid_match_strings(
    fts: apsw.Connection, query: str, mode: str, match: str
) -> None:
    signals = parse_query(query, mode=mode)
    assert len(signals.terms) <= MAX_TERMS
    plan = build_match(signals, match=match)
    assert_valid(fts, plan)
    for term in plan.scanned:
        fts.execute(
            "SELECT count(*) FROM t WHERE text LIKE ? ESCAPE '\\'", (like_pattern(term.text),)
        )
    # Determinism: the same text always gives the same terms and the same plan.
    assert parse_query(query, mode=mode) == signals
    assert build_match(parse_query(query, mode=mode), match=match) == plan


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(unit=st.sampled_from([*FTS5_SYNTAX, "值班室", "x", "é", "🙂", "v1.2", "a_b"]))
def test_ten_kilobyte_queries(fts: apsw.Connection, unit: str) -> None:
    query = (unit * (10_240 // max(1, len(unit.encode())) + 1))[:10_240]
    signals = parse_query(query)
    assert len(signals.terms) <= MAX_TERMS
    assert_valid(fts, build_match(signals))


def test_ten_kilobytes_of_distinct_words_is_capped(fts: apsw.Connection) -> None:
    query = " ".join(f"w{i:05d}x" for i in range(1500))[:10_240]
    signals = parse_query(query)
    assert len(signals.terms) == MAX_TERMS and signals.capped
    assert_valid(fts, build_match(signals))


# The symbol patterns as they were before they were made linear: the reference the
# linear ones must agree with (they took seconds on one 10 KB word).
_PLAIN_PATH = re.compile(
    r"(?:[A-Za-z]:)?(?:~|\.{1,2})?(?:/[\w.@+-]+)+/?|[\w.@+-]+(?:/[\w.@+-]+)+/?"
)
_PLAIN_URLISH = re.compile(r"[A-Za-z][\w+.-]*://\S+")


@settings(max_examples=2_000, deadline=None)
@given(text=st.text(alphabet="aZk1_:/.~@+- é3\n\t", max_size=200) | st.text(max_size=200))
def test_linear_symbol_patterns_find_what_the_plain_ones_found(text: str) -> None:
    assert [(m.start(1), m.group(1)) for m in query_module._URLISH.finditer(text)] == [
        (m.start(), m.group(0)) for m in _PLAIN_URLISH.finditer(text)
    ]
    assert [(m.start(), m.group(0)) for m in query_module._PATH.finditer(text)] == [
        (m.start(), m.group(0)) for m in _PLAIN_PATH.finditer(text)
    ]


@pytest.mark.parametrize("word", ["a" * 10_240, "a:" * 5_120, "./" * 5_120, "é" * 10_240])
def test_one_long_word_is_parsed_in_linear_time(word: str) -> None:
    started = time.process_time()
    parse_query(word)
    parse_query(word + " " + word)
    # Quadratic patterns took 1.5–2 s on one such word; linear ones take milliseconds.
    assert time.process_time() - started < 1.0


# Each range of the CJK class, spelled out: the lazily compiled pattern and its
# high-character shortcut (memplug.base.text.may_hold_cjk) must count exactly these.
CJK_RANGES = (
    (0x3040, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
)
MIXED = st.text(
    alphabet=st.one_of(
        st.characters(max_codepoint=0x7F),
        st.characters(min_codepoint=0x80, max_codepoint=0x303F),
        st.sampled_from("あカ㐀中文服务한국豈\u303f\u3040\u30ff\u9fff\ua000\ud7af\ufb00🙂"),
    ),
    max_size=40,
)


@given(MIXED)
@settings(max_examples=300)
def test_cjk_counts_and_runs_skip_no_cjk_character(text: str) -> None:
    in_class = [any(lo <= ord(ch) <= hi for lo, hi in CJK_RANGES) for ch in text]
    assert count_cjk(text) == sum(in_class)
    if not may_hold_cjk(text):
        assert not any(in_class)
    kept = "".join(ch for ch, cjk in zip(text, in_class, strict=True) if cjk)
    assert "".join(cjk_run().findall(text)) == kept


@given(st.text(alphabet=st.sampled_from("ab 12.5%ms:٣k,x"), max_size=30))
@settings(max_examples=300)
def test_numbers_are_read_the_same_with_or_without_the_digit_shortcut(text: str) -> None:
    """A text with no digit skips the number pattern: it could not have matched."""
    number = query_module._number()
    assert bool(query_module._DIGIT.search(text)) or not number.search(text)


# What memplug.recall.assemble.relevance tested in one pattern before its CJK half became lazy.
ONE_PATTERN = re.compile(r"[^\W\d_]{3,}|[\u3400-\u9fff]{2,}")


@given(MIXED)
@settings(max_examples=300)
def test_the_content_check_answers_as_the_one_pattern_did(text: str) -> None:
    assert relevance._has_content(text) is bool(ONE_PATTERN.search(text))
