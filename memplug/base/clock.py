"""The one wall clock: when memplug itself did something (a record written, a migration
applied), never an input to what is derived."""

from __future__ import annotations


def utc_now() -> str:
    """Wall-clock time for records about our own actions (never for derived state)."""
    from datetime import UTC, datetime  # not at import: a hook with nothing new never asks

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
