"""Matching a query's terms in a candidate's text: counts per term, whole words, pinned
symbols, and the IDF each term and group carries. No scoring policy lives here beyond
BM25's own parts (see :mod:`memplug.recall.retrieve.scoring`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from memplug.base.terms import QuerySignals, Term
from memplug.recall.query import word_stem
from memplug.recall.retrieve.ranking import Ranking

# Per group: each term's (text, term, idf, CJK window weight), and the group's
# whole-word bonus.
Plan = list[tuple[list[tuple[str, Term, float, float]], float]]

_ALNUM_RUN = re.compile(r"[a-z0-9]+")
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
# Texts whose scan is remembered (see TermCounter._scan): one step's candidates.
SCANS_KEPT = 512
_SCANS: dict[tuple[tuple[str | None, ...], str], tuple[list[tuple[str, str]], list[str]]] = {}


class TermCounter:
    """Counts every term of a query in one text with a few regex scans.

    Words are stems, i.e. prefixes: they count only at the start of a word ("new" in
    "news", not in "renew"); the rest of each word is captured too, so one scan also
    tells whether the query's word occurred whole (``billing`` in ``billing服务`` but
    not in ``billing2服务``) and whether it is a spelling of the query's word (the
    same Snowball stem: ``painting`` for ``painted``) or only begins like it
    (``painter``), which counts ``prefix_weight`` of an occurrence. Everything else
    (symbols, phrases, CJK needles) counts anywhere, longest alternative first, so a
    CJK run found whole counts as the run.
    """

    def __init__(self, signals: QuerySignals, prefix_weight: float = 1.0) -> None:
        self.groups: list[list[Term]] = [list(g) for g in signals.groups]
        self.prefix_weight = prefix_weight
        # Per word needle, the Snowball stems of the query words it stands for; and the
        # stems of the words it began in the texts read so far.
        self.stems: dict[str, set[str]] = {}
        self._stems: dict[str, str] = {}
        # Per (needle, rest of its word) a word scan found: its weight and the whole word.
        # The same words recur across a query's candidates; each is judged once.
        self._words: dict[tuple[str, str], tuple[float, str]] = {}
        words: list[str] = []
        padded: list[str] = []
        others: list[str] = []
        for group in self.groups:
            for term in group:
                if term.short_word:
                    padded.append(term.text)
                elif term.kind == "word" and term.text.isascii():
                    words.append(term.text)
                    self.stems.setdefault(term.text, set()).add(word_stem(term.origin))
                else:
                    others.append(term.text)
        self.word_rx = (
            re.compile(r"(?<![a-z0-9])(" + _alternation(words) + r")([a-z0-9]*)") if words else None
        )
        # The same matches, found faster: with every stem made of [a-z0-9] a match that
        # does not begin a run of them runs to that run's end, so it hides no match that
        # does; the scan is then the stems alone (which the regex engine skips ahead to
        # by their first letters), each match's left boundary tested once, in code. A
        # pattern that begins with a lookbehind or a separator is tried at every offset.
        self.word_sep = bool(words) and all(_ALNUM_RUN.fullmatch(w) for w in words)
        if self.word_sep:
            self.word_rx = re.compile(r"(" + _alternation(words) + r")([a-z0-9]*)")
        self.padded_rx = (
            re.compile(r"(?<![^\W_])(?:" + _alternation(padded) + r")(?![^\W_])")
            if padded
            else None
        )
        self.other_rx = re.compile(_alternation(others)) if others else None
        self._patterns = tuple(
            rx and rx.pattern for rx in (self.word_rx, self.padded_rx, self.other_rx)
        )

    def prepare(self, idf: dict[str, float], group_idf: list[float], ranking: Ranking) -> Plan:
        """Per group: each term's (text, term, idf, CJK window weight) and the group's
        whole-word bonus, computed once per query rather than once per candidate."""
        plan = []
        for g_index, group in enumerate(self.groups):
            head_len = max(len(t.text) for t in group)
            entries = [
                (
                    term.text,
                    term,
                    idf.get(term.text, group_idf[g_index]),
                    len(term.text) / head_len if term.kind == "cjk" else 1.0,
                )
                for term in group
            ]
            plan.append((entries, ranking.config.boundary_bonus * group_idf[g_index]))
        return plan

    def _stem(self, word: str) -> str:
        stemmed = self._stems.get(word)
        if stemmed is None:
            stemmed = self._stems[word] = word_stem(word)
        return stemmed

    def _judge(self, stem_text: str, rest: str) -> tuple[float, str]:
        """A word match's weight (``prefix_weight`` when it only begins like the query's
        word), and the whole word."""
        word = stem_text + rest
        if self.prefix_weight != 1.0 and self._stem(word) not in self.stems[stem_text]:
            return self.prefix_weight, word
        return 1.0, word

    def counts(self, text: str) -> tuple[dict[str, float], set[str]]:
        """Occurrences per needle (a word's prefix-only ones weighted), and the whole
        words the word needles began."""
        found: dict[str, float] = {}
        whole: set[str] = set()
        words, needles = self._scan(text)
        judged = self._words
        for match in words:
            seen = judged.get(match)
            if seen is None:
                seen = judged[match] = self._judge(*match)
            weight, word = seen
            if weight:
                found[match[0]] = found.get(match[0], 0.0) + weight
            whole.add(word)
        for needle in needles:
            found[needle] = found.get(needle, 0) + 1
        return found, whole

    def _scan(self, text: str) -> tuple[list[tuple[str, str]], list[str]]:
        """What the patterns find in ``text``: (stem, rest of its word) per word that
        begins with a stem, and the other needles. Remembered per patterns and text:
        ranking and the relevance bar count the same candidates with counters that
        differ only in how they weigh a match."""
        key = (self._patterns, text)
        scan = _SCANS.get(key)
        if scan is None:
            if len(_SCANS) >= SCANS_KEPT:
                _SCANS.clear()
            words = [] if self.word_rx is None else self._word_matches(self.word_rx, text)
            needles = [n for rx in (self.padded_rx, self.other_rx) if rx for n in rx.findall(text)]
            scan = _SCANS[key] = (words, needles)
        return scan

    def _word_matches(self, word_rx: re.Pattern[str], text: str) -> list[tuple[str, str]]:
        """(stem, rest of its word) for each word of ``text`` that begins with a stem."""
        if not self.word_sep:
            return word_rx.findall(text)
        return [
            (match[1], match[2])
            for match in word_rx.finditer(text)
            if not (start := match.start()) or text[start - 1] not in _ALNUM
        ]


def _alternation(needles: Iterable[str]) -> str:
    unique = sorted(set(needles), key=lambda n: (-len(n), n))
    return "|".join(re.escape(n) for n in unique)


def term_idf(
    signals: QuerySignals, df: Mapping[str, float], n: float, ranking: Ranking
) -> tuple[dict[str, float], list[float]]:
    """IDF per term, and per group (its best term's; the rarest known one's when the
    group has none)."""
    idf = {text: ranking.idf(min(d, n), n) for text, d in df.items()}
    known = [v for v in idf.values()]
    fallback = min(known) if known else 1.0
    group_idf = []
    for group in signals.groups:
        values = [idf[t.text] for t in group if t.text in idf]
        group_idf.append(max(values) if values else fallback)
    return idf, group_idf


def pin_patterns(signals: QuerySignals) -> list[tuple[str, re.Pattern[str]]]:
    """The query's numeric and versioned symbols, matched at symbol boundaries."""
    pins = []
    for term in signals.pins:
        if not term.text or term.stop:
            continue
        body = re.escape(term.text)
        right = r"(?![0-9]|\.[0-9])" if term.text[-1].isalnum() else ""
        # "v2.31.5" is also written "2.31.5" (requests==2.31.5).
        if re.fullmatch(r"v\d+(\.\d+)+.*", term.text):
            body = "v?" + re.escape(term.text[1:])
        elif term.text[0].isalnum():
            # The left boundary tested after the symbol, not before: a pattern that
            # begins with the symbol's text is searched for it (0.01 ms in 200 kB of
            # text); one that begins with a lookbehind is tried at every offset (2 ms).
            pins.append((term.text, re.compile(body + rf"(?<![^\W_]{body})" + right)))
            continue
        left = r"(?<![^\W_])" if term.text[0].isalnum() else ""
        pins.append((term.text, re.compile(left + body + right)))
    return pins


def word_boundaries(signals: QuerySignals) -> dict[str, re.Pattern[str]]:
    """Whole-word patterns of the query's words that the word scan does not judge: the
    non-ASCII ones (a :class:`TermCounter` tells of the others from its own scan)."""
    return {
        t.origin: re.compile(rf"(?<![a-z0-9]){re.escape(t.origin)}(?![a-z0-9])")
        for t in signals.ranking_terms
        if t.kind == "word" and not t.text.isascii()
    }


def whole_word(boundaries: dict[str, re.Pattern[str]], word: str, text: str) -> bool:
    pattern = boundaries.get(word)
    return pattern is not None and pattern.search(text) is not None


def has_all(signals: QuerySignals, text: str) -> bool:
    """Whether ``text`` holds every group of the query (``--match all``)."""
    for group in signals.groups:
        head = next((t for t in group if not t.window), group[0])
        if head.short_word:
            if not re.search(rf"(?<![^\W_]){re.escape(head.text)}(?![^\W_])", text):
                return False
        elif head.text not in text:
            return False
    return True
