"""The scripted readers of bench.pull_cost: what each path prints is what counts."""

from __future__ import annotations

import json
from pathlib import Path

from bench import nextday, pull_cost


def test_grep_reads_windows_around_the_rarest_word_first(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    lines = [json.dumps({"text": f"filler about the session {i}"}) for i in range(30)]
    lines.append(json.dumps({"text": "Rebased 22 commits onto main for the streaming branch"}))
    transcript.write_text("\n".join(lines) + "\n", encoding="utf-8")
    found = pull_cost.grep(transcript, "How many commits were rebased?", nextday.norm("Rebased 22"))
    # "commits" and "rebased" each hold one line; the first grep already shows the answer.
    assert found["found"] and found["calls"] == 1
    assert found["chars"] < len(lines[-1]) + 2
    missing = pull_cost.grep(transcript, "Which session was it?", nextday.norm("nowhere"))
    assert not missing["found"] and missing["calls"] == 1
    # At most GREP_HEAD windows of a word the whole file holds.
    assert missing["chars"] <= pull_cost.GREP_HEAD * (2 * pull_cost.GREP_CONTEXT + 10)


def test_pull_reads_the_search_then_expands_in_rank_order(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite"
    events = tmp_path / "e.jsonl"
    rows = [
        {"session_id": "s", "seq": 1, "type": "user/message", "role": "user",
         "text": "how many commits did the rebase take?"},
        {"session_id": "s", "seq": 2, "type": "assistant/message", "role": "assistant",
         "text": "The rebase is done: " + "details " * 200 + "Rebased 22 commits onto main."},
    ]  # fmt: skip
    events.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert pull_cost._memory(db, "import", str(events)) != ""
    found = pull_cost.pull(db, "how many commits did the rebase take", nextday.norm("Rebased 22"))
    assert found["found"] and found["calls"] >= 2 and found["chars"] > 1000
