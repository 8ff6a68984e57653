"""Where the database lives. Standard library only: a hook process asks this first."""

from __future__ import annotations

import os
from pathlib import Path

CONFIG_FILENAME = "memory.toml"


def default_db_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """``--db`` / ``MEMPLUG_DB``, else ``$MEMPLUG_HOME/memory.sqlite`` (platform data dir)."""
    if explicit:
        return Path(explicit).expanduser()
    if os.environ.get("MEMPLUG_DB"):
        return Path(os.environ["MEMPLUG_DB"]).expanduser()
    home = os.environ.get("MEMPLUG_HOME")
    if not home:
        import platformdirs  # only when nothing names the place

        home = platformdirs.user_data_dir("memplug")
    return Path(home).expanduser() / "memory.sqlite"


def config_file(
    db_path: Path, explicit: str | os.PathLike[str] | None = None
) -> tuple[Path, bool]:
    """A database's config file and whether it was named (``--config``/``MEMPLUG_CONFIG``,
    which must exist) rather than found (``memory.toml`` beside the database, optional)."""
    named = explicit or os.environ.get("MEMPLUG_CONFIG")
    if named:
        return Path(named), True
    return db_path.parent / CONFIG_FILENAME, False


def memory_script() -> str:
    """This installation's ``memory`` script when it exists, so that what a harness runs
    (a hook, the MCP server) works whatever its PATH is; else ``memory``."""
    import sys

    script = Path(sys.executable).parent / "memory"
    if script.is_file() and os.access(script, os.X_OK):
        return str(script)
    return "memory"
