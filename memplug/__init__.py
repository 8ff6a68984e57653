"""memplug: local, SQLite-backed long-term memory for LLM agent harnesses."""

from __future__ import annotations

# typing and collections.abc are not imported at run time: every memplug process,
# a hook with nothing to do included, imports this package first.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from memplug.base.config import Config
    from memplug.plugin import Plugin

__version__ = "0.1.0"


def open(
    path: str | None = None,
    config: Mapping[str, Any] | Config | None = None,
    *,
    config_path: str | None = None,
) -> Plugin:
    """Open the database at ``path`` (default ``$MEMPLUG_HOME/memory.sqlite``) as a Plugin.

    ``config`` is a nested mapping as in ``memory.toml`` (``{"assembly": {"locale":
    "zh"}}``) or a :class:`memplug.base.config.Config`; it overrides the file and environment.
    Imported lazily so that ``import memplug`` stays cheap on a hook's path.
    """
    from memplug.plugin import open_plugin

    return open_plugin(path, config, config_path=config_path)
