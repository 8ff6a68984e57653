"""A plain wheel install works with no checkout beside it: migrations ship inside."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

# Slow, still run by `make test`: builds and installs a wheel.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent


def _requires(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return archive.read(metadata).decode()


def test_wheel_ships_migrations_and_runs_without_the_checkout(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        # No build isolation: the backend (hatchling, in the test extra) is already here,
        # so building needs no network.
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-build-isolation",
            "--no-deps",
            "-q",
            "-w",
            str(dist),
            str(REPO),
        ],
        check=True,
        capture_output=True,
        # A release build: the semantic extra pins the table an index resolves.
        env=dict(os.environ, MEMPLUG_TABLE_FROM="index"),
    )
    # The distribution is memplug-local ("memplug" on the index is someone else's).
    (wheel,) = dist.glob("memplug_local-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {Path(n).name for n in names if n.startswith("memplug/migrations/")}
    assert shipped == {p.name for p in (REPO / "migrations").glob("*.sql")}
    # The builtin semantic provider is registered by name; its table is a distribution
    # of its own, which only the semantic extra brings in.
    assert not [n for n in names if n.endswith((".npy", "vocab.txt"))]
    assert not [n for n in names if "semantic/table" in n]
    assert "Requires-Dist: memplug-local-table==3; extra == 'semantic'" in _requires(wheel)
    (points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    registered = zipfile.ZipFile(wheel).read(points).decode()
    assert "[memplug.embedders]\nbuiltin = memplug.semantic.builtin:Builtin" in registered

    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    probe = (
        "import memplug, memplug.store.db as d; "
        "db = d.Database.open('m.sqlite'); "
        "print(memplug.__file__); print(db.schema_version(), d.code_schema_version())"
    )
    env = dict(os.environ, PYTHONPATH=str(target))
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out[0].startswith(str(target))
    expected = len(list((REPO / "migrations").glob("*.sql")))
    assert out[1] == f"{expected} {expected}"


def test_the_semantic_table_is_a_wheel_of_its_own(tmp_path: Path) -> None:
    table = REPO / "memplug" / "semantic" / "table"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q",
         "-w", str(tmp_path), str(table)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("memplug_local_table-3-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    data = table / "memplug_table" / "data"
    assert {f"memplug_table/data/{p.name}" for p in data.iterdir()} <= names
    assert "memplug_table/data/NOTICE" in names


def _checkout_copy(into: Path) -> Path:
    """The files a clone holds, as they are now (tracked, modified or new)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, into / name)
    return into


def test_the_semantic_extra_installs_in_one_step_from_a_checkout(tmp_path: Path) -> None:
    checkout = _checkout_copy(tmp_path / "checkout")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    # As the README says, in a fresh venv: the table is resolved from the folder beside.
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", ".[semantic]"],
        cwd=checkout, check=True, capture_output=True,
    )  # fmt: skip
    home = tmp_path / "home"
    env = dict(os.environ, MEMPLUG_HOME=str(home), MEMPLUG_SEMANTIC__PROVIDER="builtin")
    memory = str(venv / "bin" / "memory")
    subprocess.run([memory, "remember", "orders keep soft deletes"], env=env, check=True,
                   capture_output=True, cwd=tmp_path)  # fmt: skip
    status = subprocess.run([memory, "status", "--json"], env=env, check=True,
                            capture_output=True, text=True, cwd=tmp_path).stdout  # fmt: skip
    semantic = json.loads(status)["semantic"]
    assert semantic["provider"] == "builtin" and semantic["state"] != "semantic_unavailable"
    assert semantic["version"].startswith("minilm-l6-v2-static-")
    # A wheel built from a checkout says where its table came from.
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q",
         "-w", str(tmp_path / "dist"), str(checkout)],
        check=True, capture_output=True, env={k: v for k, v in os.environ.items()
                                              if k != "MEMPLUG_TABLE_FROM"},
    )  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("memplug_local-*.whl")
    table = (checkout / "memplug" / "semantic" / "table").resolve().as_uri()
    assert f"Requires-Dist: memplug-local-table @ {table} ; extra == 'semantic'" in _requires(wheel)
