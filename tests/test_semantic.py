"""The optional semantic provider: the seam, the packaged model, vectors in the file.

These load the real builtin table that ships in the package (it needs nothing beyond
the standard library). Test providers that fail or
change version are registered as real entry points of the ``memplug.embedders`` group.
"""

from __future__ import annotations

import importlib.metadata
import io
import json
import math
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import freezegun
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import memplug.semantic as semantic_seam
from memplug.base.config import load_config
from memplug.cli.app import cli as memory_cli
from memplug.memory import Memory
from memplug.reports.purge import purge
from memplug.semantic import ENTRY_POINT_GROUP, SemanticUnavailable, load_embedder
from memplug.semantic.builtin import Builtin, tokenizer
from memplug.semantic.service import cell_groups
from memplug.semantic.vecmath import Cells, dots, int8_rows, quantize
from memplug.store.records import EventScope

ON = {"semantic": {"provider": "builtin"}}


def event(session: str, seq: int, text: str, **extra: Any) -> dict[str, Any]:
    data = {
        "session_id": session,
        "seq": seq,
        "type": "user/message",
        "role": "user",
        "time": f"2026-02-{seq % 28 + 1:02d}T10:00:00Z",
        "text": text,
        "cwd": "/home/ana/garden",
    }
    data.update(extra)
    return data


CHAT = [
    event("s1", 1, "I have been so anxious lately, work is crushing me."),
    event(
        "s1",
        2,
        "Yoga and long walks help me with stress relief.",
        role="assistant",
        type="assistant/message",
    ),
    event("s1", 3, "We played a benefit basketball game for the children's hospital."),
    event("s1", 4, "The deploy uses port 8080 on the staging host."),
    event("s1", 5, "ran pytest", type="tool/result", role="tool", tool_name="bash"),
    event("s2", 1, "My sister adopted a puppy named Biscuit last week."),
    event("s2", 2, "We cooked pasta with tomatoes from the garden."),
]


def signed(data: bytes) -> list[int]:
    return list(memoryview(data).cast("b"))


def jsonl(events: Sequence[dict[str, Any]]) -> io.BytesIO:
    return io.BytesIO("".join(json.dumps(e) + "\n" for e in events).encode())


def imported(path: Path, events: Sequence[dict[str, Any]] = CHAT, **config: Any) -> Memory:
    memory = Memory.open(path, config={**ON, **config})
    memory.import_jsonl([("-", jsonl(events))])
    return memory


def vectors_of(memory: Memory) -> dict[tuple[str, int], tuple[bytes, float, int]]:
    """Each embedded event's stored vector: int8 bytes, scale and cell."""
    rows = memory.db.conn.execute(
        "SELECT e.session_id, e.seq, v.vector, v.scale, v.cell FROM event_vectors v "
        "JOIN events e ON e.id = v.event_id"
    )
    return {(r[0], r[1]): (bytes(r[2]), r[3], r[4]) for r in rows}


# -- providers registered the way a plugin would be --------------------------------------


class Raising:
    name = "raising"
    version = "1"
    dimensions = 8

    def embed(self, texts: Sequence[str]) -> Any:
        raise RuntimeError("the model exploded")


class BuiltinNext(Builtin):
    version = "next-version"


@pytest.fixture
def providers(monkeypatch: pytest.MonkeyPatch):
    """Register providers under the entry-point group for this test only."""
    real = importlib.metadata.entry_points
    registered: dict[str, str] = {}

    def entry_points(**params: Any) -> Any:
        if params.get("group") != ENTRY_POINT_GROUP:
            return real(**params)
        found = {ep.name: ep for ep in real(group=ENTRY_POINT_GROUP)}
        for name, value in registered.items():
            found[name] = importlib.metadata.EntryPoint(name, value, ENTRY_POINT_GROUP)
        return importlib.metadata.EntryPoints(found.values())

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    return registered


# -- the seam and the packaged model ------------------------------------------------------


