"""`memory search` and `memory expand` from the outside: the CLI's entry point on a real
file (in process, through click's CliRunner: no process boundary is under test here)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from memplug.memory import Memory

SESSIONS = Path(__file__).resolve().parent.parent / "fixtures" / "sessions"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("search-cli") / "m.sqlite"
    with Memory.open(path) as memory:
        for name in ("shop.jsonl", "shop2.jsonl", "other_project.jsonl", "branches.jsonl"):
            with open(SESSIONS / name, "rb") as stream:
                assert not memory.import_jsonl([(name, stream)]).rejected
    return path


def test_search_prints_a_line_per_hit_and_its_snippet(cli: Any, db: Path) -> None:
    result = cli("--db", str(db), "search", "port 8080", "--session", "shop-1", "--limit", "3")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # The scope is the project of --session; the legend only because a hit is pinned.
    assert re.fullmatch(
        r"scope: project:/home/ana/shop · hits 1–3 of \d+ \(\* = exact symbol pinned\)", lines[0]
    )
    # A hit's line is its score, ref, kind and why, unpadded (the reader pays per character).
    score, ref, *rest = lines[1].split("  ")
    assert re.fullmatch(r"\d\.\d{3}\*", score) and ref.startswith("mem_shop1_")
    # A memory hit names the turn it came from; that turn takes no slot of its own.
    assert ref.endswith("from shop-1:34") and "exact:8080" in rest[-1]
    # Its snippet follows, whole and indented: centred on the match, it is not clipped.
    assert lines[2].startswith("    ") and "8080" in lines[2]
    assert not any(line.split()[1:2] == ["shop-1:34"] for line in lines)
    assert "coverage: complete" in result.stdout
    assert "next page: memory search --next mp1." in result.stdout


def test_search_json_shape(cli: Any, db: Path) -> None:
    result = cli("--db", str(db), "search", "--json", "值班室分机号是多少", "--session", "shop-1",
                 "--limit", "20")  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = result.json()
    assert set(data) == {"total", "offset", "hits", "next", "coverage", "scope"}
    assert data["scope"] == "project:/home/ana/shop"
    assert data["next"] is None and data["total"] == len(data["hits"])
    assert data["coverage"] == {"complete": True, "reasons": []}
    kinds = {h["kind"] for h in data["hits"]}
    assert kinds == {"event", "memory"}
    for hit in data["hits"]:
        assert {"kind", "session_id", "score", "why", "snippet", "follow"} <= set(hit)
        assert ("seq" in hit) == (hit["kind"] == "event")
        assert ("id" in hit) == (hit["kind"] == "memory")


def test_a_page_holds_five_hits_unless_asked_for_more(cli: Any, db: Path) -> None:
    page = cli("--db", str(db), "search", "--json", "port", "--scope", "global").json()
    assert len(page["hits"]) == 5 < page["total"] and page["next"] is not None
    more = cli("--db", str(db), "search", "--json", "port", "--scope", "global", "--limit", "7")
    assert len(more.json()["hits"]) == 7


def test_paging_through_the_cli(cli: Any, db: Path) -> None:
    first = cli("--db", str(db), "search", "--json", "port", "--scope", "global", "--limit", "4")
    data = first.json()
    seen = [(h["session_id"], h.get("seq"), h.get("id")) for h in data["hits"]]
    while data.get("next"):
        page = cli("--db", str(db), "search", "--json", "--next", data["next"])
        assert page.returncode == 0, page.stderr
        data = page.json()
        seen += [(h["session_id"], h.get("seq"), h.get("id")) for h in data["hits"]]
    assert len(seen) == len(set(seen)) == first.json()["total"]


def test_expand_by_reference_and_by_token(cli: Any, db: Path) -> None:
    plain = cli("--db", str(db), "expand", "shop-1:93", "--before", "1", "--after", "1")
    assert plain.returncode == 0, plain.stderr
    assert "── shop-1:93  user/message" in plain.stdout and "◀" in plain.stdout
    assert "值班室分机号 4324" in plain.stdout
    search = cli("--db", str(db), "search", "--json", "pumpkin soup", "--session", "dag-1")
    follow = search.json()["hits"][0]["follow"]
    expanded = cli("--db", str(db), "expand", "--json", follow, "--after", "1")
    data = expanded.json()
    assert data["events"][0]["anchor"] and data["events"][0]["text_range"]["complete"]


def test_a_long_event_s_hit_prints_a_ref_that_opens_it_at_the_match(
    cli: Any, tmp_path: Path
) -> None:
    log = "build output line\n" * 400 + "FATAL: marmoset_pool exhausted\n" + "tail\n" * 300
    event = {"session_id": "b1", "seq": 1, "type": "tool/result", "role": "tool",
             "text": log, "cwd": "/p"}  # fmt: skip
    source = tmp_path / "b1.jsonl"
    source.write_text(json.dumps(event) + "\n", encoding="utf-8")
    path = tmp_path / "m.sqlite"
    assert cli("--db", str(path), "import", str(source)).returncode == 0
    page = cli("--db", str(path), "search", "marmoset_pool", "--scope", "global")
    ref = page.stdout.splitlines()[1].split("  ")[1]
    session_seq, _, offset = ref.partition("@")
    assert session_seq == "b1:1" and 0 < int(offset) < log.index("marmoset_pool")
    opened = cli("--db", str(path), "expand", ref)
    assert opened.returncode == 0, opened.stderr
    assert "FATAL: marmoset_pool exhausted" in opened.stdout
    assert "more: memory expand mp1." in opened.stdout  # the rest of the log is a call away
    assert len(opened.stdout) < 2_500 < len(log)
    past = cli("--db", str(path), "expand", "b1:1@99999")
    assert past.returncode == 2
    expected = f"Error: @99999 is past the end of b1:1 ({len(log.strip())} characters)"
    assert past.stderr.strip() == expected


def test_expand_of_an_off_branch_entry_is_a_usage_error(cli: Any, db: Path) -> None:
    result = cli("--db", str(db), "expand", "dag-1:9", "--branches", "active")
    assert result.returncode == 2
    assert result.stderr.strip().startswith("Error: address_not_found:")


def test_filters_and_modes(cli: Any, db: Path) -> None:
    failed = cli(
        "--db", str(db), "search", "--json", "exit", "--scope", "global",
        "--role", "tool", "--outcome", "failed",
    )  # fmt: skip
    assert failed.returncode == 0, failed.stderr
    assert {h["outcome"] for h in failed.json()["hits"]} == {"failed"}
    phrase = cli("--db", str(db), "search", "--json", "--mode", "phrase", "partial index")
    assert phrase.json()["hits"]
    regex = cli("--db", str(db), "search", "--json", "--mode", "regex", r"port \d{4}\b")
    assert regex.returncode == 0 and regex.json()["hits"][0]["why"] == "regex"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "--mode", "regex", "("], "Error: invalid regular expression"),
        (["search", "port", "--scope", "project"], "Error: --scope project needs --session"),
        (["search", "port", "--session", "nope"], "Error: no session 'nope' in this database"),
        (["search", "port", "--role", "robot"], "Error: unknown role 'robot'"),
        (["search", "port", "--since", "yesterday"], "Error: --since must be an ISO-8601"),
        (["search"], "Error: give a QUERY (or --next TOKEN)"),
        (["search", "--next", "mp1.garbage"], "Error: malformed memplug call token"),
        (["expand", "nonsense"], "Error: expand takes a follow token"),
        (["expand", "shop-1:424242"], "Error: no event shop-1:424242"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    cli: Any, db: Path, args: list[str], message: str
) -> None:
    result = cli("--db", str(db), *args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), lines
    assert "Traceback" not in result.stderr


def test_reading_a_missing_database_creates_nothing(cli: Any, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "m.sqlite"
    for args in (["search", "port"], ["expand", "s:1"]):
        result = cli("--db", str(missing), *args)
        assert result.returncode == 2 and result.stderr.startswith("Error: no memplug database")
    assert not missing.parent.exists()


def test_hostile_queries_through_the_cli(cli: Any, db: Path) -> None:
    for query in [
        '"',
        "AND",
        "NEAR(a b)",
        "*",
        "col:*",
        "'; DROP TABLE events; --",
        "a" * 5000,
        "\\",
    ]:
        result = cli("--db", str(db), "search", "--json", "--", query)
        assert result.returncode == 0, (query, result.stderr)
        assert json.loads(result.stdout)["coverage"]["complete"] in (True, False)


def test_the_search_doc_covers_every_option_and_coverage_reason() -> None:
    """docs/search.md is the reference: a new option or coverage reason must be in it."""
    from memplug.cli.search import expand_cmd, search_cmd
    from memplug.recall import retrieve

    doc = (Path(__file__).resolve().parent.parent / "docs" / "search.md").read_text("utf-8")
    for command in (search_cmd, expand_cmd):
        for param in command.params:
            for flag in getattr(param, "opts", []):
                if flag.startswith("--"):
                    assert flag in doc, f"docs/search.md does not mention {flag}"
    reasons = [
        value
        for name, value in vars(retrieve).items()
        if name.isupper() and isinstance(value, str) and value.islower() and "_" in value
    ]
    assert "candidate_budget" in reasons and "stale_pointer" in reasons
    for reason in reasons:
        assert f"`{reason}`" in doc, f"docs/search.md does not explain coverage reason {reason}"
