"""docs/assembly.md and docs/explain.md stay in step with the code: their examples are
the golden files (which the plugin tests keep in step with real output), and every
section, label, omission reason, config key and JSON key is documented.

An example follows a ``<!-- golden: NAME -->`` marker in a four-backtick block (quoted
events may hold three). ``UPDATE_GOLDEN=1`` rewrites the blocks from the golden files.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from memplug.base.config import AssemblyConfig, config_key
from memplug.recall.assemble import LABELS, OMISSION_REASONS, SECTIONS, labels_for
from memplug.reports.explain import explain
from memplug.store.records import LogRecord

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "fixtures" / "golden"


def doc(name: str) -> str:
    return (REPO / "docs" / name).read_text(encoding="utf-8")


def blocks(text: str) -> list[str]:
    return re.findall(r"```text\n(.*?)```", text, re.S)


def examples(text: str) -> dict[str, str]:
    return dict(re.findall(r"<!-- golden: (\S+) -->\n````text\n(.*?)````", text, re.S))


@pytest.mark.parametrize(
    ("page", "golden"),
    [
        ("assembly.md", "shop-turn25.en.txt"),
        ("assembly.md", "shop-turn28.zh.txt"),
        ("explain.md", "explain-turn28.en.txt"),
        ("assembly.md", "claude-code-after-compaction.en.txt"),
    ],
)
def test_examples_are_the_golden_output(page: str, golden: str) -> None:
    expected = (GOLDEN / golden).read_text(encoding="utf-8")
    path = REPO / "docs" / page
    if os.environ.get("UPDATE_GOLDEN"):
        text = path.read_text(encoding="utf-8")
        marker = f"<!-- golden: {golden} -->\n````text\n"
        start = text.index(marker) + len(marker)
        end = text.index("````", start)
        path.write_text(text[:start] + expected + text[end:], encoding="utf-8")
    assert examples(doc(page)).get(golden) == expected, f"docs/{page} shows an old {golden}"


def test_assembly_doc_names_every_section_label_and_reason() -> None:
    text = doc("assembly.md")
    for locale in ("en", "zh"):
        assert labels_for(locale)["header"] + "\n" in blocks(text)
        for key, value in LABELS[locale].items():
            if key in ("header", "sep", "colon"):
                continue
            assert f"`{value}`" in text, f"docs/assembly.md lacks the {locale} label {key}"
    for section in SECTIONS:
        assert f"`{section}`" in text
    for reason in OMISSION_REASONS:
        assert f"| `{reason}` |" in text, f"docs/assembly.md lacks the reason {reason!r}"


def test_assembly_doc_lists_every_assembly_setting() -> None:
    text = doc("assembly.md")
    for name in AssemblyConfig.__struct_fields__:
        key = config_key(name)
        assert f"`assembly.{key}`" in text, f"docs/assembly.md lacks assembly.{key}"


def test_explain_doc_lists_every_json_key() -> None:
    text = doc("explain.md")
    record = LogRecord(
        session_id="s",
        trigger="cli",
        created_at="2026-01-01T00:00:00Z",
        budget=3000,
        used_tokens=0,
        token_source="estimate",
        injected=False,
        id=1,
    )
    data = explain(record)
    table = text.split("## JSON", 1)[1]
    for key in data:
        assert f"`{key}`" in table, f"docs/explain.md lacks the key {key}"
    for key in data["sections"][0]:
        assert key in table


def test_the_api_doc_examples_run(tmp_path: Path) -> None:
    code = "\n".join(re.findall(r"```python\n(.*?)```", doc("api.md"), re.S))
    assert "memplug.open(" in code and "pre_step" in code and "pre_tool" in code
    code = code.replace("/tmp/memplug-api-demo/memory.sqlite", str(tmp_path / "m.sqlite"))
    exec(compile(code, "docs/api.md", "exec"), {})
    assert (tmp_path / "m.sqlite").is_file()