def test_provider_is_off_by_default_and_set_by_the_environment() -> None:
    assert load_config(None, environ={}).config.semantic.provider == "off"
    loaded = load_config(None, environ={"MEMPLUG_SEMANTIC__PROVIDER": "builtin"})
    assert loaded.config.semantic.provider == "builtin"
    assert loaded.sources["semantic.provider"] == "env MEMPLUG_SEMANTIC__PROVIDER"


def test_the_builtin_provider_is_found_by_its_entry_point_and_loads_the_packaged_table() -> None:
    embedder = load_embedder("builtin")
    assert isinstance(embedder, Builtin)
    assert (embedder.name, embedder.dimensions) == ("builtin", 256)
    vectors = embedder.embed(["my dog is sick", "the puppy has a fever", "port 8080 on staging"])
    assert [len(v) for v in vectors] == [256] * 3
    assert all(math.isclose(math.hypot(*v), 1.0, rel_tol=1e-9) for v in vectors)

    def cosine(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    # Meaning, not spelling: the paraphrase (no word in common) is nearer than the
    # unrelated sentence.
    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2]) + 0.2
    assert embedder.embed([""]).tolist() == [[0.0] * 256]


def test_the_builtin_shortcut_names_the_registered_entry_point() -> None:
    """The builtin provider is loaded without an entry-point scan; what it loads must be
    what pyproject.toml registers under that name."""
    (point,) = [
        p for p in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP) if p.name == "builtin"
    ]
    assert point.value == "{}:{}".format(*semantic_seam.BUILTIN[1:])


def test_an_unknown_provider_names_the_installed_ones() -> None:
    with pytest.raises(SemanticUnavailable, match=r"no semantic provider named 'nope'.*builtin"):
        load_embedder("nope")


def test_a_provider_whose_package_is_missing_says_so(providers) -> None:
    providers["gone"] = "memplug_no_such_encoder.model:Encoder"
    with pytest.raises(
        SemanticUnavailable, match=r"'gone' is not installed \(memplug_no_such_encoder"
    ):
        load_embedder("gone")


