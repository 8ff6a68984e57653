"""Docs that tests keep honest: every table/column and every CLI command is documented."""

from __future__ import annotations

import re
from importlib.metadata import metadata
from pathlib import Path

from memplug.cli.app import COMMANDS
from memplug.store.db import Database

REPO = Path(__file__).resolve().parent.parent


def _schema(tmp_path: Path) -> dict[str, list[str]]:
    with Database.open(tmp_path / "m.sqlite") as db:
        names = [
            str(r[0])
            for r in db.conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        # FTS5 shadow tables (`x_fts_data`, …) are SQLite's business, not ours.
        names = [n for n in names if not re.search(r"_fts_(data|idx|docsize|config|content)$", n)]
        return {n: [str(c[1]) for c in db.conn.execute(f"PRAGMA table_info({n})")] for n in names}


def test_storage_doc_covers_every_table_and_column(tmp_path: Path) -> None:
    doc = (REPO / "docs" / "storage.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"^### `([a-z_]+)`\n(.*?)(?=^### |\Z)", doc, re.M | re.S))
    schema = _schema(tmp_path)
    assert sorted(sections) == sorted(schema), "docs/storage.md and the migrations disagree"
    for table, columns in schema.items():
        missing = [c for c in columns if f"`{c}`" not in sections[table]]
        assert not missing, f"docs/storage.md does not describe {table}.{missing}"


def test_readme_names_every_command() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    missing = [name for name in COMMANDS if f"memory {name}" not in readme]
    assert not missing, f"README.md does not mention: {missing}"


def test_readme_opens_with_the_two_setup_commands() -> None:
    head = (REPO / "README.md").read_text(encoding="utf-8").splitlines()[:25]
    assert any("make demo" in line for line in head)
    assert any("make test" in line for line in head)


def test_config_doc_names_every_key() -> None:
    from memplug.base.config import Config

    doc = (REPO / "docs" / "config.md").read_text(encoding="utf-8")
    keys = [f"{section}.{key}" for section, values in Config().to_dict().items() for key in values]
    missing = [key for key in keys if f"`{key}`" not in doc]
    assert not missing, f"docs/config.md does not describe {missing}"


def _install_lines() -> list[tuple[str, str]]:
    """Every `pip install`/`pipx install` of memplug in the README, the docs, the
    shipped plugin and the code's messages: (file, the package spec installed)."""
    files = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    files += sorted((REPO / "memplug").rglob("*.py")) + sorted((REPO / "memplug").rglob("*.json"))
    found = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        for spec in re.findall(r"pipx? install (?:--\S+ )*'?([^\s'`)\"]+)", text):
            if "memplug" in spec or spec.startswith("."):
                found.append((str(path.relative_to(REPO)), spec))
    return found


def test_every_install_line_names_the_distribution_that_is_built() -> None:
    import tomllib

    name = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["name"]
    from memplug.base.paths import DISTRIBUTION

    assert name == DISTRIBUTION
    lines = _install_lines()
    # The README, the Claude Code and MCP docs, hooks.json and the extras' errors.
    assert {"README.md", "docs/claude-code.md", "docs/mcp.md"} <= {f for f, _ in lines}
    assert "memplug/hosts/claude_plugin/hooks/hooks.json" in {f for f, _ in lines}
    wrong = [(f, spec) for f, spec in lines if re.sub(r"\[.*\]$", "", spec) not in (name, ".")]
    assert not wrong, f"install lines naming another distribution: {wrong}"
    extras = metadata(name).get_all("Provides-Extra") or []
    unknown = [
        (f, spec)
        for f, spec in lines
        if (m := re.search(r"\[(.*)\]$", spec)) and m[1] not in extras
    ]
    assert not unknown, f"install lines naming an extra that does not exist: {unknown}"


def test_the_readme_says_how_to_install_from_a_checkout() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "pipx install ." in readme and "pip install '.[mcp]'" in readme
