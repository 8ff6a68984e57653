"""Every id and hash is hashlib's SHA-256 (memplug/base/text.py), the one digest every CPython
build has (tests/test_portable.py runs with the builtin hash modules hidden)."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from memplug.base.text import sha256_hex, short_hash
from memplug.recall.assemble import render


@given(st.text())
def test_sha256_hex_is_hashlibs(text: str) -> None:
    assert sha256_hex(text) == hashlib.sha256(text.encode("utf-8")).hexdigest()


@given(st.lists(st.text(), min_size=1, max_size=4), st.integers(1, 64))
def test_short_hash_is_hashlibs_cut(parts: list[str], length: int) -> None:
    whole = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    assert short_hash(*parts, length=length) == whole[:length]


WORDS = st.lists(st.sampled_from(["alpha", "beta", "gamma", "Delta"]), max_size=14)


@given(WORDS, WORDS)
def test_the_copy_checks_cache_answers_as_the_check_does(words: list[str], out: list[str]) -> None:
    """The cache is keyed on a digest of the output: a hit is the same answer."""
    output = " ".join(out)
    assert render.copied_words(words, output) == list(render._copied(words, output))
    assert render.copied_words(words, output) == list(render._copied(words, output))


def test_the_copy_check_finds_a_copied_run() -> None:
    words = "we ran it and the build failed with exit code two".split()
    copied = render.copied_words(words, "$ make\nthe build failed with exit code two\n")
    assert copied == [False] * 4 + [True] * 7


def test_a_known_digest() -> None:
    """Pinned, so a swapped algorithm fails even where hashlib were swapped too."""
    assert sha256_hex("abc") == ("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