@pytest.mark.parametrize(
    ("missing", "package"),
    [("numpy", "numpy"), ("tokenizers", "tokenizers"), ("memplug_table", "memplug-local-table")],
)
def test_without_the_extra_the_provider_is_unavailable_and_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, missing: str, package: str
) -> None:
    """Configured but not installed (``pip install memplug-local`` without
    ``[semantic]``): status, the search's coverage and the injected message say so, and
    lexical search goes on."""
    from memplug.recall.assemble import AssemblyRequest
    from memplug.reports.diagnostics import status

    for module in ("memplug.semantic.vecmath", "memplug.semantic.builtin"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.setitem(sys.modules, missing, None)  # as if it were not installed
    hint = f"semantic search needs {package} (not installed): pip install 'memplug-local[semantic]'"
    with pytest.raises(SemanticUnavailable) as raised:
        load_embedder("builtin")
    assert str(raised.value) == hint
    with imported(tmp_path / "m.sqlite", PETS) as memory:
        assert status(memory)["semantic"] | {"models": []} == {
            "provider": "builtin",
            "models": [],
            "state": "semantic_unavailable",
            "reason": hint,
        }
        page = memory.retriever.search("dog")
        assert page.coverage.reasons == ["semantic_unavailable"] and page.hits
        result = memory.assemble(AssemblyRequest(session_id="p1", query="my dog"))
        assert "Memory search skipped matches by meaning (no semantic provider)" in result.text


def test_the_tokenizer_is_bert_uncased_wordpiece() -> None:
    """Lower case, accents stripped, punctuation and CJK ideographs split, greedy longest
    word pieces with ``##``, unknown words as ``[UNK]``, no ``[CLS]``/``[SEP]``."""
    vocab = ["[PAD]", "[UNK]", "un", "##aff", "##able", "hello", ",", "北", "naive", "!"]
    found = tokenizer({token: i for i, token in enumerate(vocab)})
    ids = found.encode("Hello, unaffable NAÏVE 北京!", add_special_tokens=False).ids
    assert ids == [5, 6, 2, 3, 4, 8, 7, 1, 9]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_tokens_never_fail_and_stay_in_the_vocabulary(text: str) -> None:
    (ids,) = _builtin().token_ids([text])
    assert all(0 <= i < len(_builtin()._scale) for i in ids)
    assert len(ids) <= 512 and _builtin().token_ids([text]) == [ids]


_CACHE: dict[str, Builtin] = {}


def _builtin() -> Builtin:
    if "b" not in _CACHE:
        _CACHE["b"] = Builtin()
    return _CACHE["b"]


def test_the_default_install_never_imports_numpy(tmp_path: Path) -> None:
    """Provider off: capture, assemble, search and status import nothing of the extra."""
    code = f"""
import io, json, sys
from memplug.memory import Memory
from memplug.recall.assemble import AssemblyRequest
from memplug.reports.diagnostics import status
events = {json.dumps(CHAT)}
with Memory.open({str(tmp_path / "m.sqlite")!r}) as memory:
    data = "".join(json.dumps(e) + "\\n" for e in events).encode()
    memory.import_jsonl([("-", io.BytesIO(data))])
    memory.assemble(AssemblyRequest(session_id="s1", query="how do I destress?"))
    memory.retriever.search("stress")
    assert status(memory)["semantic"]["state"] == "off"
print(sorted(m for m in sys.modules if m.split(".")[0] in ("numpy", "tokenizers")
             or m.startswith(("memplug.semantic.builtin", "memplug.semantic.vecmath"))))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


# -- vectors in the file --------------------------------------------------------------------


def test_import_embeds_prose_and_status_reports_provider_model_and_lag(tmp_path: Path) -> None:
    from memplug.reports.diagnostics import status

    with imported(tmp_path / "m.sqlite") as memory:
        stored = vectors_of(memory)
        # User and assistant prose; the tool result stays lexical only.
        assert sorted(stored) == [
            (s, q) for s, q in [("s1", 1), ("s1", 2), ("s1", 3), ("s1", 4), ("s2", 1), ("s2", 2)]
        ]
        # int8 with a scale (the largest value 127), filed in one of the 256 cells.
        assert {len(blob) for blob, _, _ in stored.values()} == {256}
        assert all(max(signed(blob), key=abs) in (127, -127) for blob, _, _ in stored.values())
        assert all(scale > 0 and 0 <= cell < 256 for _, scale, cell in stored.values())
        assert len({cell for _, _, cell in stored.values()}) > 1
        semantic = status(memory)["semantic"]
        assert semantic["state"] == "ok" and semantic["lag"] == 0
        assert semantic["version"] == Builtin.version
        assert semantic["vectors"] == {"embeddable": 6, "current": 6, "stale": 0, "missing": 0}
        assert semantic["models"] == [
            {"provider": "builtin", "version": Builtin.version, "dimensions": 256, "vectors": 6}
        ]


def test_vectors_are_identical_across_two_databases_and_import_orders(tmp_path: Path) -> None:
    first = imported(tmp_path / "a.sqlite")
    second = Memory.open(tmp_path / "b.sqlite", config=ON)
    for half in (CHAT[4:], CHAT[:4]):  # another order, in two imports
        second.import_jsonl([("-", jsonl(half))])
    with first, second:
        assert vectors_of(first) == vectors_of(second)


def test_a_live_capture_embeds_within_its_budget_and_rebuild_catches_up(
    tmp_path: Path,
) -> None:
    from memplug.base.models import parse_event

    path = tmp_path / "m.sqlite"
    with Memory.open(path, config={"semantic": {"provider": "builtin", "captureBudgetMs": 0}}) as m:
        m.ingest([parse_event(e) for e in CHAT])
        assert vectors_of(m) == {}
        assert m.semantic.status()["lag"] == 6
    result = CliRunner().invoke(
        memory_cli,
        ["--db", str(path), "rebuild", "--vectors", "--json"],
        env={"MEMPLUG_SEMANTIC__PROVIDER": "builtin"},
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"vectors": {"embedded": 6, "remaining": 0, "error": None}}
    with Memory.open(path, config=ON) as m:
        assert len(vectors_of(m)) == 6


def test_a_changed_model_version_is_stale_until_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.sqlite"
    imported(path).close()
    monkeypatch.setattr(semantic_seam, "BUILTIN", ("builtin", __name__, "BuiltinNext"))
    with Memory.open(path, config=ON) as memory:
        semantic = memory.semantic.status()
        assert semantic["state"] == "vectors_incomplete"
        assert semantic["vectors"] == {"embeddable": 6, "current": 0, "stale": 6, "missing": 6}
        report = memory.embed_vectors()
        assert report is not None and (report.embedded, report.remaining) == (6, 0)
        assert memory.semantic.status()["models"][-1]["version"] == "next-version"


def test_a_failing_provider_is_recorded_and_never_breaks_capture(tmp_path: Path, providers) -> None:
    from memplug.reports.diagnostics import status

    providers["raising"] = f"{__name__}:Raising"
    path = tmp_path / "m.sqlite"
    with Memory.open(path, config={"semantic": {"provider": "raising"}}) as memory:
        summary = memory.import_jsonl([("-", jsonl(CHAT))])
        assert summary.new == len(CHAT)
        assert summary.as_dict()["vectors"]["error"] == "RuntimeError: the model exploded"
        report = status(memory)
        assert report["semantic"]["lag"] == 6
        assert report["latest_errors"][0]["stage"] == "semantic"
    result = CliRunner().invoke(
        memory_cli,
        ["--db", str(path), "rebuild", "--vectors"],
        env={"MEMPLUG_SEMANTIC__PROVIDER": "raising"},
    )
    assert result.exit_code == 1
    assert "provider failed: RuntimeError: the model exploded" in result.output


def test_an_unavailable_provider_shows_in_status_and_rebuild_refuses(tmp_path: Path, cli) -> None:
    path = tmp_path / "m.sqlite"
    imported(path, semantic={"provider": "absent"}).close()
    env = {"MEMPLUG_SEMANTIC__PROVIDER": "absent"}
    out = cli("--db", str(path), "status", "--json", env=env)
    semantic = out.json()["semantic"]
    assert semantic["state"] == "semantic_unavailable"
    assert "no semantic provider named 'absent'" in semantic["reason"]
    text = cli("--db", str(path), "status", env=env)
    assert "semantic   absent: UNAVAILABLE — no semantic provider named 'absent'" in text.stdout
    refused = cli("--db", str(path), "rebuild", "--vectors", env=env)
    assert refused.returncode == 1
    assert refused.stderr.startswith("Error: no semantic provider named 'absent'")
    assert len(refused.stderr.splitlines()) == 1


def test_rebuild_vectors_with_the_provider_off_is_bad_usage(tmp_path: Path, cli) -> None:
    path = tmp_path / "m.sqlite"
    Memory.open(path).close()
    out = cli("--db", str(path), "rebuild", "--vectors")
    assert out.returncode == 2
    assert out.stderr == "Error: semantic.provider is off: there are no vectors to rebuild\n"


def test_status_text_shows_counts_and_lag(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    config = {"semantic": {"provider": "builtin", "captureBudgetMs": 0}}
    from memplug.base.models import parse_event

    with Memory.open(path, config=config) as memory:
        memory.ingest([parse_event(e) for e in CHAT])
    out = CliRunner().invoke(
        memory_cli, ["--db", str(path), "status"], env={"MEMPLUG_SEMANTIC__PROVIDER": "builtin"}
    )
    assert (
        f"semantic   builtin ({Builtin.model}, {Builtin.version}): 0 of 6 events embedded, "
        "lag 6 (0 stale) — memory rebuild --vectors"
    ) in out.output


def test_purge_removes_vectors_with_their_events(tmp_path: Path) -> None:
    with imported(tmp_path / "m.sqlite") as memory:
        purge(memory, sessions=["s2"])
        assert sorted(vectors_of(memory)) == [("s1", 1), ("s1", 2), ("s1", 3), ("s1", 4)]
        purge(memory, everything=True, vacuum=True)
        assert vectors_of(memory) == {}
        assert memory.db.conn.execute("SELECT count(*) FROM event_vectors").fetchone()[0] == 0


def test_events_after_purging_the_newest_ones_still_get_vectors(tmp_path: Path) -> None:
    """Purging the newest session frees its ids for the next events — below the
    watermark the embedding pass starts from; they must get vectors all the same."""
    with imported(tmp_path / "m.sqlite") as memory:
        freed = memory.db.conn.execute("SELECT max(id) FROM events").fetchone()[0]
        purge(memory, sessions=["s2"])
        memory.import_jsonl([("-", jsonl([event("s3", 1, "A walk in the park calms me down.")]))])
        reused = memory.db.conn.execute("SELECT id FROM events WHERE session_id = 's3'").fetchone()[
            0
        ]
        assert reused < freed
        assert ("s3", 1) in vectors_of(memory)
        assert memory.semantic.status()["vectors"]["missing"] == 0


# -- hybrid candidates -----------------------------------------------------------------------

PETS = [
    event("p1", 1, "We talked about the weather and the train schedule."),
    event("p1", 2, "My dog has been sick all week, the vet gave him pills."),
    event("p1", 3, "The deploy listens on port 8080 of the staging host."),
    event("p1", 4, "Lunch was a sandwich with cheese."),
    event("p1", 5, "I bought new shoes for running in the park."),
]


def test_a_semantic_candidate_is_found_without_a_shared_word(tmp_path: Path) -> None:
    query = "is the puppy ill?"
    with imported(tmp_path / "on.sqlite", PETS) as memory:
        page = memory.retriever.search(query)
        assert [(h.seq, h.why.split(":")[0]) for h in page.hits][:1] == [(2, "semantic")]
        assert page.coverage.complete
    with Memory.open(tmp_path / "off.sqlite") as lexical:
        lexical.import_jsonl([("-", jsonl(PETS))])
        assert lexical.retriever.search(query).hits == []


GARDEN = [
    event("g1", 1, "The garden needs watering every evening in summer."),
    event("g1", 2, "We ordered pizza for dinner."),
    event("g2", 1, "My tomato plants in the garden are wilting and the leaves turn yellow."),
    event("g3", 1, "The garden party is on Saturday at noon, in the garden."),
    event("g4", 1, "Our vegetable patch has sick seedlings with yellow leaves."),
    # The prompt being answered, in the session that asks (the host shows it already).
    event("now", 1, "why are the plants in my garden dying?"),
]


def test_at_most_two_candidates_come_from_one_session(tmp_path: Path) -> None:
    """A session on the query's topic gives its two nearest turns; the other slots go to
    other sessions, however near that session's other turns are."""
    garden = [event("a", n, f"{TOPICS[4]} Day {n}.") for n in range(1, 7)]
    other = [event("b", 1, "We pruned the roses in the garden."), *MANY[:40]]
    config = {"provider": "builtin", "candidates": 5}
    with imported(tmp_path / "m.sqlite", garden + other, semantic=config) as memory:
        scope, snap = EventScope(include_generated=False), memory.store.search.snapshot()
        hits = memory.semantic.similar(TOPICS[4], scope, snap, 5).hits
        sessions = dict(memory.db.conn.execute("SELECT id, session_id FROM events"))
        found = [sessions[i] for i, _ in hits]
        assert len(found) == 5 and found[:2] == ["a", "a"] and found.count("a") == 2
        scores = [score for _, score in hits]
        assert scores == sorted(scores, reverse=True)


def test_the_semantic_bonus_reorders_below_the_best_line_and_never_raises_it(
    tmp_path: Path,
) -> None:
    """The page's best lexical score (outside the asking session) stays what the words
    earned, so the relevance cut measured from it keeps the lexical evidence; lines
    below it are lifted, and lines no word found come in."""
    query = "why are the plants in my garden dying?"
    with (
        Memory.open(tmp_path / "off.sqlite") as lexical,
        imported(tmp_path / "on.sqlite", GARDEN) as hybrid,
    ):
        lexical.import_jsonl([("-", jsonl(GARDEN))])
        results = []
        for memory in (lexical, hybrid):
            found = memory.retriever.retrieve("now", query, scope="global").evidence
            results.append({(e.session_id, e.seq): (e.score, e.why) for e in found})
        off, on = results
    assert off[("now", 1)][0] > off[("g2", 1)][0]  # the prompt itself scores highest
    best = max(score for (session, _), (score, _) in off.items() if session != "now")
    assert max(score for (session, _), (score, _) in on.items() if session != "now") == best
    lifted = [k for k, (score, why) in on.items() if "+semantic" in why and score > off[k][0]]
    assert lifted and all(on[k][0] <= best for k in lifted)
    assert on[("g4", 1)][1].startswith("semantic:") and ("g4", 1) not in off


def test_exact_symbol_pins_still_rank_first_and_both_origins_are_named(tmp_path: Path) -> None:
    with imported(tmp_path / "m.sqlite", PETS) as memory:
        result = memory.retriever.retrieve("p1", "my sick dog and port 8080", limit=10)
        first, second = result.evidence[:2]
        assert (first.seq, first.pinned) == (3, True)
        assert first.why.startswith("exact:8080")
        assert second.seq == 2 and " +semantic:" in second.why  # lexical and semantic


def test_hybrid_results_are_identical_across_two_databases(tmp_path: Path) -> None:
    first = imported(tmp_path / "a.sqlite", PETS + CHAT)
    second = Memory.open(tmp_path / "b.sqlite", config=ON)
    second.import_jsonl([("-", jsonl(list(reversed(PETS + CHAT))))])
    with first, second:
        for query in ("is the puppy ill?", "how do I relax", "charity event for kids"):
            a = first.retriever.search(query, limit=20).as_json()
            b = second.retriever.search(query, limit=20).as_json()
            assert a == b and a["hits"], query


def test_an_unavailable_provider_is_a_coverage_reason_and_a_notice(tmp_path: Path) -> None:
    from memplug.recall.assemble import AssemblyRequest

    with imported(tmp_path / "m.sqlite", PETS, semantic={"provider": "absent"}) as memory:
        page = memory.retriever.search("dog")
        assert page.coverage.reasons == ["semantic_unavailable"]
        # Lexical search goes on: the match, then its neighbours.
        assert [(h.seq, h.why) for h in page.hits][:1] == [(2, "word:dog")]
        assert all(h.why == "near:p1:2" for h in page.hits[1:])
        result = memory.assemble(AssemblyRequest(session_id="p1", query="my dog"))
        assert "Memory search skipped matches by meaning (no semantic provider)" in result.text


def test_missing_vectors_are_a_coverage_reason_until_rebuilt(tmp_path: Path) -> None:
    from memplug.base.models import parse_event

    config = {"semantic": {"provider": "builtin", "captureBudgetMs": 0}}
    with Memory.open(tmp_path / "m.sqlite", config=config) as memory:
        memory.ingest([parse_event(e) for e in PETS])
        assert memory.retriever.search("dog").coverage.reasons == ["vectors_incomplete"]
        memory.embed_vectors()
        assert memory.retriever.search("dog").coverage.complete


def test_explain_says_how_each_line_was_found(tmp_path: Path) -> None:
    from memplug.recall.assemble import AssemblyRequest
    from memplug.reports.explain import explain, find_assembly, render_explain

    with imported(tmp_path / "m.sqlite", PETS) as memory:
        memory.assemble(AssemblyRequest(session_id="p1", query="my puppy is ill, and the deploy"))
        text = render_explain(explain(find_assembly(memory.store)))
    assert "semantic   builtin" in text
    lines = {line.split()[1]: line for line in text.splitlines() if line.startswith("   + ")}
    assert "via semantic  " in lines["p1:2"]  # no word in common with the query
    assert "via both  " in lines["p1:3"]  # "deploy", and close in meaning too
    assert all(" via " in line for line in lines.values())


def test_a_live_capture_embeds_its_new_events_within_the_default_budget(tmp_path: Path) -> None:
    from memplug.base.models import parse_event

    # The budget is wall time: a frozen clock keeps a loaded machine from spending it
    # before the first batch, so what is checked is the capture path, not the machine.
    with (
        freezegun.freeze_time("2026-11-30 12:00:00"),
        Memory.open(tmp_path / "m.sqlite", config=ON) as memory,
    ):
        memory.ingest([parse_event(e) for e in PETS[:2]])
        assert sorted(vectors_of(memory)) == [("p1", 1), ("p1", 2)]
        memory.ingest([parse_event(e) for e in PETS[2:]])
        assert len(vectors_of(memory)) == len(PETS)
        assert memory.retriever.search("dog").coverage.complete


def test_equal_similarities_break_ties_by_session_and_seq_in_any_database(
    tmp_path: Path,
) -> None:
    """Identical texts score the same; which of them fit the candidate cut must not
    depend on the order a database happened to ingest them in (its row ids)."""
    same = [event(f"t{n}", 1, "Thanks, that really helps with my garden!") for n in range(8)]
    config = {"semantic": {"provider": "builtin", "candidates": 3}}
    first = imported(tmp_path / "a.sqlite", same, **config)
    second = Memory.open(tmp_path / "b.sqlite", config={**ON, **config})
    second.import_jsonl([("-", jsonl(list(reversed(same))))])
    with first, second:
        a = first.retriever.search("grateful for the support", limit=20)
        b = second.retriever.search("grateful for the support", limit=20)
        assert [h.session_id for h in a.hits] == ["t0", "t1", "t2"]
        assert a.as_json() == b.as_json()


# -- int8 arithmetic and the coarse cells -------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 256).flatmap(
        lambda dims: st.tuples(
            st.binary(min_size=dims, max_size=dims),
            st.lists(st.binary(min_size=dims, max_size=dims), max_size=12),
        )
    )
)
def test_int8_dot_products_are_exact(case: tuple[bytes, list[bytes]]) -> None:
    """No int8 overflow: 256 products of ±128 sum far past what int8 or int16 hold."""
    query, rows = case
    found = dots(int8_rows(b"".join(rows), len(query)), query).tolist()
    plain = [sum(a * b for a, b in zip(signed(query), signed(row), strict=True)) for row in rows]
    assert found == plain


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1.0, 1.0), min_size=1, max_size=64))
def test_quantize_keeps_every_value_within_half_a_step(vector: list[float]) -> None:
    data, scale = quantize(vector)
    assert len(data) == len(vector)
    if scale == 0.0:
        assert set(data) <= {0} and max(map(abs, vector)) < 1e-300
    else:
        assert max(map(abs, signed(data))) == 127
        assert all(
            abs(x - scale * q) <= scale / 2 * 1.000001
            for x, q in zip(vector, signed(data), strict=True)
        )


