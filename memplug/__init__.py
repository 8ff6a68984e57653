"""memplug: local, SQLite-backed long-term memory for LLM agent harnesses."""

from __future__ import annotations

__version__ = "0.1.0"
