"""Where the database lives. Standard library only: a hook process asks this first,
and one with nothing new asks nothing else (so pathlib is imported where it is used)."""

from __future__ import annotations

import functools
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

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
    import sys
    from pathlib import Path

    script = Path(sys.executable).parent / "memory"
    if script.is_file() and os.access(script, os.X_OK):
        return str(script)
    return "memory"


@functools.lru_cache(maxsize=512)
def project_root(path: str) -> str | None:
    """The project a folder belongs to when it is in a git repository: the repository's
    main working tree, for its root, every subfolder and every linked worktree alike
    (``git worktree add``). Worked out from ``.git`` entries alone, never by running git:
    a ``.git`` folder marks a main working tree; a ``.git`` file points at the git dir,
    whose ``commondir`` (a linked worktree's) leads to the main one, and with none (a
    submodule) the folder is its own repository. None outside a repository, or for a
    path that is not an absolute path on this machine."""
    if not path or not os.path.isabs(path):
        return None
    folder = os.path.realpath(path)
    while True:
        dot = os.path.join(folder, ".git")
        if os.path.isdir(dot):
            return folder
        if os.path.isfile(dot):
            return _worktree_main(folder, dot)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


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


def project_of(cwd: str | None) -> str | None:
    """The project key of a working folder: its repository's main working tree, else the
    folder itself (None stays None)."""
    return (project_root(cwd) or cwd) if cwd else cwd
