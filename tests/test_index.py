"""Two tiers of raw evidence (docs/assembly.md, "Quotes, then an index"): a strong match
is quoted, the rest is pointed at one line each, and the message says how to pull."""

from __future__ import annotations

from memplug.base.config import load_config
from memplug.recall.assemble import (
    Assembler,
    AssemblyRequest,
    Candidates,
    EventCandidate,
    Pull,
    labels_for,
)
from memplug.recall.assemble.sections.index import GIST_WORDS, gist
from memplug.recall.query import parse_query
from memplug.recall.retrieve.ranking import Ranking
from memplug.recall.retrieve.strength import QueryTerms

DF = {"stripe": 2.0, "sandbox": 2.0, "key": 3.0, "vault": 2.0, "the": 900.0}
TERMS = QueryTerms(parse_query("stripe sandbox key vault"), DF, 1000.0, Ranking())
STRONG = EventCandidate(
    "s1", 4, "user/message", "The stripe sandbox key is in the vault now.", "user", score=2.0,
    time="2026-03-02T10:00:00Z",
)  # fmt: skip
FILLER = " ".join(f"word{i}" for i in range(40))
WEAK = EventCandidate(
    "s1", 9, "assistant/message", f"{FILLER} then the stripe docs said nothing more {FILLER}",
    "assistant", score=1.9, time="2026-03-02T11:00:00Z",
)  # fmt: skip


def run(*events: EventCandidate, pull: Pull | None = None, **assembly: object) -> object:
    config = load_config(None, environ={}, overrides={"assembly": assembly} if assembly else None)
    request = AssemblyRequest("s2", query="where is the stripe sandbox key vault?", pull=pull)
    return Assembler(config.config).build(
        request, request.query or "", Candidates(events=events, terms=TERMS), _no_task()
    )


def _no_task() -> object:
    from memplug.recall.assemble import TaskState

    return TaskState()


def test_a_strong_match_is_quoted_and_a_weak_one_only_indexed() -> None:
    result = run(STRONG, WEAK)
    sections = {e.ref: (e.section, e.why) for e in result.included}
    assert sections[STRONG.ref][0] == "evidence" and "quoted: shares" in sections[STRONG.ref][1]
    assert sections[WEAK.ref] == ("index", "a weak match")
    line = next(e.line for e in result.included if e.section == "index")
    # The ref in full, the date, who, a gist around the match (not the filler's head), size.
    assert line.startswith("- [ev :9] …")
    assert "### [ev s1] 2026-03-02 assistant said\n" + line in result.text
    assert "word38 word39 then the stripe docs" in line and line.endswith(" tok)")
    assert "## Index (the text of a ref: `memory expand REF`)" in result.text


def test_one_tier_quotes_every_line_that_passes() -> None:
    result = run(STRONG, WEAK, quote_specific=0)
    assert {e.section for e in result.included if e.ref in (STRONG.ref, WEAK.ref)} == {"evidence"}


def test_past_the_quote_limit_a_strong_line_is_indexed_with_why() -> None:
    result = run(STRONG, quotes=0)
    why = {e.ref: e.why for e in result.included}
    assert why[STRONG.ref].startswith("past assembly.quotes (shares")


def test_the_header_says_how_to_pull_with_the_mcp_tools_when_they_are_the_agent_s() -> None:
    cli, mcp = run(STRONG, WEAK).text, run(STRONG, WEAK, pull=Pull(mcp=True)).text
    assert '`memory search "WORDS"`' in cli and "memory_search" not in cli
    assert "the MCP tools memory_search and memory_expand" in mcp
    assert "## Index (the text of a ref: memory_expand)" in mcp
    assert labels_for("en", Pull(command="/opt/mp/memory"))["header"].count("/opt/mp/memory") == 2


def test_a_gist_is_at_most_its_words_and_marks_its_cuts() -> None:
    words = (
        " ".join(f"w{i}" for i in range(100)) + " stripe " + " ".join(f"v{i}" for i in range(100))
    )
    cut = gist(words, TERMS)
    assert cut.startswith("…") and cut.endswith("…") and "stripe" in cut
    assert len(cut.strip("…").split()) == GIST_WORDS
    assert gist("short stripe line", TERMS) == "short stripe line"


def test_an_index_alone_carries_no_degradation_notice() -> None:
    """The index only points, and a pull reports its own coverage: an incomplete search
    is said beside quoted evidence, not beside pointers alone."""
    from memplug.recall.assemble import NOTHING_TO_QUALIFY, Coverage, TaskState

    config = load_config(None, environ={}).config
    request = AssemblyRequest("s2", query="where is the stripe sandbox key vault?")
    gap = Coverage(complete=False, reasons=["truncated_events"])
    weak_too = EventCandidate(
        "s1", 12, "assistant/message", f"{FILLER} the stripe page moved {FILLER}",
        "assistant", score=1.8, time="2026-03-02T12:00:00Z",
    )  # fmt: skip

    def build(*events: EventCandidate) -> object:
        found = Candidates(events=events, terms=TERMS, coverage=gap)
        return Assembler(config).build(request, request.query or "", found, TaskState())

    pointers = build(WEAK, weak_too)
    assert {e.section for e in pointers.included} == {"index"}
    assert "## Notice" not in pointers.text
    assert {o.reason for o in pointers.omitted if o.section == "notice"} == {NOTHING_TO_QUALIFY}
    quoted = build(STRONG, WEAK, weak_too)
    assert "evidence" in {e.section for e in quoted.included}
