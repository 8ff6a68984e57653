"""Where the database lives. Standard library only: a hook process asks this first,
and one with nothing new asks nothing else (so pathlib is imported where it is used)."""

from __future__ import annotations

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
