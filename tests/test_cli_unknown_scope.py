"""One rule for a project or session that the database does not know: exit 2, one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.installed import memory

SHOP = Path(__file__).resolve().parent.parent / "fixtures" / "sessions" / "shop.jsonl"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = str(tmp_path_factory.mktemp("unknown") / "m.sqlite")
    assert memory("--db", path, "import", str(SHOP)).returncode == 0
    return path


@pytest.mark.parametrize(
    "args",
    [
        ["items", "--project", "/no/such"],
        ["items", "--scope", "project:/no/such"],
        ["core", "--project", "/no/such"],
        ["timeline", "--project", "/no/such"],
        ["graph", "neighbors", "port", "--project", "/no/such"],
    ],
)
def test_an_unknown_project_is_an_error(db: str, args: list[str]) -> None:
    done = memory("--db", db, *args)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "Error: no project '/no/such' in this database\n"


@pytest.mark.parametrize(
    "args",
    [
        ["items", "--session", "nosuch"],
        ["search", "port", "--session", "nosuch"],
        ["timeline", "--session", "nosuch"],
        ["export", "--session", "nosuch"],
        ["assemble", "--session", "nosuch"],
        ["rebuild", "--session", "nosuch"],
    ],
)
def test_an_unknown_session_is_an_error(db: str, args: list[str]) -> None:
    done = memory("--db", db, *args)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "Error: no session 'nosuch' in this database\n"


def test_a_known_project_still_reads(db: str) -> None:
    done = memory("--db", db, "items", "--project", "/home/ana/shop")
    assert done.returncode == 0 and done.stdout.startswith("scope: project:/home/ana/shop")
