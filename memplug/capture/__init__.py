"""Capture: host events into append-only rows, large imports' rows, JSONL in and out."""
