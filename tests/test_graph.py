"""Entities from structural signals, their normalisation, and the graph's views."""

from __future__ import annotations

import json
import os
import posixpath
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from derived_state import ev
from hypothesis import given
from hypothesis import strategies as st

from memplug.cli.app import cli
from memplug.derive.entities import (
    MAX_ENTITIES_PER_EVENT,
    file_entity,
    host_entity,
    in_text,
    in_tool_input,
    package_entity,
    version_entity,
)
from memplug.derive.scopes import resolve
from memplug.memory import Memory

GOLDEN = Path(__file__).resolve().parent.parent / "fixtures" / "golden"

# -- recognition and normalisation -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("see db.internal:5432 now", ["host:db.internal", "port:5432"]),
        ("curl http://LOCALHOST:8080/health", ["host:localhost", "port:8080"]),
        ("bind 127.0.0.1:9000.", ["host:localhost", "port:9000"]),
        ("we need Django==4.2 and requests_oauthlib", ["package:django", "version:4.2",
                                                       "ident:requests_oauthlib"]),
        ("don't npm install anything", []),
        ("npm i @types/node@20.1.0", ["package:@types/node", "version:20.1.0"]),
        ("edit src/app.py and ../lib/util.ts", ["file:/r/src/app.py", "file:/lib/util.ts"]),
        ("read README.md", ["file:/r/README.md"]),
        ("call `parse_config()` from fooBar", ["ident:parse_config", "ident:fooBar"]),
        ("the server port is 3000", ["port:3000"]),
    ],
)  # fmt: skip
def test_shapes_name_entities(text: str, ids: list[str]) -> None:
    assert in_text(text, "/r").ids == ids


@pytest.mark.parametrize(
    "text",
    [
        "and/or n/a 1/2/2026",
        "We decided to ship on Friday, it was a good call.",
        "port 70000 is not a port",
        "Decision: 10:30 meeting",
        "an email ana@example.com",
    ],
)
def test_prose_names_nothing(text: str) -> None:
    assert in_text(text, "/r").ids == []


def test_aliases_join_by_the_documented_rules() -> None:
    relative = file_entity("src/../src/app.py/", "/home/ana/shop")
    absolute = file_entity("/home/ana/shop/src/app.py", None)
    assert relative is not None and absolute is not None and relative.id == absolute.id
    assert host_entity("0.0.0.0").id == host_entity("Localhost.").id == "host:localhost"
    assert package_entity("Requests_OAuthlib").id == package_entity("requests.oauthlib").id
    assert version_entity("v1.2.0").id == version_entity("1.2.0").id
    # Case is kept for files and identifiers: two spellings, two entities.
    assert in_text("/a/App.py /a/app.py", None).ids == ["file:/a/App.py", "file:/a/app.py"]
    assert in_text("`Foo` and `foo`", None).ids == ["ident:Foo", "ident:foo"]


_SEGMENT = st.text(alphabet="abcdefgh_-", min_size=1, max_size=6)


_PATH = st.lists(_SEGMENT, min_size=1, max_size=3)


@given(cwd=_PATH, rel=_PATH)
def test_a_relative_path_is_the_absolute_path_it_names(cwd: list[str], rel: list[str]) -> None:
    base = "/" + "/".join(cwd)
    relative = "/".join(rel) + ".py"
    joined = file_entity(relative, base)
    absolute = file_entity(posixpath.join(base, relative), None)
    assert joined is not None and absolute is not None and joined.id == absolute.id
    again = file_entity(joined.id.removeprefix("file:"), "/elsewhere")
    assert again is not None and again.id == joined.id


def test_tool_input_reads_path_fields_and_commands_not_code_bodies() -> None:
    edit = 'Edit {"file_path":"/a/b.py","old_string":"x_y = 1","new_string":"`zz_top`"}'
    assert in_tool_input("Edit", edit, "/r").ids == ["file:/a/b.py"]
    bash = 'Bash {"command":"uv add httpx && pytest tests/test_x.py --port 8080"}'
    assert in_tool_input("Bash", bash, "/r").ids == [
        "port:8080", "package:httpx", "file:/r/tests/test_x.py",
    ]  # fmt: skip
    assert in_tool_input("read_file", "app/main.py", "/r").ids == ["file:/r/app/main.py"]
    pip = (
        'Bash {"command":"pip install -r requirements.txt Requests_OAuthlib",'
        '"description":"pip install x"}'
    )
    assert in_tool_input("Bash", pip, "/r").ids == ["package:requests-oauthlib"]
    commit = 'Bash {"command":"git commit -m \\"npm install broke\\""}'
    assert in_tool_input("Bash", commit, "/r").ids == []


def test_one_text_names_at_most_the_cap() -> None:
    text = " ".join(f"file{i}.py" for i in range(MAX_ENTITIES_PER_EVENT * 2))
    assert len(in_text(text, "/r").entities) == MAX_ENTITIES_PER_EVENT


# -- the graph -----------------------------------------------------------------------------


def neighbors(memory: Memory, entity: str, hops: int = 1, **scope: Any) -> dict[str, Any]:
    where = resolve(memory.store, **(scope or {"scope": "global"}))
    return memory.graph.neighbors(entity, where, hops=hops)


def relations(data: dict[str, Any]) -> set[tuple[str, str, bool]]:
    return {(n["relation"], n["entity"], "superseded_by" in n) for n in data["neighbors"]}


