"""Secret-looking strings: well-known key and token shapes, found before text is injected.

Defence in depth, not a guarantee. The assembler omits any line in which
:func:`find_secrets` finds something (reason ``redacted``), so a key that reached the
event log is not pasted back into the model's context by memplug. A secret with no
recognisable shape (a bare password, a key of an unknown service) is not found; the
guarantee that text never reaches the log at all is ``<private>…</private>``.

Why a pattern list rather than ``detect-secrets``: this runs on the pre-step path,
whose whole budget is 25 ms at p95. Measured here, ``detect-secrets`` 1.5 takes about
130–200 ms to import (it pulls in ``requests``) and ~1.3 ms a line with its default
plugins, and its entropy and keyword plugins flag ordinary prose; this module scans a
3,000-token message in well under a millisecond. The patterns follow the provider
prefixes documented by the services themselves and collected by gitleaks and
detect-secrets; each is anchored on a literal prefix or keyword so a miss costs one
substring test (see ``docs/security.md`` for the list and its limits).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from functools import cache

from msgspec import Struct


class SecretSpan(Struct, frozen=True, order=True):
    """``text[start:end]`` looks like a secret of ``kind``."""

    start: int
    end: int
    kind: str


class _Rule(Struct, frozen=True):
    kind: str
    # Compiled on first use (:func:`_compiled`): most texts hold no rule's hint, and
    # compiling every rule at import cost each prompt hook process a few milliseconds.
    pattern: str
    # Lower-case substrings one of which must occur for the pattern to be tried at all.
    hints: tuple[str, ...]
    # The capture group that holds the secret (0: the whole match).
    group: int = 0


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _rule(kind: str, pattern: str, hints: tuple[str, ...], group: int = 0) -> _Rule:
    return _Rule(kind, pattern, hints, group)


# Boundaries: a token must not be glued to more token characters on either side, or
# a hash or identifier that merely contains a prefix would match.
_B = r"(?<![A-Za-z0-9_\-])"
_E = r"(?![A-Za-z0-9_\-])"

RULES: tuple[_Rule, ...] = (
    _rule(
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]{0,16384}?-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----)?",
        ("private key",),
    ),
    _rule(
        "aws_access_key_id",
        rf"{_B}(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{{16}}{_E}",
        ("akia", "asia", "abia", "acca", "a3t"),
    ),
    _rule(
        "aws_secret_access_key",
        r"(?i)aws[\w\-.]{0,20}?secret[\w\-.]{0,20}?['\"]?\s*[:=]\s*['\"]?"
        r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        ("secret",),
        group=1,
    ),
    _rule(
        "github_token",
        rf"{_B}(?:gh[pousr]_[A-Za-z0-9]{{36,255}}|github_pat_\w{{22,255}}){_E}",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _rule(
        "gitlab_token",
        rf"{_B}gl(?:pat|dt|ptt|rt)-[A-Za-z0-9_\-]{{20,}}{_E}",
        ("glpat-", "gldt-", "glptt-", "glrt-"),
    ),
    _rule("slack_token", rf"{_B}xox[abposre]-[A-Za-z0-9\-]{{10,}}{_E}", ("xox",)),
    _rule(
        "slack_webhook",
        r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/_\-]{20,}",
        ("hooks.slack.com",),
    ),
    _rule(
        "stripe_key",
        rf"{_B}(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{{16,}}{_E}",
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
    ),
    _rule("anthropic_key", rf"{_B}sk-ant-[A-Za-z0-9_\-]{{20,}}{_E}", ("sk-ant-",)),
    _rule("openai_key", rf"{_B}sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{{20,}}{_E}", ("sk-",)),
    _rule("google_api_key", rf"{_B}AIza[0-9A-Za-z_\-]{{35}}{_E}", ("aiza",)),
    _rule("google_oauth_token", rf"{_B}ya29\.[0-9A-Za-z_\-]{{20,}}", ("ya29.",)),
    _rule(
        "jwt",
        rf"{_B}eyJ[A-Za-z0-9_\-]{{8,}}\.eyJ[A-Za-z0-9_\-]{{8,}}\.[A-Za-z0-9_\-]{{8,}}",
        ("eyj",),
    ),
    _rule("huggingface_token", rf"{_B}hf_[A-Za-z0-9]{{30,}}{_E}", ("hf_",)),
    _rule("npm_token", rf"{_B}npm_[A-Za-z0-9]{{36}}{_E}", ("npm_",)),
    _rule("pypi_token", rf"{_B}pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{{50,}}", ("pypi-",)),
    _rule("sendgrid_key", rf"{_B}SG\.[A-Za-z0-9_\-]{{22}}\.[A-Za-z0-9_\-]{{43}}{_E}", ("sg.",)),
    _rule("twilio_key", rf"{_B}SK[0-9a-f]{{32}}{_E}", ("sk",)),
    _rule("shopify_token", rf"{_B}shp(?:at|ca|pa|ss)_[a-fA-F0-9]{{32}}{_E}", ("shp",)),
    _rule("digitalocean_token", rf"{_B}do[oprt]_v1_[a-f0-9]{{64}}{_E}", ("_v1_",)),
    _rule("telegram_bot_token", rf"{_B}\d{{8,10}}:AA[A-Za-z0-9_\-]{{33}}{_E}", (":aa",)),
    _rule("azure_storage_key", r"AccountKey=([A-Za-z0-9+/]{60,}={0,2})", ("accountkey=",), group=1),
    _rule(
        "url_credentials",
        r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://[^\s:/@'\"]{1,64}:([^\s@/'\"]{3,128})@",
        ("://",),
        group=1,
    ),
    _rule(
        "authorization_header",
        r"(?i)\b(?:authorization\s*[:=]\s*['\"]?\s*(?:bearer|basic|token)|bearer)\s+"
        r"([A-Za-z0-9._~+/\-]{16,}=*)",
        ("bearer", "authorization"),
        group=1,
    ),
    _rule(
        "assigned_secret",
        r"(?i)(?<![A-Za-z0-9])(?:password|passwd|pwd|passphrase|secret|client[_-]?secret|"
        r"api[_-]?key|apikey|access[_-]?token|auth[_-]?token|secret[_-]?key|private[_-]?key)"
        r"['\"]?\s*[:=]\s*['\"]?([A-Za-z0-9_\-+/=!@#$%^&*~]{8,128})(?![\w.(\[])",
        ("pass", "pwd", "secret", "key", "token"),
        group=1,
    ),
)


def _looks_random(value: str) -> bool:
    """An assigned value counts only when it mixes character classes: ``hunter2hunter2``
    or ``Zk8#…`` do, ``get_password`` and ``changeme_later`` do not."""
    classes = (
        any(c.islower() for c in value),
        any(c.isupper() for c in value),
        any(c.isdigit() for c in value),
        any(not c.isalnum() and c != "_" for c in value),
    )
    return sum(classes) >= 2


