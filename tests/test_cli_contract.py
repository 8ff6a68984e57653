"""What the README and docs promise of the commands, tried as a new user would
(issue 15): exit codes, paging text, what inspect and status show."""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest
from conftest import SESSIONS

from memplug.capture.transfer import IMPORT_BATCH


@pytest.fixture
def shop_db(cli, tmp_path: Path) -> Path:
    db = tmp_path / "memory.sqlite"
    assert cli("--db", str(db), "import", str(SESSIONS / "shop.jsonl")).returncode == 0
    return db


def test_export_of_an_unknown_session_is_exit_2_with_nothing_written(cli, shop_db: Path) -> None:
    done = cli("--db", str(shop_db), "export", "--session", "shop-1", "--session", "nope")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == "Error: no session 'nope' in this database\n"


def test_export_json_adds_a_summary_on_stderr(cli, shop_db: Path) -> None:
    done = cli("--db", str(shop_db), "export", "--json")
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert json.loads(done.stderr) == {"events": len(lines)}
    assert all(json.loads(line)["session_id"] == "shop-1" for line in lines)


def test_search_pages_say_which_hits_they_hold(cli, shop_db: Path) -> None:
    first = cli("--db", str(shop_db), "search", "port", "--limit", "3")
    total = cli("--db", str(shop_db), "search", "port", "--json").json()["total"]
    assert total > 6
    assert first.stdout.startswith(f"scope: global · hits 1–3 of {total}\n")
    token = re.search(r"--next (\S+)", first.stdout)
    assert token is not None
    second = cli("--db", str(shop_db), "search", "--next", token[1])
    assert second.stdout.startswith(f"scope: global · hits 4–6 of {total}")
    data = cli("--db", str(shop_db), "search", "--next", token[1], "--json").json()
    assert data["offset"] == 3 and len(data["hits"]) == 3


@pytest.mark.parametrize("query", ["", "  ", "?", "-"])
def test_a_query_with_no_terms_is_empty_and_complete_even_over_truncated_text(
    cli, tmp_path: Path, query: str
) -> None:
    db = tmp_path / "memory.sqlite"
    (tmp_path / "memory.toml").write_text("[capture]\nmaxTextChars = 1000\n")
    long = {"session_id": "s", "seq": 1, "type": "user/message", "role": "user",
            "text": "word " * 400 + "tailword"}  # fmt: skip
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps(long) + "\n")
    assert cli("--db", str(db), "import", str(events)).returncode == 0
    # The scope really holds a truncated event: a term only its unindexed tail holds
    # says so (coverage is local: a term in the indexed head is found there).
    worded = cli("--db", str(db), "search", "tailword", "--json").json()
    assert worded["coverage"]["reasons"] == ["truncated_events"]
    done = cli("--db", str(db), "search", query)
    assert done.returncode == 0
    # Nothing asked is an authoritative nothing; punctuation the index cannot look up
    # is not proof of absence (short_terms) — and neither cites the truncated event.
    coverage = (
        "coverage: complete — this empty result is authoritative"
        if not query.strip()
        else "coverage: INCOMPLETE (short_terms) — absence here is not proof\n"
        "  next: one- and two-letter words are not looked up alone: use a longer word"
    )
    assert done.stdout == f"scope: global\nno hits\n{coverage}\n"


def test_inspect_shows_an_events_type_and_tool(cli, shop_db: Path) -> None:
    done = cli("--db", str(shop_db), "inspect", "shop-1:5")
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert lines[:2] == ["event      shop-1:5", "type       tool/call  tool bash"]
    message = cli("--db", str(shop_db), "inspect", "shop-1:1").stdout.splitlines()[1]
    assert re.fullmatch(r"type       \S+/\S+", message)


