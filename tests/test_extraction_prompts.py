"""The hand-labelled Claude Code prompts (issue 24) and how they are scored.

The prompts themselves stay in ``../shared``; this checks the labels' shape and the
scorer ``python -m bench.extraction`` reports with (``bench.extraction.score_prompts``).
"""

from __future__ import annotations

from collections import Counter

from bench.extraction import HALVES, combined, load_prompts, matches_label, score_prompts

ROWS = load_prompts()
KINDS = {"decision", "constraint", "preference", "fact"}


def test_every_prompt_is_labelled_with_one_half_and_one_author_per_file() -> None:
    assert len(ROWS) == 493
    assert len({r["uuid"] for r in ROWS}) == len(ROWS)
    halves = {r["file"]: r["half"] for r in ROWS}
    assert all(halves[r["file"]] == r["half"] for r in ROWS)  # one half per file
    authors = {r["file"]: r["author"] for r in ROWS}
    assert all(authors[r["file"]] == r["author"] for r in ROWS)
    assert len(set(authors.values())) >= 3
    for row in ROWS:
        kinds = [i["kind"] for i in row["items"]]
        assert set(kinds) <= KINDS and all(i["quote"].strip() for i in row["items"]), row
        want = kinds[0] if len(kinds) == 1 else ("several" if kinds else "none")
        assert row["label"] == want, row
    labelled = Counter(r["half"] for r in ROWS if r["items"])
    assert set(labelled) == set(HALVES) and min(labelled.values()) >= 10


def _item(kind: str, content: str, row: dict) -> dict:
    return {"kind": kind, "content": content, "file": row["file"], "uuids": [row["uuid"]],
            "rule": "r@1"}  # fmt: skip


def test_an_item_is_right_only_with_the_labelled_kind_and_words() -> None:
    label = {"kind": "decision", "quote": "let's use apple container instead of docker proper"}
    assert matches_label({"kind": "decision", "content": "use apple container"}, label)
    assert not matches_label({"kind": "constraint", "content": "use apple container"}, label)
    assert not matches_label({"kind": "decision", "content": "push the branch"}, label)


def test_by_author_every_prompt_counts_once_and_structural_items_are_not_prompts() -> None:
    first = next(r for r in ROWS if r["items"])
    quote = first["items"][0]
    plan = {**_item("decision", "Approved plan: X", first), "rule": "structure.plan_approved@1"}
    items = [_item(quote["kind"], quote["quote"], first), plan]
    by_author = score_prompts(items, ROWS, by="author")
    assert sum(sc.prompts for sc in by_author.values()) == len(ROWS)
    assert combined(by_author).produced == 1  # the structural item is scored elsewhere
    assert by_author[first["author"]].found == 1


def test_prompt_recall_and_item_precision_per_half() -> None:
    labelled = [r for r in ROWS if r["items"]]
    unlabelled = next(r for r in ROWS if not r["items"])
    first = labelled[0]
    quote = first["items"][0]
    items = [
        _item(quote["kind"], quote["quote"], first),  # right
        _item("proposal", quote["quote"], first),  # wrong kind
        _item("decision", "fix the test", unlabelled),  # from an unlabelled prompt
    ]
    scores = score_prompts(items, ROWS)
    both = combined(scores)
    assert (both.produced, both.right, both.found) == (3, 1, 1)
    assert both.labelled == len(labelled) and len(both.wrong) == 2
    half = scores[first["half"]]
    assert half.found == 1 and half.recall == 1 / half.labelled
