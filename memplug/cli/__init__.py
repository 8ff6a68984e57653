"""The ``memory`` / ``memplug`` command: a thin shell over :class:`memplug.memory.Memory`.

``main`` is the console script. A hook is a fresh process on the agent's hot path, so
``memory hook <host>`` for a host shipped with memplug (the registry in
:mod:`memplug.hosts`) is recognised here, before click, package metadata or the memory
stack are imported; every other command goes through the click group in
:mod:`memplug.cli.app`.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_GLOBAL_OPTIONS = ("--db", "--config")
_NO_PYDANTIC_PLUGINS = "PYDANTIC_DISABLE_PLUGINS"


def _hook_fast_path(argv: list[str]) -> dict[str, str | None] | None:
    """Global options and the host when ``argv`` is exactly
    ``[--db X] [--config Y] hook HOST [--json]``."""
    found: dict[str, str | None] = {"--db": None, "--config": None, "host": None}
    rest = list(argv)
    while rest and rest[0].split("=", 1)[0] in _GLOBAL_OPTIONS:
        name, _, value = rest.pop(0).partition("=")
        if not value:
            if not rest:
                return None
            value = rest.pop(0)
        found[name] = value
    if rest[2:] == ["--json"]:  # the hook's answer is JSON already
        rest.pop()
    if len(rest) != 2 or rest[0] != "hook" or rest[1].startswith("-"):
        return None
    found["host"] = rest[1]
    return found


def main(argv: list[str] | None = None) -> Any:
    args = sys.argv[1:] if argv is None else argv
    hook_options = _hook_fast_path(args)
    if hook_options is not None:
        db_path = hook_options["--db"] or os.environ.get("MEMPLUG_DB") or None
        stdin = None
        if hook_options["host"] == "claude-code":  # built in, so the payload is its hook's
            stdin = sys.stdin.buffer.read()
            if _claude_idle(stdin, db_path):
                return _hook_done(argv)
        if _builtin_hook(hook_options, stdin, db_path):
            return _hook_done(argv)
    from memplug.cli.app import run

    return run(args)


def _hook_done(argv: list[str] | None) -> None:
    """End a hook run as the console script (``argv`` None) here, exit code 0: the
    interpreter's own shutdown — tearing down every module and object the hook made —
    cost a prompt hook ~7 ms of CPU more, for a process that has closed its database
    and has nothing left to do. Called with arguments (tests, embedding), it returns."""
    if argv is not None:
        return None
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:
        pass  # the host closed the pipe: nothing left to tell it
    os._exit(0)


def _builtin_hook(options: dict[str, str | None], stdin: bytes | None, db_path: str | None) -> bool:
    """Run a built-in host's hook; False when the host is not one (click takes over)."""
    # A hook process lives for one payload: the cyclic collector would spend ~7 ms of
    # its CPU re-scanning the modules it has just imported, to free next to nothing
    # before the process exits (docs/claude-code.md, "Latency"). It is back on after,
    # for a caller that runs the hook in its own process.
    import gc

    collecting = gc.isenabled()
    gc.disable()
    # Third-party pydantic plugins are looked up through package metadata on first use
    # (~20 ms); a hook has none to run. Only for the hook: the variable is put back.
    ours = _NO_PYDANTIC_PLUGINS not in os.environ
    os.environ.setdefault(_NO_PYDANTIC_PLUGINS, "__all__")
    try:
        from memplug.hosts import builtin

        spec = builtin(str(options["host"]))
        if spec is None or spec.hook is None:
            return False
        out = spec.load("hook")(
            sys.stdin.buffer.read() if stdin is None else stdin,
            db_path=db_path,
            config_path=options["--config"] or os.environ.get("MEMPLUG_CONFIG") or None,
        )
        if out:
            sys.stdout.write(out if out.endswith("\n") else out + "\n")
        return True
    finally:
        if collecting:
            gc.enable()
        if ours:
            del os.environ[_NO_PYDANTIC_PLUGINS]


def _claude_idle(stdin: bytes, db_path: str | None) -> bool:
    """A Claude Code tool hook with nothing new: it would do nothing, so it stops here,
    having imported os, json and apsw only (docs/claude-code.md, "Latency")."""
    from memplug.base.paths import default_db_file
    from memplug.hosts.claude_idle import nothing_new
    from memplug.store.peek import saved_positions

    try:
        return nothing_new(stdin, default_db_file(db_path), saved_positions)
    except Exception:  # the full hook below looks again, and records what went wrong
        return False
