"""One project per git repository: its root, its subfolders and its linked worktrees, worked
out from `.git` entries on real repositories made with git in temporary folders."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult

from memplug.base.paths import project_of, project_root


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


def test_a_project_file_splits_a_package_out_and_merges_a_folder_in(
    repo: Path, tmp_path: Path
) -> None:
    """Committed with the code (here: written in both working trees, as a checkout
    would), the file names the same project from the main tree and from a worktree."""
    project_root.cache_clear()
    root, worktree = repo.resolve(), (tmp_path / "repo-wt").resolve()
    for tree in (root, worktree):
        (tree / "pkg").mkdir(exist_ok=True)
        (tree / "pkg" / ".memplug-project").write_text("")
    assert project_root(str(root / "pkg" / "sub")) == str(root / "pkg")
    (worktree / "pkg" / "sub").mkdir(parents=True, exist_ok=True)
    assert project_root(str(worktree / "pkg" / "sub")) == str(root / "pkg")
    assert project_root(str(root)) == str(root)  # the rest of the repository is as before
    loose = tmp_path / "scratch"
    loose.mkdir()
    (loose / ".memplug-project").write_text("../repo\n")  # merged into the repository
    assert project_root(str(loose)) == str(root)
    project_root.cache_clear()


def test_an_older_database_keyed_by_folders_is_re_keyed_by_its_upgrade(
    cli: Callable[..., CliResult], db_path: Path, tmp_path: Path
) -> None:
    """Stored by a memplug that keyed projects by folder (here: before the folder was a
    repository), two sessions are two projects; the upgrade's re-derivation makes them
    the repository's one project, each event keeping its cwd; status says it is due."""
    from memplug.memory import Memory

    repo = tmp_path / "later-repo"
    (repo / "sub").mkdir(parents=True)
    lines = [
        {"session_id": "top", "seq": 1, "type": "user/message", "role": "user",
         "text": "Decision: invoices round half up zephyrquill.", "cwd": str(repo)},
        {"session_id": "deep", "seq": 1, "type": "user/message", "role": "user",
         "text": "Decision: receipts stay in UTC zephyrquill.", "cwd": str(repo / "sub")},
    ]  # fmt: skip
    text = "".join(json.dumps(line) + "\n" for line in lines)
    assert cli("--db", str(db_path), "import", "-", input=text).returncode == 0

    def projects() -> dict[str, str]:
        data = cli("--db", str(db_path), "status", "--json").json()
        return {s["session_id"]: s["project"] for s in data["sessions"]}

    assert projects() == {"top": str(repo), "deep": str(repo / "sub")}
    git("init", "-q", ".", cwd=repo)
    with Memory.open(db_path, create=False) as memory, memory.store.write_transaction():
        made = dict(memory.store.items.derivation("derived_with") or {})
        made.pop("projects")  # what the older memplug recorded, from its own sources
        made["source"] = "older"
        memory.store.items.set_derivation("derived_with", made)
    from tests.installed import memory as installed

    stale = installed("--db", str(db_path), "status", "--json").json()["derivation"]
    assert stale["stale"] and "projects" in stale["changed"]
    assert installed("--db", str(db_path), "doctor", "--repair", "--json").returncode in (0, 1)
    root = str(repo.resolve())
    assert projects() == {"top": root, "deep": root}
    assert cli("--db", str(db_path), "inspect", "deep:1", "--json").json()["cwd"] == str(
        repo / "sub"
    )
    core = cli("--db", str(db_path), "core", "--project", root, "--json").json()
    assert len(core["lines"]) == 2
