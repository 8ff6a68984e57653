"""BERT's uncased WordPiece tokenizer in plain Python (no ``tokenizers`` wheel needed).

It reproduces the normalisation of the MiniLM tokenizer the builtin table was
distilled from: control characters dropped, CJK ideographs split out, lower case,
accents stripped, punctuation split, then greedy longest-match word pieces with
``##`` continuations. Whole words are cached: conversation text repeats them.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

MAX_WORD_CHARS = 100


def _is_cjk(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF
        or 0x3400 <= code <= 0x4DBF
        or 0x20000 <= code <= 0x2A6DF
        or 0x2A700 <= code <= 0x2B81F
        or 0x2B820 <= code <= 0x2CEAF
        or 0xF900 <= code <= 0xFAFF
        or 0x2F800 <= code <= 0x2FA1F
    )


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    # ASCII symbols such as ^ $ ` count as punctuation for BERT, as in its own tokenizer.
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def basic_words(text: str) -> list[str]:
    """Split ``text`` into lower-cased, accent-free words and single punctuation marks."""
    out: list[str] = []
    current: list[str] = []

    def flush() -> None:
        if current:
            out.append("".join(current))
            current.clear()

    for char in unicodedata.normalize("NFD", text.lower()):
        code = ord(char)
        category = unicodedata.category(char)
        if code == 0 or code == 0xFFFD or (category.startswith("C") and char not in "\t\n\r"):
            continue
        if category == "Mn":
            continue
        if char.isspace():
            flush()
        elif _is_cjk(code) or _is_punctuation(char):
            flush()
            out.append(char)
        else:
            current.append(char)
    flush()
    return out


class WordPiece:
    """Token ids for text, from a vocabulary listed one token a line in id order."""

    def __init__(self, vocab: Sequence[str], unk: str = "[UNK]") -> None:
        # zip in C: a prompt hook builds this 30k-entry map on every start.
        self.ids = dict(zip(vocab, range(len(vocab)), strict=True))
        self.unk_id = self.ids[unk]
        self._cache: dict[str, tuple[int, ...]] = {}
        self._chunks: dict[str, tuple[int, ...]] = {}

    def word_ids(self, word: str) -> tuple[int, ...]:
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        pieces: list[int] = []
        if len(word) > MAX_WORD_CHARS:
            pieces = [self.unk_id]
        start = 0 if not pieces else len(word)
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = self.ids.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                pieces = [self.unk_id]
                break
            pieces.append(found)
            start = end
        result = tuple(pieces)
        if len(self._cache) < 200_000:
            self._cache[word] = result
        return result

    def encode(self, text: str, limit: int | None = None) -> list[int]:
        """Token ids of ``text``; with ``limit``, at most that many (the rest is not read)."""
        # Whitespace never joins two words, so each space-separated chunk is tokenized
        # (and cached) alone: conversation text repeats its chunks, and the per-character
        # normalisation is the slow part.
        ids: list[int] = []
        cache = self._chunks
        for chunk in text.split():
            found = cache.get(chunk)
            if found is None:
                found = tuple(i for word in basic_words(chunk) for i in self.word_ids(word))
                if len(cache) < 200_000:
                    cache[chunk] = found
            ids.extend(found)
            if limit is not None and len(ids) >= limit:
                return ids[:limit]
        return ids

    def encode_many(self, texts: Iterable[str]) -> list[list[int]]:
        return [self.encode(text) for text in texts]
