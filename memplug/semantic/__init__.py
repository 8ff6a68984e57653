"""The embedder seam: what a semantic provider is, and how one is found by name.

Nothing heavy is imported here — no numpy, no model: the default install
(``semantic.provider = "off"``) imports this module at most, and a hook that does not
use a provider never pays for one. Providers register under the entry-point group
``memplug.embedders`` (``builtin`` is memplug's own); :func:`load_embedder` resolves a
name lazily. Vectors are stored and scored with numpy, which with ``builtin``'s
tokenizer is what ``pip install 'memplug-local[semantic]'`` adds: without it every
provider is unavailable, and says so.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

ENTRY_POINT_GROUP = "memplug.embedders"
OFF = "off"
# memplug's own provider, as registered in pyproject.toml: found without scanning the
# installed packages' entry points (importlib.metadata costs a prompt hook ~30-200 ms).
BUILTIN = ("builtin", "memplug.semantic.builtin", "Builtin")
# The coverage reasons a degraded semantic side reports (docs/semantic.md).
UNAVAILABLE = "semantic_unavailable"
INCOMPLETE = "vectors_incomplete"


@runtime_checkable
class Embedder(Protocol):
    """A text embedder. ``embed`` returns one unit-length row of ``dimensions`` floats per
    text (lists, or a numpy array); ``name`` and ``version`` are stored with every vector,
    so a changed model marks the old vectors stale. A provider may also offer ``cells``
    (:class:`memplug.semantic.vecmath.Cells`): large scopes are then searched through
    the cells nearest to the query instead of every vector."""

    name: str
    version: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> Any: ...


class SemanticUnavailable(Exception):
    """The configured provider cannot be used: not installed, unknown, or failing."""


def load_embedder(name: str) -> Embedder:
    """The provider registered as ``name``, constructed; a clear error when it cannot be."""
    try:
        import memplug.semantic.vecmath  # noqa: F401  (numpy: every provider's vectors)
    except ImportError as error:
        raise SemanticUnavailable(_without_extra(error)) from None
    if name == BUILTIN[0]:
        return _builtin()
    from memplug.base.extensions import PluginError, entry_points, load

    points = entry_points(ENTRY_POINT_GROUP)
    found = [point for point in points if point.name == name]
    if not found:
        names = ", ".join(point.name for point in points) or "none"
        raise SemanticUnavailable(
            f"no semantic provider named {name!r} is installed (installed: {names})"
        )
    try:
        embedder = load(found[0])()
    except PluginError as error:
        cause = error.__cause__
        if isinstance(cause, ImportError):
            raise SemanticUnavailable(
                f"semantic provider {name!r} is not installed ({cause.name or cause}): "
                "install the package that provides it"
            ) from None
        raise SemanticUnavailable(str(error)) from None
    except Exception as error:
        raise SemanticUnavailable(
            f"semantic provider {name!r} failed to start: {type(error).__name__}: {error}"
        ) from None
    if not isinstance(embedder, Embedder):
        raise SemanticUnavailable(f"semantic provider {name!r} is not an Embedder")
    return embedder


def _builtin() -> Embedder:
    try:
        embedder: Embedder = getattr(importlib.import_module(BUILTIN[1]), BUILTIN[2])()
    except ImportError as error:
        raise SemanticUnavailable(_without_extra(error)) from None
    except Exception as error:  # its table missing or damaged: said, never raised
        raise SemanticUnavailable(
            f"semantic provider 'builtin' failed to start: {type(error).__name__}: {error}"
        ) from None
    return embedder


# The extra's modules whose distribution has another name.
_DISTRIBUTION = {"memplug_table": "memplug-local-table"}


def _without_extra(error: ImportError) -> str:
    module = (error.name or str(error)).split(".")[0]
    package = _DISTRIBUTION.get(module, module)
    from memplug.base.installer import extra_command

    return f"semantic search needs {package} (not installed): {extra_command('semantic')}"
