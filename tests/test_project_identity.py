"""One project per git repository: its root, its subfolders and its linked worktrees, worked
out from `.git` entries on real repositories made with git in temporary folders."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult

from memplug.paths import project_of, project_root


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", *args], cwd=cwd,
                   check=True, capture_output=True)  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg" / "sub").mkdir(parents=True)
    git("init", "-q", ".", cwd=root)
    git("commit", "-q", "--allow-empty", "-m", "init", cwd=root)
    git("worktree", "add", "-q", str(tmp_path / "repo-wt"), "-b", "feature", cwd=root)
    return root


def test_the_root_a_subfolder_and_a_linked_worktree_are_one_project(
    repo: Path, tmp_path: Path
) -> None:
    root = str(repo.resolve())
    assert project_root(str(repo)) == root
    assert project_root(str(repo / "pkg" / "sub")) == root
    assert project_root(str(tmp_path / "repo-wt")) == root
    assert project_root(str(tmp_path)) is None and project_of(str(tmp_path)) == str(tmp_path)
    assert project_root("relative/path") is None and project_of(None) is None


def test_a_submodule_is_its_own_repository(tmp_path: Path) -> None:
    sub = tmp_path / "outer" / "vendor" / "lib"
    sub.mkdir(parents=True)
    (tmp_path / "outer" / ".git").mkdir()
    modules = tmp_path / "outer" / ".git" / "modules" / "lib"
    modules.mkdir(parents=True)
    (sub / ".git").write_text(f"gitdir: {modules}\n")
    assert project_root(str(sub)) == str(sub.resolve())


def test_captured_events_take_their_repository_and_keep_their_cwd(
    cli: Callable[..., CliResult], db_path: Path, repo: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git("init", "-q", ".", cwd=other)
    worktree = tmp_path / "repo-wt"
    lines = [
        {"session_id": "root", "seq": 1, "type": "user/message", "role": "user",
         "text": "Decision: the ledger retries 5 times quasarplum.", "cwd": str(repo)},
        {"session_id": "wt", "seq": 1, "type": "user/message", "role": "user",
         "text": "Decision: the worktree uses feature flags quasarplum.", "cwd": str(worktree)},
        {"session_id": "other", "seq": 1, "type": "user/message", "role": "user",
         "text": "Decision: the other repo uses tabs quasarplum.", "cwd": str(other)},
    ]  # fmt: skip
    text = "".join(json.dumps(line) + "\n" for line in lines)
    assert cli("--db", str(db_path), "import", "-", input=text).returncode == 0
    sessions = {
        s["session_id"]: s for s in cli("--db", str(db_path), "status", "--json").json()["sessions"]
    }
    assert sessions["root"]["project"] == sessions["wt"]["project"] == str(repo.resolve())
    assert sessions["other"]["project"] == str(other.resolve())
    assert cli("--db", str(db_path), "inspect", "wt:1", "--json").json()["cwd"] == str(worktree)
    core = cli("--db", str(db_path), "core", "--project", str(repo.resolve()), "--json").json()
    assert len(core["lines"]) == 2 and not any("tabs" in line["text"] for line in core["lines"])
    from tests.installed import memory

    found = memory("--db", str(db_path), "search", "quasarplum", "--json", cwd=repo / "pkg" / "sub")
    sessions_found = {hit["session_id"] for hit in found.json()["hits"]}
    assert sessions_found and sessions_found <= {"root", "wt"}
