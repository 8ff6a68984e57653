"""Extension points for real: a distribution written into a temp dir on ``sys.path``.

Nothing of importlib is mocked: ``importlib.metadata`` finds the ``*.dist-info`` and
its ``entry_points.txt`` the way it finds an installed package.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memplug.base import extensions
from memplug.cli.app import cli
from memplug.hosts import all_hosts, builtin, with_part
from memplug.store.ports import CandidateSourcePlugin

DIST = "memplug_fixture_plugins"
MODULES = {
    "mfp_sources": """
        class Recent:
            name = "recent"

            def candidates(self, query, scope, snap, limit):
                return [(7, 1.0), (3, 0.5)][:limit]

        SOURCE = Recent()
    """,
    "mfp_host": """
        from memplug.hosts import HostSpec

        def hook(stdin, *, db_path, config_path):
            '''Echo the payload back (a test host).'''
            return "echo:" + stdin.decode()

        HOST_SPEC = HostSpec(name="echo-host", summary="a test host", hook="mfp_host:hook")
    """,
    "mfp_broken": """
        raise RuntimeError("this plugin is broken on purpose")
    """,
}


def _write_dist(site: Path, entry_points: str) -> None:
    info = site / f"{DIST}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DIST}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    for name, source in MODULES.items():
        (site / f"{name}.py").write_text(textwrap.dedent(source))


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "site"
    path.mkdir()
    monkeypatch.syspath_prepend(str(path))
    yield path
    for name in MODULES:
        sys.modules.pop(name, None)


@pytest.fixture
def good(site: Path) -> Path:
    _write_dist(
        site,
        """
        [memplug.candidate_sources]
        recent = mfp_sources:SOURCE

        [memplug.hosts]
        echo-host = mfp_host:HOST_SPEC
        """,
    )
    return site


def test_every_group_has_a_one_line_contract() -> None:
    assert set(extensions.GROUPS) == {
        "memplug.hosts",
        "memplug.candidate_sources",
        "memplug.embedders",
    }
    assert all(text and "\n" not in text for text in extensions.GROUPS.values())


def test_discovery_finds_entry_points_without_loading_them(good: Path) -> None:
    points = extensions.entry_points("memplug.candidate_sources")
    ours = [p for p in points if p.dist is not None and p.dist.name == DIST]
    assert [(p.name, p.value) for p in ours] == [("recent", "mfp_sources:SOURCE")]
    assert "mfp_sources" not in sys.modules
    # memplug registers its own embedder; the test distribution registers none.
    embedders = extensions.entry_points("memplug.embedders")
    assert [(p.name, p.value) for p in embedders] == [
        ("builtin", "memplug.semantic.builtin:Builtin")
    ]


def test_loading_imports_the_plugin_only_when_asked(good: Path) -> None:
    loaded = extensions.load_group("memplug.candidate_sources")
    assert "mfp_sources" in sys.modules
    source = loaded["recent"]
    assert isinstance(source, CandidateSourcePlugin)
    assert source.candidates("q", None, None, 1) == [(7, 1.0)]


def test_an_unknown_group_is_refused() -> None:
    with pytest.raises(extensions.PluginError, match=r"unknown plugin group 'memplug\.nope'"):
        extensions.entry_points("memplug.nope")


def test_a_broken_plugin_is_named_in_a_clear_error(site: Path) -> None:
    _write_dist(site, "[memplug.embedders]\nbroken = mfp_broken:EMBEDDER\n")
    with pytest.raises(extensions.PluginError) as error:
        extensions.load_group("memplug.embedders")
    assert str(error.value) == (
        f"the memplug.embedders plugin 'broken' from {DIST} (mfp_broken:EMBEDDER) failed "
        "to load: RuntimeError: this plugin is broken on purpose"
    )


def test_a_plugin_host_joins_the_registry_and_the_cli(good: Path) -> None:
    assert builtin("echo-host") is None  # not shipped with memplug: found through metadata
    assert sorted(with_part("hook")) == ["claude-code", "codex", "echo-host"]
    assert sorted(with_part("install")) == ["claude-code", "codex"]
    assert all_hosts()["claude-code"].name == "claude-code"
    runner = CliRunner()
    out = runner.invoke(cli, ["hook", "echo-host"], input="{}")
    assert out.exit_code == 0, out.output
    assert out.output == "echo:{}\n"
    listing = runner.invoke(cli, ["hook", "--help"])
    assert "  echo-host    Echo the payload back (a test host).\n" in listing.output
    assert runner.invoke(cli, ["install", "echo-host"]).exit_code == 2


def test_a_broken_host_plugin_fails_the_listing_in_one_line(
    site: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write_dist(site, "[memplug.hosts]\nbroken = mfp_broken:HOST_SPEC\n")
    from memplug.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["install", "--help"])
    assert exit_info.value.code == 1
    assert capsys.readouterr().err == (
        f"Error: the memplug.hosts plugin 'broken' from {DIST} (mfp_broken:HOST_SPEC) failed "
        "to load: RuntimeError: this plugin is broken on purpose\n"
    )


def test_the_builtin_host_is_found_without_package_metadata() -> None:
    code = (
        "import sys; from memplug.hosts import builtin; spec = builtin('claude-code'); "
        "print(spec.hook, 'importlib.metadata' in sys.modules, 'click' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["memplug.hosts.claude_hook:main", "False", "False"]


def test_memory_hook_runs_a_plugin_host_through_click(good: Path) -> None:
    # `memory hook NAME` serves built-in hosts before click is imported; a plugin host
    # is found through package metadata on the ordinary path instead.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(good), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-m", "memplug.cli", "hook", "echo-host"],
        input="{}",
        capture_output=True,
        text=True,
        env=env,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "echo:{}\n", "")
