"""docs/timeline.md stays true: its examples are golden files that the real commands
reproduce, and every entry kind, entity type and relation is documented.

``UPDATE_GOLDEN=1`` rewrites the golden files and the doc's blocks from real output.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from memplug.cli.app import cli
from memplug.derive.entities import ENTITY_TYPES, FUNCTIONAL_RELATIONS, RELATIONS
from memplug.derive.timeline import ENTRY_KINDS

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "fixtures" / "golden"
DOC = REPO / "docs" / "timeline.md"
EXAMPLES = {
    "timeline-shop.txt": ["timeline", "--session", "shop-1", "--kind", "decision", "--kind",
                          "constraint", "--kind", "tool_failed", "--kind", "compaction"],
    "neighbors-shop.txt": ["graph", "neighbors", "api port", "--hops", "1", "--session", "shop-1"],
}  # fmt: skip


@pytest.fixture
def shop_db(shop_memory: object, db_path: Path) -> Path:
    return db_path


@pytest.mark.parametrize("golden", sorted(EXAMPLES))
def test_examples_are_real_output(shop_db: Path, golden: str) -> None:
    result = CliRunner().invoke(cli, ["--db", str(shop_db), *EXAMPLES[golden]])
    assert result.exit_code == 0, result.output
    path = GOLDEN / golden
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(result.output, encoding="utf-8")
        text = DOC.read_text(encoding="utf-8")
        marker = f"<!-- golden: {golden} -->\n````text\n"
        start = text.index(marker) + len(marker)
        end = text.index("````", start)
        DOC.write_text(text[:start] + result.output + text[end:], encoding="utf-8")
    assert result.output == path.read_text(encoding="utf-8"), f"{golden} changed"
    shown = dict(re.findall(r"<!-- golden: (\S+) -->\n````text\n(.*?)````", DOC.read_text(), re.S))
    assert shown.get(golden) == result.output, f"docs/timeline.md shows an old {golden}"


def test_every_kind_type_and_relation_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    for name in (*ENTRY_KINDS, *ENTITY_TYPES, *RELATIONS):
        assert f"`{name}`" in text, f"docs/timeline.md does not name {name}"
    rows = dict(re.findall(r"^\| `(\w+)` \| [^|]+ \| (yes|no) \|$", text, re.M))
    assert {r for r, one in rows.items() if one == "yes"} == FUNCTIONAL_RELATIONS
