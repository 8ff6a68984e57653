"""An interpreter without its builtin hash modules, as FIPS builds and some distributions
ship it: with this directory on ``PYTHONPATH`` every process (and every child process,
which inherits the variable) fails to import them, and hashlib falls back to OpenSSL.
``.ci/run`` runs a pass of the suite this way; tests/test_portable.py uses it directly."""

from __future__ import annotations

import sys
from importlib.machinery import ModuleSpec

HIDDEN = frozenset({"_blake2", "_md5", "_sha1", "_sha2", "_sha256", "_sha3", "_sha512"})


class _Hidden:
    """A finder ahead of the builtin one that refuses the hidden modules."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if name in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r} (hidden)", name=name)
        return None


for _name in HIDDEN:
    sys.modules.pop(_name, None)
sys.meta_path.insert(0, _Hidden())


def _quiet_hashlib() -> None:
    """Import hashlib once without its complaint: upstream 3.11 logs a traceback for each
    BLAKE2 constructor it cannot find (and sets up the root logger to do it). The noise
    is the standard library's, not memplug's, and would fail every test of a quiet stderr."""
    import logging

    root = logging.getLogger()
    handlers = list(root.handlers)
    logging.disable(logging.CRITICAL)
    try:
        import hashlib  # noqa: F401
    finally:
        logging.disable(logging.NOTSET)
        root.handlers[:] = handlers


_quiet_hashlib()
