"""Where the database lives. Standard library only: a hook process asks this first,
and one with nothing new asks nothing else (so pathlib is imported where it is used)."""

from __future__ import annotations

import functools
import os
import stat
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

CONFIG_FILENAME = "memory.toml"
# The name on the package index (`pip install memplug-local`); "memplug" there is an
# unrelated project. The import name and the commands stay memplug / memory.
DISTRIBUTION = "memplug-local"


def default_db_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """``--db`` / ``MEMPLUG_DB``, else ``$MEMPLUG_HOME/memory.sqlite`` (platform data dir)."""
    from pathlib import Path

    return Path(default_db_file(explicit))


def default_db_file(explicit: str | os.PathLike[str] | None = None) -> str:
    """:func:`default_db_path` as a string, found with ``os`` alone."""
    if explicit:
        return os.path.expanduser(explicit)
    if os.environ.get("MEMPLUG_DB"):
        return os.path.expanduser(os.environ["MEMPLUG_DB"])
    home = os.environ.get("MEMPLUG_HOME")
    if not home:
        import platformdirs  # only when nothing names the place

        home = platformdirs.user_data_dir("memplug")
    return os.path.join(os.path.expanduser(home), "memory.sqlite")


def config_file(db_path: Path, explicit: str | os.PathLike[str] | None = None) -> tuple[Path, bool]:
    """A database's config file and whether it was named (``--config``/``MEMPLUG_CONFIG``,
    which must exist) rather than found (``memory.toml`` beside the database, optional)."""
    from pathlib import Path

    named = explicit or os.environ.get("MEMPLUG_CONFIG")
    if named:
        return Path(named), True
    return db_path.parent / CONFIG_FILENAME, False


def hook_pending_file(database: Path) -> Path:
    """Where a hook keeps the errors its database could not take (locked, missing, or a
    configuration that does not load) until a later hook writes them to ``error_log``."""
    return database.with_name(database.name + ".hook-pending.jsonl")


def memory_script() -> str:
    """This installation's ``memory`` script when it exists, so that what a harness runs
    (a hook, the MCP server) works whatever its PATH is; else ``memory``."""
    from pathlib import Path

    script = Path(sys.executable).parent / "memory"
    if script.is_file() and os.access(script, os.X_OK):
        return str(script)
    return "memory"


# A file that makes its folder a project of its own (empty), or names the project its
# folder belongs to (a path, absolute or relative to the folder): a monorepo's package
# split out, or two folders merged. Committed with the code, so every clone and worktree
# agrees (docs/events.md, "Projects").
PROJECT_FILE = ".memplug-project"


@functools.lru_cache(maxsize=512)
def project_root(path: str) -> str | None:
    """The project a folder belongs to when it is in a git repository: the repository's
    main working tree, for its root, every subfolder and every linked worktree alike
    (``git worktree add``). Worked out from ``.git`` entries alone, never by running git:
    a ``.git`` folder marks a main working tree; a ``.git`` file points at the git dir,
    whose ``commondir`` (a linked worktree's) leads to the main one, and with none (a
    submodule) the folder is its own repository. A ``PROJECT_FILE`` met on the way up
    decides instead. None outside a repository and with no such file, or for a path that
    is not an absolute path on this machine."""
    if not path or not os.path.isabs(path):
        return None
    folder = os.path.realpath(path)
    while True:
        marker = os.path.join(folder, PROJECT_FILE)
        if os.path.isfile(marker):
            return _marked(folder, marker)
        found = _repository_at(folder)
        if found is not None:
            return found[1]
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _repository_at(folder: str) -> tuple[str, str] | None:
    """``(working tree, main working tree)`` when ``folder`` holds a ``.git`` entry."""
    dot = os.path.join(folder, ".git")
    if os.path.isdir(dot):
        return folder, folder
    if os.path.isfile(dot):
        return folder, _worktree_main(folder, dot)
    return None


def _marked(folder: str, marker: str) -> str:
    """The project a ``PROJECT_FILE`` gives its folder: the folder itself, or the folder
    it names; either one as seen from its repository's main working tree, so a linked
    worktree's copy of the file names the same project."""
    try:
        with open(marker, encoding="utf-8", errors="replace") as stream:
            named = stream.read(4096).strip().splitlines()
    except OSError:
        named = []
    if named and named[0].strip():
        folder = os.path.realpath(os.path.join(folder, os.path.expanduser(named[0].strip())))
    tree = folder
    while (found := _repository_at(tree)) is None:
        parent = os.path.dirname(tree)
        if parent == tree:
            return folder
        tree = parent
    working, main = found
    return os.path.normpath(os.path.join(main, os.path.relpath(folder, working)))


def _worktree_main(folder: str, dot: str) -> str:
    try:
        with open(dot, encoding="utf-8", errors="replace") as stream:
            first = stream.read(4096).strip()
    except OSError:
        return folder
    if not first.startswith("gitdir:"):
        return folder
    gitdir = os.path.join(folder, first[len("gitdir:") :].strip())
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as stream:
            common = os.path.realpath(os.path.join(gitdir, stream.read().strip()))
    except OSError:
        return folder  # a submodule, or a worktree whose git dir is gone: its own folder
    # The common dir of a repository with a working tree is its `.git`; of a bare one,
    # the repository itself.
    return os.path.dirname(common) if os.path.basename(common) == ".git" else common


def file_modes(path: Path) -> dict[str, Any]:
    """The database file's and its folder's modes (octal text), and whether both are
    still private (`memory status`, `memory doctor`)."""
    file_mode = stat.S_IMODE(os.stat(path).st_mode)
    dir_mode = stat.S_IMODE(os.stat(os.path.dirname(os.path.abspath(path))).st_mode)
    return {
        "file": f"{file_mode:o}",
        "dir": f"{dir_mode:o}",
        "private": not (file_mode & 0o077) and not (dir_mode & 0o077),
    }


def writable(path: Path) -> bool:
    """Whether this process may write the database (the file and the folder of its WAL)."""
    return os.access(path, os.W_OK) and os.access(os.path.dirname(os.path.abspath(path)), os.W_OK)


def project_key_of(project: str | None, cwd: str | None) -> str | None:
    """The project an event is stored under: the git repository its folder is in (its
    main working tree: a subfolder or a linked worktree is the same project), worked out
    on this machine; else what the host named (``project``), else nothing (the ``cwd``
    is then the project). A name that is no path is the host's to keep. Capture stores
    it; re-derivation works it out again for events an older memplug stored."""
    if project is not None and project != cwd and not os.path.isabs(project):
        return project
    return project_root(project or cwd or "") or project


def project_of(cwd: str | None) -> str | None:
    """The project key of a working folder: its repository's main working tree, else the
    folder itself (None stays None)."""
    return (project_root(cwd) or cwd) if cwd else cwd
