"""Options an assistant offered, and the one a short reply picks.

An agent asks "A) poll every 30 s, B) push from a webhook?" and the person answers "B".
The reply alone says nothing; resolved against the options of the assistant's previous
message it is a decision whose text is the option's own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memplug.base.patterns import lazy

# An option line: "A) text", "**B.** text", "2. **Quick fix** - text", "Option A: text",
# "Version B: text", "- **Option 2** — text".
_LINE = lazy(
    r"^\s*(?:[-*•]\s+)?(?:#{1,6}\s*)?(?:\*\*|__)?(?:(?:option|approach|choice|version|variant)\s+)?"
    r"(?P<label>[A-H]|[1-9])(?:[).:]|\*\*|\s+[-–—])\s*(?:\*\*|__)?\s*(?P<text>\S.*)$",
    re.IGNORECASE,
)
# A table row: "| **B. Branch-only** | Only commits not in main |".
_ROW = lazy(
    r"^\s*\|\s*(?:\*\*)?(?:(?:option|approach|version|variant)\s+)?(?P<label>[A-H]|[1-9])[.):]?\s+"
    r"(?P<name>[^|]*?)\s*(?:\*\*)?\s*\|\s*(?P<text>[^|]*?)\s*\|",
    re.IGNORECASE,
)
# Options given inline, in one line: "Option 1: keep the cron job. Option 2: use a queue."
# Each runs to the next one or to the end of its sentence; the word "option" (or
# approach, choice) is needed, since a bare "A)" inside prose is no offer.
_INLINE = lazy(
    r"\b(?:option|approach|choice)\s+(?P<label>[A-H]|[1-9])\s*[:)]\s*(?P<text>\S.*?)"
    r"(?=[.;]?\s*\b(?:option|approach|choice)\s+(?:[A-H]|[1-9])\s*[:)]|[.;!?](?:\s|$)|$)",
    re.IGNORECASE,
)
# The words an inline offer needs. A text that is ASCII and holds none (most messages)
# has no inline offer; under IGNORECASE a dotted or dotless i (İ, ı) matches "i" too,
# so any other text is scanned in full.
_INLINE_WORDS = ("option", "approach", "choice")
_ORDINALS = {"first": 0, "second": 1, "third": 2, "fourth": 3}
_MARKUP = lazy(r"\*\*|__")


def offered_options(texts: Sequence[str]) -> dict[str, tuple[int, str]]:
    """The options the assistant's messages offered, by label: the index of the message
    that holds each and the option's text. A later list replaces an earlier one's labels;
    fewer than two options is no choice at all."""
    found: dict[str, tuple[int, str]] = {}
    for index, text in enumerate(texts):
        lowered = text.lower()
        offers = not text.isascii() or any(map(lowered.__contains__, _INLINE_WORDS))
        for line in text.splitlines():
            inline = list(_INLINE.finditer(line)) if offers else []
            if len(inline) >= 2:
                for option in inline:
                    found[option.group("label").upper()] = (index, _plain(option.group("text")))
                continue
            row = _ROW.match(line)
            if row is not None:
                label = row.group("label").upper()
                body = f"{row.group('name')}: {row.group('text')}".strip(" :")
            else:
                match = _LINE.match(line)
                if match is None:
                    continue
                label, body = match.group("label").upper(), match.group("text")
            body = _plain(body)
            # "A) Which format should it use?" asks the person; it offers nothing.
            if body and not body.endswith("?"):
                found[label] = (index, body)
    return found if len(found) >= 2 else {}


def _plain(text: str) -> str:
    return " ".join(_MARKUP.sub("", text).split()).rstrip(" :")


def resolve_pick(
    match: re.Match[str], options: dict[str, tuple[int, str]]
) -> tuple[int, str] | None:
    """The offered option a pick names (``pick``: a label; ``nth``: an ordinal)."""
    if not options:
        return None
    groups = match.groupdict()
    if groups.get("pick"):
        return options.get(str(groups["pick"]).upper())
    nth = str(groups.get("nth") or "").lower()
    ordered = [options[key] for key in sorted(options, key=_label_order)]
    position = len(ordered) - 1 if nth == "last" else _ORDINALS.get(nth)
    if position is None or position >= len(ordered):
        return None
    return ordered[position]


def _label_order(label: str) -> tuple[bool, str]:
    return (label.isdigit(), label)
