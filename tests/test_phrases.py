"""Every labelled example of every locale's phrase table (memplug/recall/retrieve/phrases.py),
through the functions that read the table."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memplug.recall.assemble import relevance
from memplug.recall.assemble.sections.evidence import EvidenceSections
from memplug.recall.retrieve.phrases import FINDING, LEAD_IN, TABLES, PhraseExample


def _lead_in(text: str) -> bool:
    match = LEAD_IN.match(text)
    return match is not None and match.end() > 0


CHECKS: dict[str, Callable[[str], bool]] = {
    "generic": relevance.generic_request,
    "earlier": relevance.asks_about_earlier_work,
    "asks_only": relevance.asks_only,
    "steps": relevance.asks_for_steps,
    "narration": lambda text: EvidenceSections._narration(None, text),  # type: ignore[arg-type]
    "finding": lambda text: FINDING.search(text) is not None,
    "lead_in": _lead_in,
}
EXAMPLES = [(table.lang, example) for table in TABLES for example in table.examples]


@pytest.mark.parametrize(
    ("lang", "example"), EXAMPLES, ids=[f"{lang}:{e.check}:{e.text}" for lang, e in EXAMPLES]
)
def test_labelled_phrase(lang: str, example: PhraseExample) -> None:
    assert CHECKS[example.check](example.text) is example.expect


def test_every_table_labels_every_check_both_ways() -> None:
    for table in TABLES:
        for check in CHECKS:
            answers = {e.expect for e in table.examples if e.check == check}
            assert answers == {True, False}, f"{table.lang}: {check} lacks an example"
    assert {e.check for t in TABLES for e in t.examples} == set(CHECKS)
