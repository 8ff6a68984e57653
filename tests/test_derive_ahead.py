"""A large import's text analysis computed ahead by a helper process: the derived
state is the one computing everything in-process makes, row numbers included, and
stays so when the helper fails; a served function answers only the call it was
computed for."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from derived_state import dump, without_row_numbers

from memplug.derive import ahead, derive_ahead
from memplug.memory import Memory

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sessions"


def _source(path: Path) -> Path:
    """The fixture sessions (cues, calls, results, a compaction), each imported as
    three sessions of its own, interleaved: sessions derived after the first."""
    lines: list[str] = []
    for name in ("shop", "shop2", "branches", "other_project"):
        events = [json.loads(line) for line in (FIXTURES / f"{name}.jsonl").open()]
        for copy in range(3):
            for event in events:
                lines.append(json.dumps({**event, "session_id": f"{event['session_id']}-{copy}"}))
    path.write_text("\n".join(sorted(lines, key=lambda line: json.loads(line)["seq"])) + "\n")
    return path


def _import(db: Path, source: Path) -> dict[str, list[tuple[Any, ...]]]:
    with Memory.open(db) as memory:
        with source.open("rb") as stream:
            summary = memory.import_jsonl([(str(source), stream)])
        assert summary.extraction_error is None
        return dump(memory, row_numbers=True)


@pytest.fixture
def handed_over(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many results each session was handed (the helper is used for any import)."""
    sizes: list[int] = []
    real = ahead.hand_over

    def hand_over(tables: ahead.Tables) -> None:
        sizes.append(sum(len(table) for table in tables.values()))
        real(tables)

    monkeypatch.setattr(ahead, "hand_over", hand_over)
    monkeypatch.setattr(derive_ahead, "hand_over", hand_over)
    monkeypatch.setattr(derive_ahead, "AHEAD_EVENTS", 1)
    monkeypatch.setattr(derive_ahead, "_cores", lambda: 2)
    return sizes


def test_the_helper_hands_results_over_and_the_state_is_the_in_process_one(
    tmp_path: Path, handed_over: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _source(tmp_path / "events.jsonl")
    helped = _import(tmp_path / "helped.sqlite", source)
    # Every session but the first, derived while the helper starts, was handed results.
    assert len(handed_over) == 11 and all(size > 0 for size in handed_over)
    monkeypatch.setattr(derive_ahead, "AHEAD_EVENTS", 1 << 62)
    alone = _import(tmp_path / "alone.sqlite", source)
    assert len(handed_over) == 11
    assert helped == alone
    assert helped["memory_items"] and helped["work_records"] and helped["graph_edges"]


def test_a_helper_that_fails_leaves_the_same_state(
    tmp_path: Path, handed_over: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _source(tmp_path / "events.jsonl")
    monkeypatch.setattr(sys, "executable", "/bin/false")
    failed = _import(tmp_path / "failed.sqlite", source)
    assert handed_over == []
    monkeypatch.setattr(derive_ahead, "AHEAD_EVENTS", 1 << 62)
    assert failed == _import(tmp_path / "alone.sqlite", source)


@pytest.mark.parametrize("no_helper", ["one core", "no executable"])
def test_no_helper_without_a_second_core_or_an_interpreter_to_start(
    tmp_path: Path, handed_over: list[int], monkeypatch: pytest.MonkeyPatch, no_helper: str
) -> None:
    if no_helper == "one core":
        monkeypatch.setattr(derive_ahead, "_cores", lambda: 1)
    else:
        monkeypatch.setattr(sys, "executable", "")
    state = _import(tmp_path / "m.sqlite", _source(tmp_path / "events.jsonl"))
    assert handed_over == [] and state["memory_items"]


calls: list[tuple[str, int]] = []


@ahead.served
def _shout(text: str, times: int) -> str:
    calls.append((text, times))
    return text.upper() * times


def test_a_served_result_answers_only_its_own_arguments_once() -> None:
    with ahead.recording() as tables:
        assert _shout("ab", 2) == "ABAB"
    assert list(tables.values()) == [{("ab", 2): "ABAB"}]
    calls.clear()
    ahead.hand_over({name: {("ab", 2): "handed"} for name in tables})
    try:
        assert _shout("ab", 1) == "AB"  # other arguments: computed
        assert _shout("ab", 2) == "handed"
        assert _shout("ab", 2) == "ABAB"  # used once, then computed again
    finally:
        ahead.withdraw()
    assert calls == [("ab", 1), ("ab", 2)]


def test_a_rebuild_with_the_helper_derives_the_state_it_had(
    tmp_path: Path, handed_over: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(derive_ahead, "AHEAD_EVENTS", 1 << 62)
    db = tmp_path / "m.sqlite"
    imported = _import(db, _source(tmp_path / "events.jsonl"))
    monkeypatch.setattr(derive_ahead, "AHEAD_EVENTS", 1)
    with Memory.open(db) as memory:
        memory.rebuild()
        assert dump(memory, row_numbers=False) == without_row_numbers(imported)
    assert len(handed_over) == 11 and all(size > 0 for size in handed_over)
