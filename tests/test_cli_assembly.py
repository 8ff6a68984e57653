"""`memory assemble` from the outside: the documented JSON shape, logged like a pre-step,
explained with the same figures, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memplug.recall.assemble import MemorySource
from tests.conftest import CliResult, run_cli_here

REPO = Path(__file__).resolve().parent.parent


def memory(db: Path, *args: str, stdin: str | None = None) -> CliResult:
    return run_cli_here("--db", str(db), *args, input=stdin)


@pytest.fixture(scope="module")
def shop_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("cli") / "m.sqlite"
    done = memory(db, "import", str(REPO / "fixtures" / "sessions" / "shop.jsonl"))
    assert done.returncode == 0, done.stderr
    return db


def test_assemble_json_has_the_documented_shape(shop_db: Path) -> None:
    done = memory(shop_db, "assemble", "--session", "shop-1", "--query",
                  "what p95 must checkout keep?", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    for key in ("injected", "text", "assembly_id", "budget", "used_tokens", "token_source",
                "included", "omitted", "coverage"):  # fmt: skip
        assert key in data
    assert isinstance(data["assembly_id"], int)
    assert data["injected"] is True and data["budget"] == 3000
    assert data["token_source"] == "estimate"
    assert "p95 < 200 ms at 1k rps" in data["text"]
    assert all({"ref", "reason"} <= set(o) for o in data["omitted"])
    assert data["coverage"] == {"complete": True, "reasons": []}
    explained = memory(shop_db, "explain", "--assembly", str(data["assembly_id"]), "--json")
    logged = json.loads(explained.stdout)
    assert logged["used_tokens"] == data["used_tokens"]
    assert logged["text"] == data["text"]
    assert logged["trigger"] == "cli"


def test_assemble_without_a_query_uses_the_latest_user_message(shop_db: Path) -> None:
    done = memory(shop_db, "assemble", "--session", "shop-1", "--json")
    data = json.loads(done.stdout)
    assert data["query"]["text"].startswith("Next: run the load test against staging")


def test_assemble_for_people_ends_with_where_to_look(shop_db: Path) -> None:
    done = memory(shop_db, "assemble", "--session", "shop-1", "--query", "card numbers")
    assert done.returncode == 0
    assert done.stdout.startswith("[memplug] Memory: ")
    assert "details: memory explain --assembly" in done.stdout.splitlines()[-1]


def test_no_evidence_beside_task_state_says_so(shop_db: Path) -> None:
    done = memory(shop_db, "assemble", "--session", "shop-1", "--query", "zzqx qqzv", "--json")
    data = json.loads(done.stdout)
    assert data["injected"] is True
    assert "## Task state" in data["text"]
    assert "Nothing pushed here matches the current request" in data["text"]


def test_nothing_to_inject_is_said_plainly(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite"
    event = {"session_id": "s1", "seq": 1, "type": "user/message", "text": "hello there"}
    assert memory(db, "import", "-", stdin=json.dumps(event) + "\n").returncode == 0
    done = memory(db, "assemble", "--session", "s1", "--query", "zzqx qqzv")
    assert done.returncode == 0
    assert done.stdout.startswith(
        "nothing to inject (nothing in scope matched the query, and nothing resident is missing); "
        "assembly 1"
    )


def test_unknown_session_is_a_one_line_error(shop_db: Path) -> None:
    done = memory(shop_db, "assemble", "--session", "nope", "--query", "x")
    assert done.returncode == 2
    assert done.stderr.strip() == "Error: no session 'nope' in this database"


def test_the_same_events_give_the_same_text_in_two_databases(shop_db: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    exported = memory(shop_db, "export")
    assert memory(other, "import", "-", stdin=exported.stdout).returncode == 0
    query = ["assemble", "--session", "shop-1", "--query", "值班室分机号是多少？", "--json"]
    first = json.loads(memory(shop_db, *query).stdout)
    second = json.loads(memory(other, *query).stdout)
    assert first["text"] == second["text"] and "4324" in first["text"]


def test_a_failed_assembly_exits_1_with_the_error_and_is_logged(
    shop_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: MemorySource, session_id: str, task_text: str) -> None:
        raise RuntimeError("index unavailable")

    monkeypatch.setattr(MemorySource, "candidates", broken)
    done = memory(shop_db, "assemble", "--session", "shop-1", "--query", "card numbers", "--json")
    assert done.returncode == 1 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("Error: assembly ")
    assert line.endswith(" failed: RuntimeError: index unavailable (memory explain --assembly "
                         + line.split()[2] + ")")  # fmt: skip
    monkeypatch.undo()
    explained = memory(shop_db, "explain", "--assembly", line.split()[2], "--json")
    assert json.loads(explained.stdout)["errors"] == ["RuntimeError: index unavailable"]


def test_a_log_that_cannot_be_written_is_an_error_after_the_message(
    shop_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memplug.store.logs import LogStore

    def locked(self: LogStore, *args: object, **kwargs: object) -> int:
        raise OSError("disk full")

    monkeypatch.setattr(LogStore, "insert", locked)
    done = memory(shop_db, "assemble", "--session", "shop-1", "--query", "card numbers")
    assert done.returncode == 1
    assert done.stdout.startswith("[memplug] Memory: ")
    assert done.stderr == "Error: could not log the assembly (OSError: disk full)\n"
