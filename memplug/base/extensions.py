"""Extension points: entry-point groups other distributions register objects under.

Like simonw/llm's ``plugins.py`` (named apart from ``memplug.plugin``, the API a host
calls): nothing is looked up until a group is asked for (package metadata is read
then, never on the hook's fast path), and a plugin that fails to load is named in a
:class:`PluginError` instead of failing somewhere later.

A distribution registers, in its ``pyproject.toml``::

    [project.entry-points."memplug.candidate_sources"]
    mine = "my_package.module:SOURCE"
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memplug.base.errors import MemplugError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

# Each group, with the one-line contract of what its entry points name.
GROUPS: dict[str, str] = {
    "memplug.hosts": (
        "a memplug.hosts.HostSpec: a harness adapter's hook, installer and uninstaller"
    ),
    "memplug.candidate_sources": (
        "a memplug.store.ports.CandidateSourcePlugin: (event id, score) pairs for a query in a "
        "scope"
    ),
    "memplug.embedders": (
        "an Embedder (the semantic provider's Protocol): texts in, one vector per text out"
    ),
}


class PluginError(MemplugError):
    """A registered plugin could not be loaded, or is not what its group promises."""


def entry_points(group: str) -> list[EntryPoint]:
    """The entry points registered under ``group``, by name; none is loaded."""
    if group not in GROUPS:
        raise PluginError(f"unknown plugin group {group!r} (known: {', '.join(GROUPS)})")
    from importlib.metadata import entry_points as installed

    return sorted(installed(group=group), key=lambda point: point.name)


def load(point: EntryPoint) -> Any:
    """Import what ``point`` names; a :class:`PluginError` saying which plugin failed."""
    try:
        return point.load()
    except Exception as error:
        where = f" from {point.dist.name}" if point.dist is not None else ""
        raise PluginError(
            f"the {point.group} plugin {point.name!r}{where} ({point.value}) failed to load: "
            f"{type(error).__name__}: {error}"
        ) from error


def load_group(group: str) -> dict[str, Any]:
    """Every plugin of ``group`` loaded, by entry-point name (the first of a name wins)."""
    loaded: dict[str, Any] = {}
    for point in entry_points(group):
        if point.name not in loaded:
            loaded[point.name] = load(point)
    return loaded
