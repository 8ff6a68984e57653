"""Coverage reasons (``docs/search.md`` lists them with what each means) and the
:class:`~memplug.retrieve.models.Coverage` a result reports them in."""

from __future__ import annotations

from collections.abc import Iterable

from memplug.retrieve.models import Coverage, ErrorInfo

CANDIDATE_BUDGET = "candidate_budget"
TERMS_CAPPED = "query_terms_capped"
LIKE_WINDOW = "like_scan_window"
LIKE_CAP = "like_fallback_cap"
TRUNCATED = "truncated_events"
REGEX_TIMEOUT = "regex_timeout"
REGEX_HAYSTACK = "regex_haystack_cap"
PARENT_CYCLE = "parent_cycle"
STALE_POINTER = "stale_pointer"
UNKNOWN_SESSION = "unknown_session"


def coverage(reasons: Iterable[str]) -> Coverage:
    listed = sorted(set(reasons))
    return Coverage(complete=not listed, reasons=listed)


def stale(message: str) -> Coverage:
    return Coverage(
        complete=False,
        reasons=[STALE_POINTER],
        error=ErrorInfo(code=STALE_POINTER, message=message),
    )
