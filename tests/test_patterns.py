"""``memplug.base.patterns.lazy``: a module-level pattern that compiles when first used, and
from then on is the compiled pattern's own methods."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memplug.base.patterns import LazyPattern, lazy

SOURCE = r"(?P<key>[a-z]+)\s*=\s*(?P<value>\d+)"


@given(st.text(alphabet="ab =1;2\n", max_size=30))
def test_every_method_answers_as_the_compiled_pattern_does(text: str) -> None:
    compiled = re.compile(SOURCE, re.I)
    assert span(lazy(SOURCE, re.I).search(text)) == span(compiled.search(text))
    assert lazy(SOURCE, re.I).findall(text) == compiled.findall(text)
    assert lazy(SOURCE, re.I).sub("<\\g<key>>", text) == compiled.sub("<\\g<key>>", text)
    assert lazy(SOURCE, re.I).split(text) == compiled.split(text)
    assert [m.span() for m in lazy(SOURCE, re.I).finditer(text)] == [
        m.span() for m in compiled.finditer(text)
    ]
    assert span(lazy(SOURCE, re.I).match(text)) == span(compiled.match(text))
    assert span(lazy(SOURCE, re.I).fullmatch(text)) == span(compiled.fullmatch(text))


def span(match: re.Match[str] | None) -> tuple[int, int] | None:
    return None if match is None else match.span()


def test_nothing_compiles_before_the_first_call_and_then_it_is_the_compiled_pattern() -> None:
    pattern = LazyPattern(SOURCE)
    assert pattern.pattern == SOURCE
    assert not isinstance(getattr(pattern.search, "__self__", None), re.Pattern)
    assert pattern.search("port = 5433") is not None
    compiled = re.compile(SOURCE)
    for name in ("search", "match", "fullmatch", "finditer", "findall", "sub", "split"):
        assert getattr(pattern, name).__self__ == compiled
    assert pattern.groupindex == {"key": 1, "value": 2}


def test_a_bad_pattern_fails_at_its_first_use() -> None:
    pattern = lazy("(unclosed")
    with pytest.raises(re.error):
        pattern.search("x")