TOPICS = [
    "We hiked up the mountain trail and camped by the lake.",
    "The sourdough starter needs feeding twice a day before baking bread.",
    "My daughter scored two goals at her football match on Saturday.",
    "The quarterly budget review moved to next Thursday afternoon.",
    "I repotted the tomato seedlings and watered the herb garden.",
    "Our flight to Lisbon was delayed by three hours at the airport.",
]
MANY = [
    event(f"m{n // 40:02d}", n % 40 + 1, f"{TOPICS[n % len(TOPICS)]} Note {n}.") for n in range(240)
]


def test_a_large_scope_reads_only_the_cells_nearest_the_query(tmp_path: Path) -> None:
    """Past `semantic.scanLimit` vectors, a query reads its nearest cells first (in
    groups that double: 8, 8, 16, …), and the limit holds; the last group may be cut
    short, in (cell, session, seq) order, the same in every database."""
    query = "baking bread with a starter"
    small = {"semantic": {"provider": "builtin", "scanLimit": 100, "candidates": 50}}
    with imported(tmp_path / "cut.sqlite", MANY, **small) as cut:
        embedder = cut.semantic.embedder
        assert embedder is not None and isinstance(embedder.cells, Cells)
        stored = vectors_of(cut)
        query_bytes = quantize(embedder.embed([query])[0])[0]
        groups = cell_groups(embedder.cells.ranked(query_bytes))
        assert [len(g) for g in groups] == [8, 8, 16, 32, 64, 128]
        scope, snap = EventScope(include_generated=False), cut.store.search.snapshot()
        read = cut.semantic._read(1, embedder.cells, query_bytes, scope, snap)
        assert len(read.ids) == 100 < len(stored)
        read_cells = {stored[key][2] for key in read.keys}
        last = max(i for i, group in enumerate(groups) if read_cells & set(group))
        assert read_cells <= {c for group in groups[: last + 1] for c in group}
        # Every vector of the groups before the last one was read.
        earlier = {c for group in groups[:last] for c in group}
        assert {k for k, v in stored.items() if v[2] in earlier} <= set(read.keys)
        hits = cut.semantic.similar(query, scope, snap, 50).hits
        assert {i for i, _ in hits} <= set(read.ids)
        key_of = dict(zip(read.ids, read.keys, strict=True))
        text = {(e["session_id"], e["seq"]): e["text"] for e in MANY}
        assert all("sourdough" in text[key_of[i]] for i, _ in hits[:5])
    again = Memory.open(tmp_path / "again.sqlite", config={**ON, **small})
    again.import_jsonl([("-", jsonl(list(reversed(MANY))))])
    with again, imported(tmp_path / "cut2.sqlite", MANY, **small) as cut:
        first, second = again.retriever.search(query), cut.retriever.search(query)
        assert [(h.session_id, h.seq, h.why) for h in first.hits] == [
            (h.session_id, h.seq, h.why) for h in second.hits
        ]
        assert any("semantic" in h.why for h in first.hits)


