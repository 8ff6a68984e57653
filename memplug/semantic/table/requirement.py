"""Build hook: the ``semantic`` extra finds the table beside a checkout.

The table is a distribution of its own that no index carries yet, so from a checkout
``pip install '.[semantic]'`` could not resolve ``memplug-local-table==3``. Built from
a checkout (this folder holds the table's project), the extra points at the folder as
a path requirement that pip builds in the same step. Release artifacts keep the pinned
version an index resolves: build them with ``MEMPLUG_TABLE_FROM=index`` (an sdist's
metadata is written once, in the checkout, and a wheel built from it reuses it; the
index refuses an upload that holds a path). Read by hatchling only, never imported by
memplug (the wheel leaves this folder out).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from hatchling.metadata.plugin.interface import MetadataHookInterface

TABLE = "memplug-local-table"


def table_requirement(table_folder: Path, pinned: str) -> str:
    """The table's requirement: a path reference when its project is in ``table_folder``."""
    project = table_folder / "pyproject.toml"
    if os.environ.get("MEMPLUG_TABLE_FROM") == "index" or not project.is_file():
        return pinned
    version = tomllib.loads(project.read_text(encoding="utf-8"))["project"]["version"]
    if pinned != f"{TABLE}=={version}":
        raise ValueError(f"the semantic extra pins {pinned!r}, the table beside is {version}")
    return f"{TABLE} @ {table_folder.resolve().as_uri()}"


class TableRequirement(MetadataHookInterface):
    """Sets the extras from this hook's own table, the table's requirement resolved."""

    PLUGIN_NAME = "custom"

    def update(self, metadata: dict[str, Any]) -> None:
        folder = Path(self.root) / "memplug" / "semantic" / "table"
        extras = {name: list(reqs) for name, reqs in self.config["extras"].items()}
        extras["semantic"] = [
            table_requirement(folder, req) if req.startswith(f"{TABLE}==") else req
            for req in extras["semantic"]
        ]
        metadata["optional-dependencies"] = extras
