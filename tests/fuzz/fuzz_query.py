"""Fuzz target: the query builder (``memplug.recall.query``, ``memplug.store.fts``) on any text.

Invariants: parsing is deterministic and bounded (terms, needle length, time); every
MATCH string the plan holds is valid FTS5 against a real trigram index, in both
``any`` and ``all`` forms; every LIKE pattern runs.
"""

from __future__ import annotations

import time

import apsw

from memplug.recall.query import MAX_NEEDLE_CHARS, MAX_TERMS, parse_query
from memplug.store.fts import build_match, like_pattern

SEEDS: tuple[bytes, ...] = (
    b"which port did we pick for the API?",
    "数据库迁移的端口是多少".encode(),
    b'"exact phrase" AND NEAR(a b) OR NOT col:* ^x (((',
    b"v2.31.5 src/cache/*.py 8080ms p95<200 billing2 snake_case camelCase",
    b"go to a b c",
    b"\x00\x01\xff\xfe",
    b"\\ \" '' % _ * - + : ^ { } [ ] NEAR/3",
)

_CONN = apsw.Connection(":memory:")
_CONN.execute(
    "CREATE VIRTUAL TABLE t USING fts5(text, tokenize = 'trigram case_sensitive 0');"
    "INSERT INTO t (text) VALUES ('the API port is 8080'), ('数据库迁移 端口 9090');"
)
# Parsing is cut at MAX_QUERY_CHARS; anything near a second is a regex gone wrong.
SLOW_SECONDS = 1.0


def _run(expression: str | None) -> None:
    if expression is not None:
        _CONN.execute("SELECT count(*) FROM t WHERE t MATCH ?", (expression,)).fetchall()


def test_one_input(data: bytes) -> None:
    # Undecodable bytes become lone surrogates, as Python makes of them in argv.
    text = data.decode("utf-8", "surrogateescape")
    for mode in ("literal", "phrase"):
        started = time.monotonic()
        signals = parse_query(text, mode=mode)
        assert time.monotonic() - started < SLOW_SECONDS, f"slow parse of {text[:80]!r}"
        assert len(signals.terms) <= MAX_TERMS
        assert all(len(term.text) <= MAX_NEEDLE_CHARS for term in signals.terms)
        assert parse_query(text, mode=mode) == signals, "parse is not deterministic"
        for match in ("any", "all"):
            plan = build_match(signals, match=match)
            _run(plan.any_expression())
            _run(plan.all_expression())
            for _, expression in plan.fts:
                _run(expression)
            for term in plan.scanned:
                _CONN.execute(
                    "SELECT count(*) FROM t WHERE text LIKE ? ESCAPE '\\'",
                    (like_pattern(term.text),),
                ).fetchall()
