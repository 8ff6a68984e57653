"""Text helpers shared by every layer: normalisation, scripts, token estimates, hashing,
the one spelling of a timestamp.

Normalisation is what makes capture idempotent and hashes comparable across hosts:
NFC, line endings folded to ``\\n``, control characters other than tab and newline
removed, trailing spaces cut from each line, and the whole text stripped.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import unicodedata
from datetime import UTC, datetime
from typing import Any

from memplug.base.errors import ValidationError

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_TRAILING_SPACE = re.compile(r"[ \t]+$", re.MULTILINE)
_PRIVATE_SPAN = re.compile(r"<private>.*?(?:</private>|\Z)", re.DOTALL | re.IGNORECASE)
PRIVATE_MARKER = "[private]"

# CJK ideographs, kana and hangul: the scripts written without spaces between words.
_CJK_CLASS = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
)
# The class's lowest code point: a text with no character as high holds no CJK.
_CJK_LOW = "\u3040"


def may_hold_cjk(text: str) -> bool:
    """Whether ``text`` has a character at or above the first CJK code point. Most text
    has none, and then never needs the CJK pattern: a class spanning tens of thousands
    of code points costs a fresh (hook) process ~10 ms to compile."""
    return not text.isascii() and max(text) >= _CJK_LOW


@functools.cache
def cjk_run() -> re.Pattern[str]:
    """A run of CJK characters, compiled at its first use (see :func:`may_hold_cjk`)."""
    return re.compile(f"[{_CJK_CLASS}]+")


def normalize_text(text: str) -> str:
    """Return the canonical form of ``text`` that memplug stores, hashes and searches."""
    text = unicodedata.normalize("NFC", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    # Only a line before a newline can keep trailing spaces past strip(); the regex
    # tries every space of the text, so most texts (this runs per event) skip it.
    if " \n" in text or "\t\n" in text:
        text = _TRAILING_SPACE.sub("", text)
    return text.strip()


def redact_private(text: str) -> tuple[str, int]:
    """Replace ``<private>…</private>`` spans (an unclosed one runs to the end) by a marker."""
    count = 0

    def _marker(_: re.Match[str]) -> str:
        nonlocal count
        count += 1
        return PRIVATE_MARKER

    return _PRIVATE_SPAN.sub(_marker, text), count


def count_cjk(text: str) -> int:
    if not may_hold_cjk(text):
        return 0
    return sum(len(run) for run in cjk_run().findall(text))


def estimate_tokens(text: str) -> int:
    """Estimate tokens as ``ceil(cjk / 1.6 + other / 4)``: CJK costs far more per character."""
    cjk = count_cjk(text)
    return math.ceil(cjk / 1.6 + (len(text) - cjk) / 4)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def short_hash(*parts: str, length: int = 16) -> str:
    """A stable hex digest of several strings (joined unambiguously), cut to ``length``."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return digest[:length]


def clip(text: str, limit: int, ellipsis: str = "…") -> str:
    """Cut ``text`` to at most ``limit`` characters, marking the cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(ellipsis))] + ellipsis


def canonical_json(value: Any) -> str:
    """The one JSON spelling memplug stores and hashes: compact, UTF-8, keys sorted."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A path glob as a regex over ``/``-separated paths: ``**`` crosses directories,
    ``*`` and ``?`` do not. The one glob rule for skill files and tool preconditions."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def format_time(value: datetime) -> str:
    """The one spelling of a timestamp memplug stores and exports: UTC, ``Z`` suffix."""
    # A zero offset is UTC already; astimezone would only copy it (this runs per event).
    if value.tzinfo is not None and value.utcoffset():
        value = value.astimezone(UTC)
    # isoformat pads years before 1000 to four digits (strftime('%Y') does not) and
    # writes the microseconds only when there are some.
    return value.replace(tzinfo=None).isoformat() + "Z"


def parse_time(value: str | None, name: str) -> str | None:
    """An ISO-8601 date or time as memplug stores it (UTC, ``Z``); a date means midnight."""
    if value is None or value == "":
        return None
    text = str(value).strip()
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(f"--{name} must be an ISO-8601 date or time, not '{text}'") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return format_time(parsed)


def tool_arguments(text: str, tool: str) -> dict[str, Any] | None:
    """The call's input object from its stored text (``NAME {json}``), or None."""
    body = text[len(tool) :] if text.startswith(tool) else text
    # Only an object is wanted, and it opens with "{" after blanks: plain text (a host
    # that stores the command as it was typed) skips the parser and its exception.
    if not body.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
