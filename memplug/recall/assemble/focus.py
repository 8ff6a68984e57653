"""Query-focused quotes: the sentences of a long event that hold the query's terms.

A long event head-cut at ``assembly.snippetChars`` spends its tokens on whatever came
first. A focused quote keeps the sentences that hold the query's strongest terms found
in the event (its leading label, such as a speaker's ``Name:``, stays) and marks every
cut with "…", so the tokens go to the part that matched. An event that is short, or
whose matched sentences are most of it, is quoted whole as before.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memplug.recall.retrieve.strength import QueryTerms

ELLIPSIS = "…"
# A cut must save at least this many characters, or the event is quoted whole.
FOCUS_MIN_SAVED = 40
# A sentence runs to . ! ? before a space (or the end), to a CJK full stop, ! or ?, or
# to the end of the text.
_SENTENCE = re.compile(r"\S.*?(?:[.!?](?=\s|\Z)|[。！？]|\Z)")
# A leading cue label ("Melanie: ", "Decision: ", "记住："): context a cut must not lose.
_LEAD_LABEL = re.compile(r"[^\s:：]{1,24}(?: [^\s:：]{1,24})?(?::\s|：\s*)")


def focused(flat: str, terms: QueryTerms | None, min_saved: int) -> str:
    """``flat`` (one line) cut to its sentences that hold the query's strongest matched
    terms, "…" where something was left out; ``flat`` itself when nothing matched, or
    when the cut would save fewer than ``min_saved`` characters. Adjacent kept sentences
    stay as they were written, so every kept run is verbatim."""
    if terms is None or len(flat) <= min_saved:
        return flat
    label = _LEAD_LABEL.match(flat)
    start = label.end() if label else 0
    spans = _sentences(flat, start)
    if len(spans) < 2:
        return flat
    found = [terms.found(flat[a:b]) for a, b in spans]
    strong = [bool(f.strong) for f in found]
    keep = strong if any(strong) else [f.weight > 0 for f in found]
    if not any(keep):
        return flat
    parts: list[str] = [flat[:start].rstrip()] if start else []
    run: tuple[int, int] | None = None
    for (a, b), kept in zip(spans, keep, strict=True):
        if kept:
            run = (run[0] if run else a, b)
            continue
        if run:
            parts.append(flat[run[0] : run[1]])
            run = None
        if not parts or parts[-1] != ELLIPSIS:
            parts.append(ELLIPSIS)
    if run:
        parts.append(flat[run[0] : run[1]])
    out = " ".join(parts)
    return out if len(flat) - len(out) >= min_saved else flat


def _sentences(text: str, start: int) -> list[tuple[int, int]]:
    """The (start, end) of each sentence of ``text`` from ``start`` on."""
    return [m.span() for m in _SENTENCE.finditer(text, start)]
