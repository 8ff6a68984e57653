"""Which way to pull the message names: memplug's MCP tools where the host starts its
server for the project, the `memory` CLI otherwise (docs/assembly.md, "Header")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memplug.hosts import claude_code, codex_hook


def test_claude_code_reads_the_project_s_and_the_user_s_registrations(tmp_path: Path) -> None:
    project, home = tmp_path / "repo", tmp_path / "home"
    project.mkdir(), home.mkdir()
    assert not claude_code.mcp_registered(str(project), "memplug", home=home)
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"memplug": {}}}))
    assert claude_code.mcp_registered(str(project), "memplug", home=home)
    (project / ".mcp.json").unlink()
    # The name alone is not a registration: only under mcpServers, for this project.
    other = {"projects": {"/elsewhere": {"mcpServers": {"memplug": {}}}}, "note": "memplug"}
    (home / ".claude.json").write_text(json.dumps(other))
    assert not claude_code.mcp_registered(str(project), "memplug", home=home)
    mine = {"projects": {str(project): {"mcpServers": {"memplug": {}}}}}
    (home / ".claude.json").write_text(json.dumps(mine))
    assert claude_code.mcp_registered(str(project), "memplug", home=home)
    (home / ".claude.json").write_text("{not json")
    assert not claude_code.mcp_registered(str(project), "memplug", home=home)


def test_codex_reads_its_config_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    (tmp_path / "codex").mkdir()
    project = tmp_path / "repo"
    (project / ".codex").mkdir(parents=True)
    assert not codex_hook._mcp_registered(str(project))
    (project / ".codex" / "config.toml").write_text('[mcp_servers.memplug]\ncommand = "memory"\n')
    assert codex_hook._mcp_registered(str(project))
