"""Hostile input: host events, JSONL lines, queries and CLI arguments.

Each bad thing gets a specific one-line error (a rejected line, a ValidationError, an
`Error: …` line with exit 2) and nothing already captured, nor any good line beside
the bad one, is lost.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import new_db
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memplug.base.errors import MemplugError, ValidationError
from memplug.base.models import HostEvent, parse_event
from memplug.capture.jsonl import MAX_DEPTH, MAX_LINE_BYTES, parse_line
from memplug.capture.transfer import export_lines
from memplug.cli import main as cli_main
from memplug.memory import Memory
from memplug.recall.retrieve import Retriever

REPO = Path(__file__).resolve().parent.parent
SHOP = REPO / "fixtures" / "sessions" / "shop.jsonl"
EVENT_TYPES = ("user/message", "assistant/message", "tool/result", "compaction/summary")
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def good(seq: int, text: str = "fine", session: str = "s") -> dict[str, Any]:
    return {"session_id": session, "seq": seq, "type": "user/message", "role": "user", "text": text}


def line(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False).encode("utf-8") + b"\n"


def import_bytes(db: Path, payload: bytes) -> dict[str, Any]:
    with Memory.open(db) as memory:
        summary = memory.import_jsonl([("x.jsonl", io.BytesIO(payload))])
        return summary.as_dict() | {"count": memory.store.counts()["events"]}


def assert_one_line(message: str) -> None:
    assert message and "\n" not in message and len(message) < 400, message


@pytest.fixture(scope="module")
def shop_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("shop") / "m.sqlite"
    with Memory.open(db) as memory, SHOP.open("rb") as stream:
        memory.import_jsonl([("shop.jsonl", stream)])
        # A haystack that makes a backtracking regex explode.
        memory.ingest([parse_event(good(1, "a" * 5_000 + "!", session="bomb"))])
    return db


def event_count(db: Path) -> int:
    with Memory.open(db, create=False) as memory:
        return memory.store.counts()["events"]


# -- host events -------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _huge(value: object) -> bool:
    return isinstance(value, int) and abs(value) >= 2**63


content_blocks = st.lists(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "image", "tool_use"])},
        optional={"text": st.text(max_size=60) | json_scalars},
    ),
    max_size=3,
)
fields = {
    "session_id": st.text(max_size=20) | json_values,
    "seq": st.integers(-5, 2**63) | json_values,
    "type": st.sampled_from([*EVENT_TYPES, "user/bogus", ""]) | json_values,
    "text": st.text(max_size=200) | json_values,
    "content": content_blocks | json_values,
    "time": st.datetimes().map(lambda d: d.isoformat()) | st.text(max_size=25) | json_values,
    "role": st.sampled_from(["user", "assistant", "tool", "robot"]) | json_values,
    # Values past int64 are pinned by test_a_turn_too_big_for_sqlite_is_rejected_alone.
    "turn": st.integers(-3, 10**6) | json_values.filter(lambda v: not _huge(v)),
    "outcome": st.sampled_from(["succeeded", "failed", "exploded"]) | json_values,
    "is_error": st.booleans() | json_values,
    "source": st.fixed_dictionaries({}, optional={"kind": st.text(max_size=10)}) | json_values,
    "cwd": st.text(max_size=30) | json_values,
    "unknown_field": json_values,
}
REQUIRED = ("session_id", "seq", "type")
host_events = st.fixed_dictionaries(
    {"session_id": st.text(min_size=1, max_size=12), "seq": st.integers(0, 10**9),
     "type": st.sampled_from(EVENT_TYPES)},
    optional={k: v for k, v in fields.items() if k not in REQUIRED},
) | st.fixed_dictionaries({}, optional=fields)  # fmt: skip


@given(host_events)
@FAST
def test_any_host_event_is_stored_or_refused_in_one_line(data: dict[str, Any]) -> None:
    try:
        event = parse_event(data)
    except ValidationError as error:
        assert_one_line(str(error))
        return
    with (
        tempfile.TemporaryDirectory() as tmp,
        Memory.open(new_db(Path(tmp) / "m.sqlite")) as memory,
    ):
        assert memory.ingest([event]).new == 1
        exported = json.loads(next(export_lines(memory.store)))
    again = parse_event(exported)
    assert (again.session_id, again.seq, again.type) == (event.session_id, event.seq, event.type)


@given(st.binary(max_size=300))
@FAST
def test_any_bytes_as_a_jsonl_line_parse_or_fail_in_one_line(raw: bytes) -> None:
    try:
        assert isinstance(parse_line(raw), HostEvent)
    except ValidationError as error:
        assert_one_line(str(error))


@given(st.lists(st.binary(max_size=80) | host_events.map(line), min_size=1, max_size=12))
@settings(max_examples=60, deadline=None)
def test_good_lines_survive_any_neighbours(mixed: list[bytes]) -> None:
    """Every line that parses alone is stored when imported among hostile ones."""
    payload = b"".join(m if m.endswith(b"\n") else m.replace(b"\n", b" ") + b"\n" for m in mixed)
    expected: dict[tuple[str, int], None] = {}
    for raw in payload.split(b"\n"):
        if raw.strip():
            with contextlib.suppress(ValidationError):
                parsed = parse_line(raw.strip())
                expected.setdefault((parsed.session_id, parsed.seq))
    with tempfile.TemporaryDirectory() as tmp:
        result = import_bytes(Path(tmp) / "m.sqlite", payload)
    assert result["count"] == len(expected)
    for rejected in result["rejected"]:
        assert_one_line(rejected["error"])


# -- JSONL lines ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        (b"\xff\xfe{}", "not valid UTF-8 (byte 1)"),
        (b'{"session_id": "s", "seq": 1, "type": "user/message", "text": "\xc3\x28"}',
         "not valid UTF-8 (byte 64)"),
        (b"[1, 2, 3]", "an event must be a JSON object, not list"),
        (b'"just a string"', "an event must be a JSON object, not str"),
        (b"{not json}",
         "not valid JSON: Expecting property name enclosed in double quotes at column 2"),
        (b'{"session_id": "s", "seq": 1, "type": "user/message", "text": "x\\ud800y"}',
         "field 'text' holds an unpaired UTF-16 surrogate ('\\ud800'), which is not text"),
        (b'{"session_id": "s", "seq": 1, "type": "user/message", "content": [{"type": "text", '
         b'"text": "\\udfff"}]}',
         "field 'content[0].text' holds an unpaired UTF-16 surrogate ('\\udfff'), "
         "which is not text"),
        (b'{"session_id": "s", "seq": 1, "type": "user/message", "x": ' + b"[" * 100_000
         + b"]" * 100_000 + b"}", f"JSON nested deeper than {MAX_DEPTH} levels"),
        (b'{"session_id": "s", "seq": 1, "type": "user/message", "x": ' + b"[" * MAX_DEPTH
         + b"]" * MAX_DEPTH + b"}", f"JSON nested deeper than {MAX_DEPTH} levels"),
        (b'{"seq": 1, "type": "user/message"}', "missing required field 'session_id'"),
    ],
)  # fmt: skip
def test_each_hostile_line_gets_its_own_error(raw: bytes, error: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_line(raw)
    assert str(caught.value) == error


def test_a_hostile_line_costs_only_itself(tmp_path: Path) -> None:
    payload = b"".join(
        [
            b"\xef\xbb\xbf" + line(good(1)),  # a byte-order mark is not an error
            line(good(2)),
            b'{"session_id": "s", "seq": 3, "type": "user/message", "text": "\\ud800"}\n',
            b"\xff\xff\xff\n",
            b"{" * 50_000 + b"\n",
            line(good(4, "nul \x00 and bell \x07 are dropped")) .replace(b"\n", b"\r\n"),
            line(good(5)),
        ]
    )  # fmt: skip
    result = import_bytes(tmp_path / "m.sqlite", payload)
    assert result["new"] == 4 and result["count"] == 4
    assert [r["line"] for r in result["rejected"]] == [3, 4, 5]
    with Memory.open(tmp_path / "m.sqlite") as memory:
        row = memory.store.events.get("s", 4)
        assert row is not None and row.text == "nul  and bell  are dropped"


@pytest.mark.parametrize("time_text", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_a_time_with_no_utc_spelling_is_rejected_alone(tmp_path: Path, time_text: str) -> None:
    payload = line(good(1)) + line(good(2) | {"time": time_text}) + line(good(3))
    result = import_bytes(tmp_path / "m.sqlite", payload)
    assert result["count"] == 2
    assert result["rejected"] == [
        {"line": 2, "error": "field 'time' is out of range once converted to UTC"}
    ]


def test_an_early_year_survives_export_and_import(tmp_path: Path) -> None:
    result = import_bytes(tmp_path / "m.sqlite", line(good(1) | {"time": "0226-01-05T10:00:00Z"}))
    assert result["new"] == 1
    with Memory.open(tmp_path / "m.sqlite") as memory:
        exported = next(export_lines(memory.store))
    assert parse_line(exported.encode()).time_text() == "0226-01-05T10:00:00Z"


def test_a_turn_too_big_for_sqlite_is_rejected_alone(tmp_path: Path) -> None:
    payload = line(good(1)) + line(good(2) | {"turn": 10**30}) + line(good(3))
    result = import_bytes(tmp_path / "m.sqlite", payload)
    assert result["count"] == 2 and [r["line"] for r in result["rejected"]] == [2]


def test_a_field_name_with_a_newline_still_gives_a_one_line_error() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_line(b'{"session_id": "s", "seq": 1, "type": "user/message", "source": {"k\\nd": 1}}')
    assert_one_line(str(caught.value))


def test_nesting_within_the_limit_is_kept_and_exported_as_it_came(tmp_path: Path) -> None:
    deep: Any = "bottom"
    for _ in range(MAX_DEPTH - 2):
        deep = [deep]
    data = good(1) | {"tool_input": deep}
    result = import_bytes(tmp_path / "m.sqlite", line(data))
    assert result["new"] == 1
    with Memory.open(tmp_path / "m.sqlite") as memory:
        assert json.loads(next(export_lines(memory.store)))["tool_input"] == deep


@pytest.mark.slow
def test_a_fifty_megabyte_line_is_stored_whole(tmp_path: Path) -> None:
    text = "start " + "word " * (10 * 1024 * 1024) + "END-MARKER"
    payload = line(good(1, text)) + line(good(2, "the next line"))
    assert len(payload) > 50 * 1024 * 1024
    result = import_bytes(tmp_path / "m.sqlite", payload)
    assert result["new"] == 2 and not result["rejected"]
    with Memory.open(tmp_path / "m.sqlite") as memory:
        row = memory.store.events.get("s", 1)
        assert row is not None and row.truncated == 1
        full = memory.store.events.full_text(row)
        assert full.endswith("END-MARKER") and len(full) == len(text.strip())


@pytest.mark.slow
def test_an_endless_line_is_rejected_without_holding_it_in_memory(tmp_path: Path) -> None:
    """A line past 64 MiB is skipped in pieces: the importer's memory stays far below
    the line's size, and the lines around it are kept."""
    src = tmp_path / "huge.jsonl"
    with src.open("wb") as out:
        out.write(line(good(1)))
        out.write(b'{"session_id": "s", "seq": 2, "type": "user/message", "text": "')
        chunk = b"x" * (1 << 20)
        for _ in range(MAX_LINE_BYTES // len(chunk) * 3):  # 192 MiB
            out.write(chunk)
        out.write(b'"}\n')
        out.write(line(good(3)))
    probe = (
        "import json, re, sys\n"
        "from memplug.memory import Memory\n"
        "with Memory.open(sys.argv[1]) as m, open(sys.argv[2], 'rb') as f:\n"
        "    s = m.import_jsonl([('huge', f)])\n"
        # VmHWM, not ru_maxrss: the latter keeps the forking parent's peak across exec.
        "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)\n"
        "print(json.dumps(s.as_dict() | {'rss_mb': int(hwm) // 1024}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "m.sqlite"), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result = json.loads(done.stdout)
    assert result["new"] == 2
    assert result["rejected"] == [{"line": 2, "error": "line is longer than 64 MiB"}]
    assert result["rss_mb"] < 192, result


# -- queries -------------------------------------------------------------------------

HOSTILE_QUERIES = [
    '"', '""', "AND", "OR NOT", "NEAR(a b)", "*", "a:b", "^x", "(((", "col:*", "\x01",
    "'; DROP TABLE events; --", "a" * 5_000, "端口", "的", "v2.31.5", "src/*.py", "\\", "%",
    "_", "NOT", "-", "+", "{}", "[]", "text:port", "events_fts", "rank", "8080 OR 1=1",
    "\u0000", "port\" OR \"x", "NEAR(\"port\" \"8080\", 2)", "port*", "🙂" * 300,
]  # fmt: skip


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
@pytest.mark.parametrize("mode", ["literal", "phrase"])
def test_hostile_queries_are_just_text(shop_db: Path, query: str, mode: str) -> None:
    with Memory.open(shop_db, create=False) as memory:
        page = Retriever(memory.store, memory.config).search(query, mode=mode, scope="global")
    assert page.total >= 0 and page.coverage is not None


@given(st.text(max_size=120))
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_query_text_searches_cleanly(shop_db: Path, query: str) -> None:
    with Memory.open(shop_db, create=False) as memory:
        retriever = Retriever(memory.store, memory.config)
        for mode in ("literal", "phrase"):
            for match in ("any", "all"):
                retriever.search(query, mode=mode, match=match, scope="global")


@pytest.mark.parametrize("mode", ["literal", "phrase"])
def test_undecodable_bytes_in_a_query_are_text_or_a_usage_error(shop_db: Path, mode: str) -> None:
    """Python decodes argv bytes that are not UTF-8 to lone surrogates; such a query
    must still search (or be refused in one line), never crash."""
    done = subprocess.run(
        [sys.executable, "-m", "memplug.cli", "--db", str(shop_db), "search", "--mode", mode,
         "--json", "--", b"ab\xffcd".decode("utf-8", "surrogateescape")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "Traceback" not in done.stderr
    assert done.returncode in (0, 2), done.stderr[-300:]
    if done.returncode:
        assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "pattern", ["(a+)+$", "(a|aa)+$", "(.*a){25}$", "(?:a*)*b", "(a|a?)+$", "^(\\w+\\s?)*$"]
)
def test_regex_bombs_are_cut_by_the_time_limit(shop_db: Path, pattern: str) -> None:
    with Memory.open(shop_db, create=False) as memory:
        retriever = Retriever(memory.store, memory.config)
        pages: list[Any] = []
        search = threading.Thread(
            target=lambda: pages.append(retriever.search(pattern, mode="regex", scope="global")),
            daemon=True,
        )
        search.start()
        # Not a timing comparison: a bomb that were not cut would run for hours, a cut
        # one ends within its 200 ms limit plus the search, however loaded the machine.
        search.join(timeout=120)
        assert pages, "the search did not end: the time limit did not cut the pattern"
    page = pages[0]
    reasons = [str(r) for r in page.coverage.reasons]
    # Either the pattern finished (the engine met no catastrophic case) or coverage
    # says the time limit cut it, so an empty page is not taken as authoritative.
    assert page.coverage.complete or "regex_timeout" in reasons
    if pattern == "(a+)+$":
        assert reasons == ["regex_timeout"] and not page.coverage.complete


@pytest.mark.parametrize(
    ("pattern", "error"),
    [
        ("(", "invalid regular expression"),
        ("a{99999999999}", "invalid regular expression"),
        ("x" * 600, "regex pattern is 600 bytes; the limit is 512"),
        ("", "an empty regex pattern matches everything; give a pattern"),
    ],
)
def test_bad_regexes_are_specific_errors(shop_db: Path, pattern: str, error: str) -> None:
    with Memory.open(shop_db, create=False) as memory:
        retriever = Retriever(memory.store, memory.config)
        with pytest.raises(ValidationError) as caught:
            retriever.search(pattern, mode="regex", scope="global")
    assert str(caught.value).startswith(error)
    assert_one_line(str(caught.value))


# -- CLI arguments -------------------------------------------------------------------


def run_main(argv: list[str]) -> tuple[int, str, str]:
    """The real CLI entry point, in process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            cli_main(argv)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["nosuch"], "Error: No such command 'nosuch'."),
        (["search", "--limit", "abc", "x"],
         "Error: Invalid value for '--limit': 'abc' is not a valid integer."),
        (["search", "--limit", "0", "x"], "Error: --limit must be between 1 and 100, not 0"),
        (["search", "--mode", "glob", "x"],
         "Error: Invalid value for '--mode': 'glob' is not one of 'literal', 'phrase', 'regex'."),
        (["search", "--role", "robot", "x"], None),
        (["search", "--since", "yesterday-ish", "x"], None),
        (["search", "--scope", "galaxy", "x"], None),
        (["search", "--next", "not-a-token"], None),
        (["search", "--mode", "regex", "("], None),
        (["expand", "nothing-here"], None),
        (["expand", "shop-1:99999"], None),
        (["purge", "--before", "2026-13-45", "--yes"],
         "Error: --before '2026-13-45' is not a date (YYYY-MM-DD) or ISO-8601 date-time"),
        (["purge", "--session", "shop-1"],
         "Error: purge deletes data for good: pass --yes to confirm when not at a terminal"),
        (["import", "/no/such/file.jsonl"], "Error: no such file: /no/such/file.jsonl"),
        (["status", "--bogus"], "Error: No such option '--bogus'."),
    ],
)  # fmt: skip
def test_bad_arguments_get_one_error_line_and_exit_2(
    shop_db: Path, args: list[str], error: str | None
) -> None:
    before = event_count(shop_db)
    code, _, err = run_main(["--db", str(shop_db), *args])
    assert code == 2, (args, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in err
    if error is not None:
        assert lines[0] == error
    assert event_count(shop_db) == before


def test_a_directory_as_the_database(tmp_path: Path) -> None:
    code, _, err = run_main(["--db", str(tmp_path), "status"])
    assert code == 2
    assert err.strip() == f"Error: Invalid value for '--db': File '{tmp_path}' is a directory."


ARG_WORDS = st.sampled_from(
    ["search", "expand", "status", "explain", "inspect", "items", "purge", "config", "show",
     "--json", "--limit", "--session", "--scope", "--mode", "regex", "phrase", "--since",
     "--before", "--all", "--role", "--type", "--next", "shop-1", "shop-1:2", "mem_x", "-1",
     "0", "999999999999999999999", "--", "-", "'", '"', "(((", "\x00", "端口", "--help"]
)  # fmt: skip


@given(st.lists(ARG_WORDS | st.text(max_size=12), max_size=7))
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_argument_list_ends_in_a_result_or_one_error_line(
    shop_db: Path, argv: list[str]
) -> None:
    before = event_count(shop_db)
    try:
        code, _, err = run_main(["--db", str(shop_db), *argv])
    except MemplugError as error:  # pragma: no cover - main must translate these
        pytest.fail(f"main() let {error!r} escape")
    assert code in (0, 1, 2), (argv, code, err)
    assert "Traceback" not in err
    if code != 0:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), (argv, err)
    assert event_count(shop_db) == before
