"""The one registry of host adapters that the CLI reads (``memplug.hosts`` re-exports it).

A host registers itself: the module ``memplug.hosts.<name>`` (dashes become
underscores) defines ``HOST_SPEC = HostSpec(...)``, naming its parts as
``"module:attribute"`` strings so that nothing is imported before it is used. A host
shipped in another distribution registers the same object under the entry-point group
``memplug.hosts`` (see :mod:`memplug.plugins`). ``memory hook <name>``, ``memory
install <name>`` and ``memory uninstall <name>`` are built from these specs.

This module stays light: ``memory hook <name>`` finds a built-in host here before
click, pydantic or package metadata are imported.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from msgspec import Struct

Part = Literal["hook", "install", "uninstall", "mcp"]
# A module that registers a host says so in its source; the scan reads the files and
# imports only those, since a host's optional extra can take a second to import.
_SPEC_NAME = "HOST_SPEC"


class HostSpec(Struct, frozen=True):
    """A host's registration. Each part is ``"module:attribute"`` or None.

    ``hook(stdin: bytes, *, db_path, config_path) -> str`` runs one hook payload and
    returns what to print; it never raises. ``install(scope, command, *, dry_run,
    options)`` (``options``: the ``--db``/``--config`` the hook command must pass) and
    ``uninstall(scope, *, dry_run)`` change the harness's settings (``scope`` is
    ``user`` or ``project``) and return a report with ``as_dict()`` and ``settings``;
    ``mcp(scope, server, *, dry_run)`` registers the ``mcpServers`` entry ``server``
    (``memory mcp``) in the harness, or takes it out when ``server`` is None, and
    returns the same kind of report.
    Each part's docstring is its command's ``--help``. ``name`` is also the ``host`` of
    the host's transcript cursors (``host_cursors``).
    """

    name: str
    summary: str
    hook: str | None = None
    install: str | None = None
    uninstall: str | None = None
    mcp: str | None = None

    def load(self, part: Part) -> Callable[..., Any]:
        target = getattr(self, part)
        if target is None:
            raise LookupError(f"host {self.name!r} has no {part}")
        module_name, _, attribute = target.partition(":")
        loaded: Callable[..., Any] = getattr(importlib.import_module(module_name), attribute)
        return loaded


def _module_name(name: str) -> str:
    return f"{__package__}.{name.replace('-', '_')}"


def builtin(name: str) -> HostSpec | None:
    """The host shipped in ``memplug/hosts/`` under ``name``, or None."""
    if not name.replace("-", "").replace("_", "").isalnum():
        return None
    path = Path(__file__).with_name(f"{name.replace('-', '_')}.py")
    if not path.is_file() or _SPEC_NAME not in path.read_text(encoding="utf-8"):
        return None
    spec = getattr(importlib.import_module(_module_name(name)), _SPEC_NAME, None)
    return spec if isinstance(spec, HostSpec) and spec.name == name else None


def all_hosts() -> dict[str, HostSpec]:
    """Every registered host by name: the built-in ones, then entry-point plugins
    (a plugin cannot replace a built-in host)."""
    found: dict[str, HostSpec] = {}
    for path in sorted(Path(__file__).parent.glob("*.py")):
        name = path.stem.replace("_", "-")
        spec = None if path.stem.startswith("_") else builtin(name)
        if spec is not None:
            found[spec.name] = spec
    from memplug.plugins import load_group

    for name, obj in load_group("memplug.hosts").items():
        if not isinstance(obj, HostSpec):
            from memplug.plugins import PluginError

            raise PluginError(
                f"the memplug.hosts plugin {name!r} is a {type(obj).__name__}, not a HostSpec"
            )
        found.setdefault(obj.name, obj)
    return found


def with_part(part: Part) -> dict[str, HostSpec]:
    """The registered hosts that have ``part``, by name."""
    return {name: spec for name, spec in all_hosts().items() if getattr(spec, part)}