def test_a_scope_under_the_scan_limit_is_searched_exactly(tmp_path: Path) -> None:
    """Below `semantic.scanLimit`, reading cell by cell reads every vector: the hits are
    those of a scan of all of them."""
    query = "a delayed flight"
    with imported(tmp_path / "m.sqlite", MANY) as memory:
        embedder = memory.semantic.embedder
        assert embedder is not None
        scope, snap = EventScope(include_generated=False), memory.store.search.snapshot()
        everything = memory.store.vectors.scan(1, scope, snap)
        by_cells = memory.semantic._read(
            1, embedder.cells, quantize(embedder.embed([query])[0])[0], scope, snap
        )
        assert sorted(by_cells.ids) == sorted(everything.ids) and len(everything.ids) == 240


def test_a_memory_under_another_budget_shares_its_loaded_provider(tmp_path: Path) -> None:
    """The prompt hook assembles through ``with_config`` (a smaller budget): the table is
    loaded once per process, not once per Memory; another semantic config loads its own."""
    from msgspec.structs import replace

    with Memory.open(tmp_path / "m.sqlite", config=ON) as memory:
        assert memory.semantic.embedder is not None
        config = memory.config
        smaller = replace(config, assembly=replace(config.assembly, soft_budget_tokens=100))
        assert memory.with_config(smaller).semantic is memory.semantic
        other = replace(config, semantic=replace(config.semantic, candidates=5))
        assert memory.with_config(other).semantic is not memory.semantic


@pytest.fixture(autouse=True)
def _one_tier(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests judge which lines are worth quoting at all: every line that passes is
    quoted (one tier), so that the two tiers' own criterion (test_index.py) is not what
    they measure."""
    monkeypatch.setenv("MEMPLUG_ASSEMBLY__QUOTE_SPECIFIC", "0")
    monkeypatch.setenv("MEMPLUG_ASSEMBLY__QUOTES", "100")