def test_status_names_a_hook_error_once(cli, tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    assert cli("--db", str(db), "hook", "claude-code", input="garbage").returncode == 0
    assert cli("--db", str(db), "hook", "claude-code", input="{}").returncode == 0
    status = cli("--db", str(db), "status").stdout
    errors = [line for line in status.splitlines() if "[hook]" in line]
    assert len(errors) == 2
    assert all(line.count("[hook]") == 1 for line in errors)
    assert any("the hook payload is not JSON" in line for line in errors)


def _events(n: int, start: int = 0) -> str:
    return "".join(
        json.dumps({"session_id": f"s{i % 3}", "seq": i // 3 + 1, "type": "user/message",
                    "role": "user", "text": f"Decision: use port {i} for the API."
                    if i % 1000 == 0 else f"note {i}"}) + "\n"
        for i in range(start, n)
    )  # fmt: skip


def test_ctrl_c_during_import_says_what_was_committed_and_how_to_finish(
    cli, tmp_path: Path
) -> None:
    db = tmp_path / "memory.sqlite"
    batch = IMPORT_BATCH
    proc = subprocess.Popen(
        [sys.executable, "-m", "memplug.cli", "--db", str(db), "import", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None
    # Two batches commit; the process then waits on stdin for the rest of the third.
    proc.stdin.write(_events(2 * batch + 100))
    proc.stdin.flush()
    deadline = time.monotonic() + 60
    while _stored(db) < 2 * batch:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert "Traceback" not in err
    assert err.strip().startswith(
        f"interrupted: {2 * batch:,} new events committed (0 already present), the rest not "
        "read. Run the same import again to finish"
    )
    status = cli("--db", str(db), "status", "--json").json()
    assert status["counts"]["events"] == 2 * batch and status["counts"]["memory_items"] == 0
    assert sum(s["extraction_lag"] for s in status["sessions"]) == 2 * batch
    text = cli("--db", str(db), "status").stdout
    assert "extraction lags in 3 session(s)" in text
    # Importing everything again finishes the import and catches extraction up.
    whole = tmp_path / "all.jsonl"
    whole.write_text(_events(2 * batch + 100))
    again = cli("--db", str(db), "import", str(whole))
    assert again.stdout == f"100 new, {2 * batch} already present, 0 rejected\n"
    after = cli("--db", str(db), "status", "--json").json()
    assert all(s["extraction_lag"] == 0 for s in after["sessions"])
    assert after["counts"]["memory_items"] > 0
    assert "extraction lags" not in cli("--db", str(db), "status").stdout


def _stored(db: Path) -> int:
    if not db.exists():
        return 0
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
    except apsw.SQLError:  # not migrated yet
        return 0
    finally:
        conn.close()


def test_a_clamped_config_value_is_said_once_and_marked(cli, shop_db: Path) -> None:
    (shop_db.parent / "memory.toml").write_text(
        "[assembly]\nsoftBudgetTokens = 999999\n[retrieval]\nlimit = 5\n"
    )
    warning = (
        f"warning: config assembly.softBudgetTokens = 999999 (from file "
        f"{shop_db.parent / 'memory.toml'}) is out of bounds; using 200000\n"
    )
    status = cli("--db", str(shop_db), "status", "--json")
    assert status.returncode == 0 and status.stderr == warning
    assert status.json()["budget"]["budget_tokens"] == 200000
    shown = cli("--db", str(shop_db), "config", "show", "--json")
    assert shown.stderr == warning
    values = shown.json()["values"]
    assert values["assembly.softBudgetTokens"] == {
        "value": 200000, "source": f"file {shop_db.parent / 'memory.toml'}",
        "clamped_from": 999999,
    }  # fmt: skip
    assert "clamped_from" not in values["retrieval.limit"]
    text = cli("--db", str(shop_db), "config", "show").stdout
    assert re.search(r"assembly\.softBudgetTokens\s+200000 \(clamped from 999999\)", text)
    (shop_db.parent / "memory.toml").write_text("[retrieval]\nlimit = 5\n")
    assert cli("--db", str(shop_db), "status").stderr == ""


def test_rebuild_gives_back_every_derived_row_but_sqlites_row_numbers(cli, tmp_path: Path) -> None:
    """What "identical" covers (docs/extraction.md): every derived row and column —
    item ids, content, status, links, lifecycle rows with their actors and details —
    but not the row numbers SQLite hands out, which count insertions across sessions."""
    from derived_state import dump

    from memplug.memory import Memory

    db = tmp_path / "memory.sqlite"
    shop, shop2 = (
        (SESSIONS / name).read_text("utf-8").splitlines(keepends=True)
        for name in ("shop.jsonl", "shop2.jsonl")
    )
    # Interleaved capture numbers rows differently from the name-order rebuild.
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(line for pair in zip(shop2, shop, strict=False) for line in pair)
                     + "".join(shop[len(shop2):] + shop2[len(shop):]))  # fmt: skip
    assert cli("--db", str(db), "import", str(mixed)).returncode == 0
    item = cli("--db", str(db), "items", "--json").json()["items"][0]["id"]
    assert cli("--db", str(db), "retract", item, "--note", "wrong").returncode == 0

    def seen() -> tuple[object, ...]:
        items = cli("--db", str(db), "items", "--json").json()
        lifecycle = cli("--db", str(db), "inspect", item, "--json").json()["lifecycle"]
        with Memory.open(db, create=False) as memory:
            return items, lifecycle, dump(memory)

    def without_ids(lifecycle: list[dict[str, object]]) -> list[dict[str, object]]:
        return [{k: v for k, v in row.items() if k != "id"} for row in lifecycle]

    items, lifecycle, rows = seen()
    done = cli("--db", str(db), "rebuild", "--json")
    assert done.returncode == 0, done.stderr
    items_after, lifecycle_after, rows_after = seen()
    assert items_after == items and rows_after == rows
    assert without_ids(lifecycle_after) == without_ids(lifecycle)
    # The lifecycle rows' own numbers are SQLite's: the interleaved capture gave them
    # other numbers than the rebuild's session-by-session order does.
    assert [r["id"] for r in lifecycle_after] != [r["id"] for r in lifecycle]


def _with_stderr_on_a_terminal(*args: str) -> tuple[int, str, str]:
    """Run the CLI with stderr on a pseudo-terminal: ``(exit code, stdout, stderr)``."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "memplug.cli", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    out = proc.stdout.read() if proc.stdout else b""
    return proc.wait(timeout=60), out.decode(), seen.decode()


def test_rebuild_and_purge_show_progress_on_a_terminal_only(cli, tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    for name in ("shop.jsonl", "shop2.jsonl"):
        assert cli("--db", str(db), "import", str(SESSIONS / name)).returncode == 0
    code, out, err = _with_stderr_on_a_terminal("--db", str(db), "rebuild")
    assert code == 0 and out.startswith("rebuilt 2 session(s)")
    assert "rebuilding session 1/2: shop-1" in err and "rebuilding session 2/2: shop-2" in err
    piped = cli("--db", str(db), "rebuild")
    assert piped.returncode == 0 and piped.stderr == ""
    code, out, err = _with_stderr_on_a_terminal(
        "--db", str(db), "purge", "--session", "shop-2", "--yes"
    )
    assert code == 0 and out.startswith("purged: ")
    steps = re.findall(r"purge step (\d)/5: ([a-z -]+)", err)
    assert [n for n, _ in steps] == ["1", "2", "3", "4", "5"]
    assert steps[0][1] == "deleting rows" and steps[-1][1] == "truncating the write-ahead log"
    piped = cli("--db", str(db), "purge", "--session", "shop-1", "--yes")
    assert piped.returncode == 0 and piped.stderr == ""
    quiet = _with_stderr_on_a_terminal("--db", str(db), "rebuild", "--json")
    assert quiet[0] == 0 and "rebuilding" not in quiet[2]
