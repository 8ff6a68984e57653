"""Upgrading memplug keeps a user's memory right.

A database written by every schema memplug shipped (fixtures/schemas/) opens, keeps its
events byte for byte and, once opened by a command, holds what a fresh import of its
events derives, ids included, with what a person did by hand kept. Derived state
records the versions of the code that made it; when they differ it is derived again:
to the end by a command, a bounded step at a time by hooks, resumably.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, SESSIONS, new_db, run_cli_here
from derived_state import conversation, dump
from freezegun import freeze_time
from hook_race import assert_quiet, fire_hooks, tool_hook_payload

import memplug.derive.extract
import memplug.derive.rederive
import memplug.derive.upgrades
import memplug.memory
from memplug.capture.transfer import export_jsonl
from memplug.derive.extract import ACTOR_CLI
from memplug.derive.skills import ingest, override_rule
from memplug.memory import Memory
from memplug.reports.diagnostics import status
from memplug.store.db import code_schema_version

SCHEMAS = FIXTURES / "schemas"
NEW_SESSION = FIXTURES / "claude_code" / "5e1f0c2a-7b3d-4e8f-9a10-c0ffee000002.jsonl"
VERSIONS = sorted(int(p.stem[1:]) for p in SCHEMAS.glob("v*.sqlite"))


def test_there_is_a_fixture_for_every_schema_shipped() -> None:
    """Every schema before the code's own has its fixture (the code's own schema is what
    every other test writes). A new migration ships, then its commit gets a line in
    bench/schema_fixtures.py's COMMITS and `python -m bench.schema_fixtures --only N`."""
    assert list(range(1, VERSIONS[-1] + 1)) == VERSIONS
    assert VERSIONS[-1] >= code_schema_version() - 1, "build the fixture of the last schema"


def copy_of(version: int, tmp_path: Path) -> Path:
    path = tmp_path / f"v{version:02d}" / "memory.sqlite"
    path.parent.mkdir(mode=0o700)
    shutil.copyfile(SCHEMAS / f"v{version:02d}.sqlite", path)
    path.chmod(0o600)
    return path


def fresh_import_of(memory: Memory, path: Path) -> dict[str, list[tuple[object, ...]]]:
    """What a new database derives from ``memory``'s exported events and the actions a
    person took in it (replayed at the same time, by the same actor)."""
    exported = path.parent.parent / "exported.jsonl"
    with open(exported, "w", encoding="utf-8") as out:
        export_jsonl(memory.store, out)
    actions = memory.db.conn.execute(
        "SELECT memory_id, action, actor, at, note FROM memory_actions ORDER BY id"
    ).fetchall()
    with Memory.open(new_db(path)) as fresh:
        with open(exported, "rb") as stream:
            fresh.import_jsonl([(exported.name, stream)])
        for memory_id, action, actor, at, note in actions:
            assert (action, actor, json.loads(note).get("note")) == ("retract", ACTOR_CLI, None)
            with freeze_time(at.rstrip("Z")):
                fresh.extractor.retract(memory_id, actor=actor)
        return dump(fresh)


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"schema{v}")
def test_an_old_database_migrates_keeps_its_events_and_derives_like_a_fresh_import(
    version: int, tmp_path: Path
) -> None:
    path = copy_of(version, tmp_path)
    old = run_cli_here("--db", str(path), "status", "--json")
    assert old.returncode == 0, old.stderr
    shown = json.loads(old.stdout)
    if version <= 2:  # that memplug did not extract on import: every session lags
        assert shown["derivation"]["stale"] is False
        assert all(s["extraction_lag"] for s in shown["sessions"])
    else:
        assert shown["derivation"]["stale"] is True and shown["derivation"]["events_left"] > 0
    # A reading command people run: it migrates and derives again, nothing else asked.
    items = run_cli_here("--db", str(path), "items", "--json")
    assert items.returncode == 0 and items.stderr == ""
    exported = run_cli_here("--db", str(path), "export")
    assert exported.stdout == (SCHEMAS / f"v{version:02d}.export.jsonl").read_text()
    with Memory.open(path, create=False) as memory:
        assert memory.store.schema_version() == code_schema_version()
        assert status(memory, check_integrity=True)["derivation"]["stale"] is False
        assert memory.store.integrity_check() == ["ok"]
        derived = dump(memory)
        want = fresh_import_of(memory, tmp_path / "fresh" / "memory.sqlite")
    assert derived == want
    assert derived["memory_items"] and derived["work_records"] and derived["timeline_entries"]
    listed = {i["id"]: i["status"] for i in json.loads(items.stdout)["items"]}
    retracted = [row for row in derived["memory_items"] if "Redis" in str(row)]
    if version >= 3:  # a person retracted the item naming Redis, and it stays retracted
        assert [listed[str(row[0])] for row in retracted] == ["retracted"]