def test_a_contradicted_value_is_superseded_never_deleted(memory: Memory) -> None:
    memory.ingest([ev("s", 1, "remember: the API port is 8080"),
                   ev("s", 2, "correction: the API port is 9090")])  # fmt: skip
    data = neighbors(memory, "api port")
    assert data["entity"] == "subject:api port"
    assert ("is", "port:8080", True) in relations(data)
    assert ("is", "port:9090", False) in relations(data)
    old = next(n for n in data["neighbors"] if n["entity"] == "port:8080" and n["relation"] == "is")
    assert old["superseded_by"] == {"src": "subject:api port", "relation": "is", "dst": "port:9090"}
    assert old["sources"] == [{"session_id": "s", "seq": 1}]


def test_across_sessions_the_later_statement_wins_whatever_the_delivery_order(
    tmp_path: Path,
) -> None:
    early = ev("a", 1, "we need django==4.2", time="2026-03-01T10:00:00Z")
    late = ev("b", 1, "upgrade to django==5.0", time="2026-03-05T10:00:00Z")
    for name, batch in (("x", [early, late]), ("y", [late, early])):
        with Memory.open(tmp_path / f"{name}.sqlite") as memory:
            for event in batch:
                memory.ingest([event])
            assert ("version", "version:4.2", True) in relations(neighbors(memory, "django"))
            assert ("version", "version:5.0", False) in relations(neighbors(memory, "Django"))
            # Purging the later session makes the earlier value current again.
            from memplug.reports.purge import purge

            purge(memory, sessions=["b"])
            assert relations(neighbors(memory, "django")) >= {("version", "version:4.2", False)}


def test_aliases_are_one_node_and_hops_reach_further(memory: Memory) -> None:
    cwd = "/home/ana/shop"
    memory.ingest([
        ev("s", 1, "look at src/app.py first", cwd=cwd),
        ev("s", 2, 'Edit {"file_path":"/home/ana/shop/src/app.py"}', type="tool/call",
           tool_name="Edit", call_id="c", cwd=cwd),
        ev("s", 3, "the database is db.internal:5432", cwd=cwd),
    ])  # fmt: skip
    one = neighbors(memory, "src/app.py")
    assert one["entity"] == "file:/home/ana/shop/src/app.py"
    assert relations(one) == {("in_project", "project:/home/ana/shop", False)}
    sources = one["neighbors"][0]["sources"]
    assert sources == [{"session_id": "s", "seq": 1}, {"session_id": "s", "seq": 2}]
    two = neighbors(memory, "src/app.py", hops=2)
    host = next(n for n in two["neighbors"] if n["entity"] == "host:db.internal")
    assert (host["hops"], host["via"]) == (2, "project:/home/ana/shop")


def test_scope_hides_other_projects(memory: Memory) -> None:
    memory.ingest([ev("a", 1, "we run redis on cache.local:6379", cwd="/p/one"),
                   ev("b", 1, "use cache.local:6380 here", cwd="/p/two")])  # fmt: skip
    mine = neighbors(memory, "cache.local", project="/p/one")
    assert mine["scope"] == "project:/p/one"
    assert {n["entity"] for n in mine["neighbors"]} == {"port:6379", "project:/p/one"}
    assert "port:6380" in {n["entity"] for n in neighbors(memory, "cache.local")["neighbors"]}


def test_export_golden_dot_and_mermaid(shop_memory: Memory) -> None:
    where = resolve(shop_memory.store, scope="session:shop-1")
    for fmt, name in (("dot", "graph-shop.dot"), ("mermaid", "graph-shop.mmd")):
        text = shop_memory.graph.export(where, fmt) + "\n"
        if os.environ.get("UPDATE_GOLDEN"):
            (GOLDEN / name).write_text(text, encoding="utf-8")
        assert text == (GOLDEN / name).read_text(encoding="utf-8"), f"{name} changed"
    assert "style=dashed" in (GOLDEN / "graph-shop.dot").read_text(encoding="utf-8")


def test_quotes_in_names_cannot_break_the_picture(memory: Memory) -> None:
    memory.ingest([ev("s", 1, "hello")])
    with memory.db.write_transaction():
        edge = ('subject:a "b"', "is", "value:c|d")
        memory.store.timeline.note_edges("s", "session:s", 1, None, [edge])
    where = resolve(memory.store, scope="global")
    dot = memory.graph.export(where, "dot")
    assert '"subject:a \\"b\\"" -> "value:c|d" [label="is"];' in dot
    mermaid = memory.graph.export(where, "mermaid")
    assert '["subject:a #quot;b#quot;"]' in mermaid and '["value:c#124;d"]' in mermaid


def test_cli_neighbors_contract_and_errors(memory: Memory, db_path: Path) -> None:
    memory.ingest([ev("s", 1, "remember: the API port is 8080"),
                   ev("s", 2, "the api runs on localhost:8080")])  # fmt: skip
    runner = CliRunner()
    out = runner.invoke(cli, ["--db", str(db_path), "graph", "neighbors", "8080", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["entity"] == "port:8080"
    for near in data["neighbors"]:
        assert set(near) >= {"entity", "relation", "sources"}
    text = runner.invoke(cli, ["--db", str(db_path), "graph", "neighbors", "port:8080"]).output
    assert "<- is" in text and "subject:api port" in text
    bad = runner.invoke(cli, ["--db", str(db_path), "graph", "neighbors", "8080", "--hops", "9"])
    assert bad.exit_code == 2
    picture = runner.invoke(cli, ["--db", str(db_path), "graph", "export", "--format", "mermaid"])
    assert picture.output.startswith("%% memplug graph, scope global\nflowchart LR\n")


def test_an_ambiguous_name_asks_for_the_id(memory: Memory) -> None:
    memory.ingest([ev("s", 1, "files a/main.py and b/main.py", cwd="/r")])
    from memplug.base.errors import ValidationError

    with pytest.raises(ValidationError, match="names several entities"):
        neighbors(memory, "main.py")
    assert neighbors(memory, "file:/r/a/main.py")["entity"] == "file:/r/a/main.py"
