"""Content words: the words that tie a correction or retraction to the item it names,
and the folded form two contents are compared in."""

from __future__ import annotations

import re

from memplug.base.text import cjk_run

_STOPWORDS = frozenset(
    """a an the and or but if then so to of in on at for with by from as into onto about over
    under is are was were be been being do does did done have has had will would can could
    should shall must may might not no yes it its this that these those there here we you i
    he she they them us our your my their me him her what which who whom when where why how
    all any some each every just also too very now still yet again only really actually
    correction instead please use using used get got make made set let lets need want like
    one two than more most less least much many such own same other up down out off ok
    okay well""".split()
)
_LATIN_TOKEN = re.compile(r"[a-z0-9][a-z0-9_\-.]*[a-z0-9]|[a-z0-9]")


def content_words(text: str) -> frozenset[str]:
    """Words that carry meaning: Latin words and numbers (hyphenated words whole and in
    parts) and CJK bigrams. They tie a correction or retraction to the item it names."""
    words: set[str] = set()
    for token in _LATIN_TOKEN.findall(text.lower()):
        parts = [token, *re.split(r"[\-_.]", token)] if re.search(r"[\-_.]", token) else [token]
        for part in parts:
            if part and part not in _STOPWORDS and (len(part) >= 2 or part.isdigit()):
                words.add(part)
    for run in cjk_run().findall(text):
        if len(run) == 1:
            words.add(run)
        words.update(run[i : i + 2] for i in range(len(run) - 1))
    return frozenset(words)


def canonical(text: str) -> str:
    """The form two contents are compared in: case, spacing and end punctuation folded."""
    folded = re.sub(r"\s+", " ", text.casefold()).strip()
    return folded.rstrip(" .。!！")