def stale_by_a_new_extractor(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process runs as a memplug whose extractor logic changed (in its source too,
    which a command's cheap check reads)."""
    version = memplug.derive.rederive.EXTRACTOR_VERSION
    monkeypatch.setattr(memplug.derive.rederive, "EXTRACTOR_VERSION", version + 1)
    monkeypatch.setattr(memplug.derive.upgrades, "source_digest", lambda: "edited")


def test_a_command_tells_current_state_without_importing_the_rules(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    many_sessions(path, sessions=1)
    run_cli_here("--db", str(path), "items")  # records the deriving sources' digest
    code = (
        "import sys; from memplug.memory import Memory; "
        "m = Memory.open(sys.argv[1], readonly=True, upgrade=True); "
        "assert not m.derivation_state()['stale']; "
        "print(sorted(n for n in sys.modules "
        "if n.startswith(('memplug.derive.extract', 'memplug.derive.cues'))))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "[]\n", "")


def shop_with_person_actions(path: Path, skills: Path) -> dict[str, object]:
    """The fixture sessions with a retraction, a promotion and a rule override."""
    with Memory.open(new_db(path)) as memory:
        for name in ("shop.jsonl", "shop2.jsonl", "other_project.jsonl"):
            with open(SESSIONS / name, "rb") as stream:
                memory.import_jsonl([(name, stream)])
        items = memory.store.items.find()
        kept = next(i for i in items if i.status == "active" and i.kind == "constraint")
        proposal = next(i for i in items if i.kind == "proposal" and i.status == "active")
        memory.extractor.retract(kept.id, actor=ACTOR_CLI, note="not any more")
        memory.extractor.promote(proposal.id, kind="decision", actor=ACTOR_CLI)
        ingest(memory.store, skills, memory.config.skills)
        rule = override_rule(memory.store, "release:notes-1", category="constraint", active=False)
        return {"retracted": kept.id, "promoted": proposal.id, "rule": rule.id}


def test_an_upgrade_keeps_what_a_person_did_and_ends_as_a_clean_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.sqlite"
    done = shop_with_person_actions(path, FIXTURES / "skills")
    with Memory.open(path) as before:
        clean = dump(before)
    stale_by_a_new_extractor(monkeypatch)
    with Memory.open(path, readonly=True) as reading:
        assert reading.derivation_state()["stale"]
    with Memory.open(path, readonly=True, upgrade=True) as memory:
        state = memory.derivation_state()
        assert not state["stale"] and state["derived_with"]["extractor"] == 2
        assert memory.store.items.get(str(done["retracted"])).status == "retracted"
        promoted = memory.store.items.get(str(done["promoted"]))
        assert (promoted.kind, promoted.evidence_type) == ("decision", "user_explicit")
        rule = memory.store.skills.rule(str(done["rule"]))
        assert rule is not None and (rule.category, rule.active) == ("constraint", False)
        # The same rules in this test: re-derived, the state is what it was.
        assert dump(memory) == clean
    with Memory.open(path) as memory:
        memory.rebuild()
        assert dump(memory) == clean


def test_a_change_that_alters_derivation_takes_effect_without_a_rebuild(tmp_path: Path) -> None:
    """extraction.extractProposals is part of the recorded versions: turning it off makes
    proposals go, as a fresh import under that setting would have them."""
    path = new_db(tmp_path / "m.sqlite")
    run_cli_here("--db", str(path), "import", str(SESSIONS / "shop.jsonl"))
    off = tmp_path / "memory.toml"
    off.write_text("[extraction]\nextractProposals = false\n")
    fresh = new_db(tmp_path / "fresh.sqlite")
    run_cli_here("--db", str(fresh), "--config", str(off), "import", str(SESSIONS / "shop.jsonl"))
    shown = run_cli_here("--db", str(path), "--config", str(off), "status", "--json")
    derivation = json.loads(shown.stdout)["derivation"]
    assert derivation["stale"] and derivation["changed"] == ["proposals"]
    items = run_cli_here("--db", str(path), "--config", str(off), "items", "--kind", "proposal")
    assert items.returncode == 0
    with (
        Memory.open(path, config={"extraction": {"extractProposals": False}}) as upgraded,
        Memory.open(fresh, config={"extraction": {"extractProposals": False}}) as want,
    ):
        assert not upgraded.derivation_state()["stale"]
        assert not [i for i in upgraded.store.items.find() if i.kind == "proposal"]
        assert dump(upgraded) == dump(want)


def many_sessions(path: Path, sessions: int = 8) -> None:
    with Memory.open(new_db(path)) as memory:
        for n in range(sessions):
            memory.ingest(
                conversation(
                    f"s{n}",
                    "Note: the API port is 8080.",
                    f"Decision: we ship build {n} on Friday.",
                    "A: I suggest we also tag the release.",
                    "Actually, the API port is 9090.",
                )
            )


KILL_AFTER = """
import os, sys
import memplug.derive.extract as extract
import memplug.derive.rederive
import memplug.memory as memory
import memplug.derive.upgrades as upgrades
from memplug.memory import Memory

memplug.derive.rederive.EXTRACTOR_VERSION += 1
upgrades.source_digest = lambda: "edited"
real = extract.Extractor.rederive
done = []

def rederive(self, session_id):
    if len(done) == int(sys.argv[2]):
        os.kill(os.getpid(), 9)
    done.append(session_id)
    return real(self, session_id)

extract.Extractor.rederive = rederive
Memory.open(sys.argv[1], upgrade=True).close()
"""


def test_an_upgrade_killed_part_way_resumes_and_ends_identical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.sqlite"
    many_sessions(path)
    with Memory.open(path) as memory:
        clean = dump(memory)
    killed = subprocess.run(
        [sys.executable, "-c", KILL_AFTER, str(path), "3"], capture_output=True, timeout=60
    )
    assert killed.returncode == -signal.SIGKILL
    stale_by_a_new_extractor(monkeypatch)
    with Memory.open(path, readonly=True) as memory:
        state = memory.derivation_state()
        assert state["stale"] and state["rederiving"]["after"] == "s2"
        report = status(memory, check_integrity=False)["derivation"]
        assert report["events_left"] == 5 * 4  # s3 … s7
    with Memory.open(path) as memory:
        report = memory.upgrade_derived()
        assert (report.state, report.sessions) == ("done", [f"s{n}" for n in range(3, 8)])
        assert dump(memory) == clean
        assert memory.store.integrity_check() == ["ok"]


def test_a_bounded_step_leaves_what_does_not_fit_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.sqlite"
    many_sessions(path)
    stale_by_a_new_extractor(monkeypatch)
    with Memory.open(path) as memory:
        nothing = memory.upgrade_derived(budget_ms=0)
        assert (nothing.state, nothing.sessions) == ("partial", [])
        # Planned at 5 events/ms: 4-event sessions need 0.8 ms each.
        some = memory.upgrade_derived(budget_ms=2)
        assert some.state == "partial" and 1 <= len(some.sessions) <= 2
        assert status(memory, check_integrity=False)["derivation"]["stale"]
        # The next write's own step (UPGRADE_STEP_MS) has room for the rest.
        memory.ingest(conversation("s0", "hello", "again", "x", "y", "more"), origin="api")
        assert not memory.derivation_state()["stale"]
        assert memory.upgrade_derived().state == "current"


def test_status_says_stale_and_what_happens_then_a_command_does_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.sqlite"
    many_sessions(path, sessions=2)
    stale_by_a_new_extractor(monkeypatch)
    text = run_cli_here("--db", str(path), "status")
    line = next(x for x in text.stdout.splitlines() if x.startswith("derived"))
    assert line.startswith("derived    STALE: made by other versions of extractor; ")
    assert "the next memory command other than status derives 8 events again" in line
    shown = json.loads(run_cli_here("--db", str(path), "status", "--json").stdout)
    assert shown["derivation"]["stale"] and shown["derivation"]["changed"] == ["extractor"]
    assert run_cli_here("--db", str(path), "search", "port").returncode == 0
    shown = json.loads(run_cli_here("--db", str(path), "status", "--json").stdout)
    assert shown["derivation"] == {
        "stale": False,
        "derived_with": shown["derivation"]["code"],
        "code": shown["derivation"]["code"],
    }


@pytest.mark.slow
def test_twelve_hooks_on_an_old_database_migrate_and_upgrade_it_once(tmp_path: Path) -> None:
    path = copy_of(3, tmp_path)
    assert_quiet(path, fire_hooks(path, tmp_path, source=NEW_SESSION))
    # The turn's end derives what the tool hooks captured, upgrades included.
    stop = json.dumps(
        {**json.loads(tool_hook_payload(tmp_path, NEW_SESSION)), "hook_event_name": "Stop"}
    )
    command = [sys.executable, "-m", "memplug.cli", "--db", str(path), "hook", "claude-code"]
    ended = subprocess.run(command, input=stop, capture_output=True, text=True)
    assert_quiet(path, [ended])
    with Memory.open(path, create=False) as memory:
        # 56 small events fit one hook's step: the file is current without a command.
        assert not memory.derivation_state()["stale"]
        derived = dump(memory)
        want = fresh_import_of(memory, tmp_path / "fresh" / "memory.sqlite")
    assert derived == want


def test_a_hook_takes_what_fits_its_step_and_leaves_a_big_session_to_a_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session planned over a hook's step (3,000 events at 5 per ms: 600 ms > 500) is
    never re-derived by a hook; the hook's own small session is. (How long the hook took
    is the plan's business: a wall clock on a shared machine proves nothing here.)"""
    path = tmp_path / "m.sqlite"
    with Memory.open(new_db(path)) as memory:
        memory.ingest(
            conversation("zz-big", *[f"Decision: we ship part {n}." for n in range(3000)])
        )
    stale_by_a_new_extractor(monkeypatch)
    code = (
        "import sys, memplug.derive.rederive as e, memplug.derive.upgrades as u; "
        "e.EXTRACTOR_VERSION += 1; "
        "u.source_digest = lambda: 'edited'; from memplug.cli import main; "
        "main(['--db', sys.argv[1], 'hook', 'claude-code'])"
    )
    # A Stop hook: tool hooks leave derivation, upgrades included, to the turn's end.
    payload = json.dumps(
        {**json.loads(tool_hook_payload(tmp_path, NEW_SESSION)), "hook_event_name": "Stop"}
    )
    hooked = subprocess.run(
        [sys.executable, "-c", code, str(path)], input=payload, capture_output=True, text=True
    )
    assert (hooked.returncode, hooked.stdout, hooked.stderr) == (0, "", "")
    with Memory.open(path, readonly=True) as memory:
        state = memory.derivation_state()
        assert state["stale"] and state["rederiving"]["after"] == NEW_SESSION.stem
        assert memory.store.events.latest_errors() == []
    assert run_cli_here("--db", str(path), "items").returncode == 0
    with Memory.open(path, readonly=True) as memory:
        assert not memory.derivation_state()["stale"]
