"""The storage port: each SQLite store satisfies its Protocol, method for method.

mypy checks the same statically wherever a service takes a ``Storage`` (capture,
extract, assemble, purge, diagnostics); these tests also catch a signature that drifts
at run time (``isinstance`` on a runtime-checkable Protocol only checks names).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Protocol

import pytest

from memplug.base.errors import DatabaseBusy
from memplug.memory import Memory
from memplug.store import ports
from memplug.store.sqlite import Store

SUB_PORTS: dict[str, type[Any]] = {
    "events": ports.EventPort,
    "items": ports.ItemPort,
    "search": ports.SearchPort,
    "logs": ports.LogPort,
    "hosts": ports.HostCursorPort,
    "timeline": ports.TimelinePort,
    "vectors": ports.VectorPort,
    "work": ports.WorkPort,
    "admin": ports.AdminPort,
    "skills": ports.SkillPort,
    "core": ports.CorePort,
    "sync": ports.SyncPort,
}


def _members(protocol: type[Any]) -> list[str]:
    return sorted(
        name
        for name, value in vars(protocol).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, property))
    )


def _same_signature(port: type[Any], impl: object, name: str) -> None:
    wanted = inspect.signature(getattr(port, name))
    found = inspect.signature(getattr(type(impl), name))
    assert list(wanted.parameters) == list(found.parameters), f"{type(impl).__name__}.{name}"
    for param, other in zip(wanted.parameters.values(), found.parameters.values(), strict=True):
        assert param.kind == other.kind, f"{type(impl).__name__}.{name}({param.name})"
        assert param.default == other.default, f"{type(impl).__name__}.{name}({param.name})"


def test_the_sqlite_store_is_a_storage(memory: Memory) -> None:
    store: ports.Storage = memory.store
    assert isinstance(store, ports.Storage)
    for name in _members(ports.Storage):
        if not isinstance(vars(ports.Storage)[name], property):
            _same_signature(ports.Storage, store, name)
    assert store.path == memory.db.path


@pytest.mark.parametrize("attribute", sorted(SUB_PORTS))
def test_each_sqlite_sub_store_satisfies_its_port(memory: Memory, attribute: str) -> None:
    port = SUB_PORTS[attribute]
    impl = getattr(memory.store, attribute)
    assert isinstance(impl, port)
    for name in _members(port):
        _same_signature(port, impl, name)


def test_a_port_method_missing_from_a_store_is_seen(memory: Memory) -> None:
    class Partial:
        def cursor(self, session_id: str) -> None: ...

    assert not isinstance(Partial(), ports.HostCursorPort)
    assert isinstance(memory.store.hosts, ports.HostCursorPort)


def test_the_ports_name_every_public_method_of_the_stores(memory: Memory) -> None:
    # A public method the port does not name is one a service can only reach by
    # typing against SQLite: it belongs in the port, or it is dead.
    for attribute, port in SUB_PORTS.items():
        impl = type(getattr(memory.store, attribute))
        public = {
            name
            for name, value in vars(impl).items()
            if not name.startswith("_") and inspect.isfunction(value)
        }
        assert public - set(_members(port)) == set(), attribute


def test_write_transaction_is_a_port_method_and_busy_is_a_memplug_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.sqlite"
    with Memory.open(path) as first, Memory.open(path) as second:
        first_store: ports.Storage = first.store
        second_store: ports.Storage = second.store
        with first_store.write_transaction():
            first_store.events.record_error("test", "held", None, None)
            with (
                second_store.lock_wait(10),
                pytest.raises(DatabaseBusy, match="locked"),
                second_store.write_transaction(),
            ):
                pass
        with second_store.write_transaction():
            second_store.events.record_error("test", "after", None, None)
        assert [e["message"] for e in second_store.events.latest_errors()] == ["after", "held"]


def test_a_bare_store_wraps_a_database(memory: Memory) -> None:
    store = Store(memory.db)
    with store.transaction():
        store.events.record_error("test", "inside", None, None)
    assert store.counts()["error_log"] == 1
    assert store.schema_version() == memory.db.schema_version()
    assert store.integrity_check() == ["ok"]


def test_the_architecture_doc_names_every_protocol_of_the_port() -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "architecture.md").read_text(
        encoding="utf-8"
    )
    protocols = [
        name
        for name, value in vars(ports).items()
        if inspect.isclass(value)
        and Protocol in value.__mro__[1:]
        and value.__module__ == ports.__name__
    ]
    assert len(protocols) >= 14
    missing = [name for name in protocols if f"- `{name}`" not in doc]
    assert not missing, f"docs/architecture.md does not name {missing}"
