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
    from memplug.retrieve.precision import QueryTerms

ELLIPSIS = "…"
# A cut must save at least this many characters, or the event is quoted whole.
FOCUS_MIN_SAVED = 40
# A sentence ends at . ! ? (then a space) or at a CJK full stop, ! or ?.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？])")
# A leading cue label ("Melanie:", "Decision:"): context a cut must not lose.
_LEAD_LABEL = re.compile(r"[^\s:：]{1,24}(?: [^\s:：]{1,24})?[:：]\s")


def focused(flat: str, terms: QueryTerms | None, min_saved: int) -> str:
    """``flat`` (one line) cut to its sentences that hold the query's strongest matched
    terms, "…" where something was left out; ``flat`` itself when nothing matched, or
    when the cut would save fewer than ``min_saved`` characters."""
    if terms is None or len(flat) <= min_saved:
        return flat
    label = _LEAD_LABEL.match(flat)
    head = label.group(0) if label else ""
    sentences = [s for s in _SENTENCE_END.split(flat[len(head) :]) if s]
    if len(sentences) < 2:
        return flat
    found = [terms.found(s) for s in sentences]
    strong = [bool(f.strong) for f in found]
    keep = strong if any(strong) else [f.weight > 0 for f in found]
    if not any(keep):
        return flat
    parts: list[str] = [head.rstrip()] if head else []
    for i, sentence in enumerate(sentences):
        if keep[i]:
            parts.append(sentence)
        elif not parts or parts[-1] != ELLIPSIS:
            parts.append(ELLIPSIS)
    out = " ".join(parts)
    return out if len(flat) - len(out) >= min_saved else flat
