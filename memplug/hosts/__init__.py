"""Host adapters, and the one registry of them that the CLI reads.

The registry (``HostSpec``, ``BUILTIN``, ``builtin``, ``all_hosts``, ``with_part``) lives in
:mod:`memplug.base.host_registry`, below every layer that reads it (derivation asks it which
hosts are coding hosts), and is loaded on first use of one of these names: a
Claude Code hook with nothing new imports :mod:`memplug.hosts.claude_idle` only, and
the registry's records and typing cost that process more than its work.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memplug.base.host_registry import BUILTIN, HostSpec, Part, all_hosts, builtin, with_part

__all__ = ["BUILTIN", "HostSpec", "Part", "all_hosts", "builtin", "with_part"]


def __getattr__(name: str) -> object:
    # Only the registry's names: any other lookup (a submodule being imported) must not
    # load it.
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from memplug.base import host_registry

    return getattr(host_registry, name)
