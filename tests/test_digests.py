"""The hook path hashes with the interpreter's own SHA-256 and BLAKE2 (memplug/text.py,
memplug/assemble/render.py) so that it need not import hashlib and load OpenSSL: the
digests, and so every id, hash and cache key, are hashlib's, byte for byte."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from memplug.assemble import render
from memplug.text import sha256_hex, short_hash


@given(st.text())
def test_sha256_hex_is_hashlibs(text: str) -> None:
    assert sha256_hex(text) == hashlib.sha256(text.encode("utf-8")).hexdigest()


@given(st.lists(st.text(), min_size=1, max_size=4), st.integers(1, 64))
def test_short_hash_is_hashlibs_cut(parts: list[str], length: int) -> None:
    whole = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    assert short_hash(*parts, length=length) == whole[:length]


@given(st.binary())
def test_the_copy_check_keys_on_hashlibs_blake2b(data: bytes) -> None:
    expected = hashlib.blake2b(data, digest_size=16).digest()
    assert render.blake2b(data, digest_size=16).digest() == expected


def test_a_known_digest() -> None:
    """Pinned, so a swapped algorithm fails even where hashlib were swapped too."""
    assert sha256_hex("abc") == ("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