def find_secrets(text: str) -> list[SecretSpan]:
    """Every span of ``text`` that looks like a credential, sorted, overlaps merged.

    Linear in ``len(text)`` for each rule whose hint occurs; nothing backtracks beyond
    a bounded quantifier."""
    if not text:
        return []
    lowered = text.lower()
    spans: list[SecretSpan] = []
    for rule in RULES:
        if not any(hint in lowered for hint in rule.hints):
            continue
        for match in _compiled(rule.pattern).finditer(text):
            value = match.group(rule.group)
            if rule.kind == "assigned_secret" and not _looks_random(value):
                continue
            spans.append(SecretSpan(match.start(rule.group), match.end(rule.group), rule.kind))
    return _merge(spans)


def secret_lines(lines: Sequence[str]) -> set[int]:
    """Indexes of the ``lines`` that hold a secret, from one scan of their joined text
    (a scan per line repeats the hint tests for each; this is the assembler's path)."""
    found: set[int] = set()
    spans = find_secrets("\n".join(lines))
    if not spans:
        return found
    starts, offset = [], 0
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    for span in spans:
        first = bisect_right(starts, span.start) - 1
        last = bisect_right(starts, max(span.start, span.end - 1)) - 1
        found.update(range(first, last + 1))
    return found


def redact_secrets(text: str, marker: str = "[redacted]", *, named: bool = False) -> str:
    """``text`` with every secret span replaced by ``marker`` (for logs and messages);
    ``named`` makes each marker name the kind it withheld (``[redacted:aws_access_key]``)."""
    out, last = [], 0
    for span in find_secrets(text):
        out.append(text[last : span.start])
        out.append(f"[redacted:{span.kind}]" if named else marker)
        last = span.end
    out.append(text[last:])
    return "".join(out)


# Shapes that a specific rule may also match: the specific kind names the span.
_GENERIC = frozenset({"assigned_secret", "authorization_header", "url_credentials"})


def _merge(spans: list[SecretSpan]) -> list[SecretSpan]:
    spans.sort(key=lambda s: (s.start, s.kind in _GENERIC, -s.end))
    merged: list[SecretSpan] = []
    for span in spans:
        if merged and span.start < merged[-1].end:
            last = merged[-1]
            if span.end > last.end:
                merged[-1] = SecretSpan(last.start, span.end, last.kind)
            continue
        merged.append(span)
    return merged
