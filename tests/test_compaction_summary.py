"""After a compaction the message adds only what the compaction summary does not hold:
the summary is visible context, compared word by word (docs/assembly.md, "Omission
reasons": ``in the compaction summary``)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from memplug.base.messages import Message, Source
from memplug.base.vocab import COMPACT_SUMMARY_FORM
from memplug.hosts import claude_hook
from memplug.recall.assemble import IN_SUMMARY
from memplug.recall.assemble.render import VisibleText, naming_words
from tests.conftest import CliResult

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "claude_code"
SID = "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000001"
SUMMARY_LINE = "2. charge() logs the card payload."


def _compacted_step(tmp_path: Path, cli: Callable[..., CliResult], summary: str) -> Path:
    """The fixture session, its summary's last part replaced by ``summary``, captured and
    assembled for SessionStart(compact); the database."""
    project = tmp_path / "projects" / "-home-ana-shop"
    shutil.copytree(FIXTURES, project)
    transcript = project / f"{SID}.jsonl"
    text = transcript.read_text(encoding="utf-8")
    assert SUMMARY_LINE in text
    transcript.write_text(text.replace(SUMMARY_LINE, summary), "utf-8")
    db = tmp_path / "memory.sqlite"
    payload = {"session_id": SID, "transcript_path": str(transcript), "cwd": "/home/ana/shop",
               "hook_event_name": "SessionStart", "source": "compact"}  # fmt: skip
    assert claude_hook.main(json.dumps(payload).encode(), db_path=str(db))
    return db


def _step(cli: Callable[..., CliResult], db: Path) -> tuple[set[str], set[tuple[str, str]]]:
    """The step's pushed evidence and index refs, and its (ref, reason) omissions there."""
    sections = cli("--db", str(db), "explain", "--json").json()["sections"]
    pushed = [s for s in sections if s["name"] in ("evidence", "index")]
    return (
        {line["ref"] for s in pushed for line in s["included"]},
        {(o["ref"], o["reason"]) for s in pushed for o in s["omitted"]},
    )


def test_what_the_summary_already_says_is_not_said_again(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    db = _compacted_step(tmp_path / "a", cli, SUMMARY_LINE)
    pushed, _ = _step(cli, db)
    assert len(pushed) >= 2, "the compaction's step pushes too little to compare with"
    ref = sorted(pushed)[0]
    line = cli("--db", str(db), "expand", ref, "--json").json()["events"][0]["text"]
    assert len(naming_words(line)) >= 3
    # The summary retells that line in its own words: the same names, in another order.
    retold = "2. " + " ".join(sorted(naming_words(line), reverse=True)) + "."
    pushed_after, omitted = _step(cli, _compacted_step(tmp_path / "b", cli, retold))
    assert ref not in pushed_after and (ref, IN_SUMMARY) in omitted
    # What the summary does not say is still pushed (the summary is the step's query, so
    # the rest may rank otherwise).
    assert pushed_after


def test_a_line_is_in_the_summary_only_when_every_naming_word_is() -> None:
    summary = Message(
        role="user",
        text="The cache key ignored tenant_id in src/cache.py; fixed in 4f2a9c.",
        source=Source(kind="host-generated", form=COMPACT_SUMMARY_FORM),
    )
    visible = VisibleText([summary])
    assert visible.in_summary("So: the cache key ignored tenant_id")
    assert not visible.in_summary("The cache key ignored tenant_id and region")
    # Too few words to tell, and text the summary never saw as a summary.
    assert not visible.in_summary("cache key")
    plain = VisibleText([Message(role="user", text=summary.text)])
    assert not plain.in_summary("So: the cache key ignored tenant_id")
    # CJK text holds no such words: never judged.
    assert not visible.in_summary("缓存键 忽略了 tenant_id cache ignored")
