"""The one registry of host adapters that the CLI reads (``memplug.hosts`` re-exports it).

``BUILTIN`` is a literal table of the hosts shipped in ``memplug/hosts/``; a host in
another distribution registers a ``HostSpec`` under the entry-point group
``memplug.hosts`` (see :mod:`memplug.base.extensions`). Each part is a ``"module:attribute"``
string, so nothing is imported before it is used. ``memory hook <name>``, ``memory
install <name>`` and ``memory uninstall <name>`` are built from these specs.

This module stays light: ``memory hook <name>`` finds a built-in host here before
click, pydantic or package metadata are imported, and without importing the host.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from typing import Any, Literal

from msgspec import Struct

Part = Literal["hook", "install", "uninstall", "mcp", "adapter", "instructions"]


class HostSpec(Struct, frozen=True):
    """A host's registration. Each part is ``"module:attribute"`` or None.

    ``adapter`` is what a program uses where the host is a library rather than a
    harness with hooks: the class a pydantic-ai program builds, the function ``memory
    mcp`` serves with. ``extra`` names the ``memplug[...]`` extra the host needs.

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
    adapter: str | None = None
    # ``instructions(scope, *, dry_run, options)`` writes a section on searching memory
    # into the instructions file the harness loads (``install --agents-md``).
    instructions: str | None = None
    extra: str | None = None
    # An agent at work in a repository: what a person types in its sessions is said to
    # an agent (the rules said to one read it), and its sessions' lines say which agent
    # they came from when another coding host's step reads them.
    coding: bool = False

    def load(self, part: Part) -> Callable[..., Any]:
        target = getattr(self, part)
        if target is None:
            raise LookupError(f"host {self.name!r} has no {part}")
        module_name, _, attribute = target.partition(":")
        loaded: Callable[..., Any] = getattr(importlib.import_module(module_name), attribute)
        return loaded


# The hosts shipped with memplug, by name; ``name`` is also the ``host`` of a host's
# transcript cursors. docs/architecture.md ("Hosts and extension points").
BUILTIN: dict[str, HostSpec] = {
    "claude-code": HostSpec(
        name="claude-code",
        summary="Claude Code: hooks capture each session's transcript and inject memory",
        hook="memplug.hosts.claude_hook:main",
        install="memplug.hosts.claude_install:install_scope",
        uninstall="memplug.hosts.claude_install:uninstall_scope",
        mcp="memplug.hosts.claude_install:mcp_scope",
        coding=True,
    ),
    "codex": HostSpec(
        name="codex",
        summary="Codex CLI: hooks capture each session's rollout and inject memory",
        hook="memplug.hosts.codex_hook:main",
        install="memplug.hosts.codex_install:install_scope",
        uninstall="memplug.hosts.codex_install:uninstall_scope",
        mcp="memplug.hosts.codex_install:mcp_scope",
        instructions="memplug.hosts.codex_install:agents_scope",
        coding=True,
    ),
    "pydantic-ai": HostSpec(
        name="pydantic-ai",
        summary="pydantic-ai: a history processor that captures a run and injects memory",
        adapter="memplug.hosts.pydantic_ai:MemoryHistory",
        extra="pydantic-ai",
    ),
    "mcp": HostSpec(
        name="mcp",
        summary="any MCP client: memory as read-only tools on stdio (memory mcp)",
        adapter="memplug.hosts.mcp:serve",
        extra="mcp",
    ),
}


def builtin(name: str) -> HostSpec | None:
    """The host shipped with memplug under ``name``, or None."""
    return BUILTIN.get(name)


def is_coding_host(name: str | None) -> bool:
    """Whether ``name`` (an event's or a session's host) is a coding host's."""
    if name is None:
        return False
    spec = BUILTIN.get(name)
    if spec is None:
        spec = _plugin_hosts().get(name)
    return spec is not None and spec.coding


@cache
def _plugin_hosts() -> dict[str, HostSpec]:
    # Read once a process, and only for a host that is not built in: most events name
    # none, or a built-in one.
    return all_hosts()


def all_hosts() -> dict[str, HostSpec]:
    """Every registered host by name: the built-in ones, then entry-point plugins
    (a plugin cannot replace a built-in host)."""
    found = dict(BUILTIN)
    from memplug.base.extensions import load_group

    for name, obj in load_group("memplug.hosts").items():
        if not isinstance(obj, HostSpec):
            from memplug.base.extensions import PluginError

            raise PluginError(
                f"the memplug.hosts plugin {name!r} is a {type(obj).__name__}, not a HostSpec"
            )
        found.setdefault(obj.name, obj)
    return found


def with_part(part: Part) -> dict[str, HostSpec]:
    """The registered hosts that have ``part``, by name."""
    return {name: spec for name, spec in all_hosts().items() if getattr(spec, part)}
