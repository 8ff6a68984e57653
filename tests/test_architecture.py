"""The import graph against the layer map of docs/architecture.md.

Every module's imports are read with ``ast`` (module level, inside functions and under
``TYPE_CHECKING`` alike) and checked: dependencies go downward only, hosts reach the
services through ``plugin``/``memory``, apsw is imported only in ``db`` and ``store``,
and no SQL sits in a string outside ``store``, ``db`` and ``migrations``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "memplug"
DOC = REPO / "docs" / "architecture.md"

# The layer map, top to bottom: a module may import from its own layer's package and
# from any layer below it, never from one above or beside it. ``x.*`` is a package
# (``memplug.recall.retrieve`` counts as one layer whether it is a module or a package).
# docs/architecture.md shows the same table; a test keeps the two equal.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("entry", ("memplug", "memplug.ahead_helper", "memplug.cli.*", "memplug.demo")),
    ("ui", ("memplug.ui.*",)),
    ("sync", ("memplug.sync.*",)),
    ("hosts", ("memplug.hosts.*",)),
    ("plugin", ("memplug.plugin",)),
    ("memory", ("memplug.memory",)),
    ("reports", ("memplug.reports.*",)),
    ("recall", ("memplug.recall.*",)),
    ("derive", ("memplug.derive.*",)),
    ("capture", ("memplug.capture.*",)),
    ("semantic", ("memplug.semantic.*",)),
    ("store", ("memplug.store.*",)),
    ("base", ("memplug.base.*",)),
)
# Usable by every layer (and by each other): pure helpers, boundary models, errors.
SHARED = "base"
# A host goes through plugin/memory like every other host: of the layers below it,
# only these (and base) may be imported from hosts/.
HOSTS_MAY_USE = ("plugin", "memory")
ENGINE_LAYERS = ("store",)
# The sync server's client speaks PostgreSQL: the one module outside store/ with SQL.
SQL_LAYERS = ("store",)
SQL_MODULES = ("memplug.sync.postgres",)
SQL = re.compile(
    r"\b(SELECT\s+[\w*(]|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM"
    r"|CREATE\s+(TABLE|INDEX|VIRTUAL|TRIGGER|UNIQUE)|DROP\s+(TABLE|INDEX|TRIGGER)"
    r"|ALTER\s+TABLE|PRAGMA\s+\w|\w+\s+MATCH\s+\?)"
)


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    tree: ast.Module


@cache
def modules() -> tuple[Module, ...]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found.append(Module(".".join(parts), path, ast.parse(path.read_text(encoding="utf-8"))))
    return tuple(found)


def _match(name: str, pattern: str) -> bool:
    if pattern.endswith(".*"):
        base = pattern[:-2]
        return name == base or name.startswith(base + ".")
    return name == pattern


def layer_of(name: str) -> tuple[int, str, str]:
    """``(rank, layer, group)``: rank 0 is the top; ``group`` is the pattern matched."""
    for rank, (layer, patterns) in enumerate(LAYERS):
        for pattern in patterns:
            if _match(name, pattern):
                return rank, layer, pattern
    raise AssertionError(f"{name} is in no layer of the map: add it to LAYERS and the doc")


def imports_of(module: Module, known: set[str]) -> list[tuple[int, str]]:
    """``(line, module)`` for every import, resolved to a module where one is named."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.name.split(".")
                if module.path.name != "__init__.py":
                    package.pop()
                package = package[: len(package) - node.level + 1]
                base = ".".join([*package, base] if base else package)
            for alias in node.names:
                child = f"{base}.{alias.name}"
                found.append((node.lineno, child if child in known else base))
    return found


def violations(mods: tuple[Module, ...]) -> list[str]:
    known = {m.name for m in mods}
    found = []
    for module in mods:
        rank, layer, group = layer_of(module.name)
        for line, target in imports_of(module, known):
            if target != "memplug" and not target.startswith("memplug."):
                continue
            other_rank, other_layer, other_group = layer_of(target)
            where = f"{module.name}:{line} ({layer}) imports {target} ({other_layer})"
            if other_group == group:
                continue  # inside one module or package
            if layer == SHARED:
                if other_layer != SHARED:
                    found.append(f"{where}: base uses only base")
            elif other_layer == SHARED:
                continue
            elif other_rank < rank:
                found.append(f"{where}: upward")
            elif other_rank == rank:
                found.append(f"{where}: sideways")
            elif layer == "hosts" and other_layer not in HOSTS_MAY_USE:
                found.append(f"{where}: a host goes through plugin/memory")
    return found


def test_every_module_is_on_the_map() -> None:
    for module in modules():
        layer_of(module.name)


def test_the_doc_shows_the_map_in_code() -> None:
    rows = re.findall(r"^\| `(\w+)` \| (.+?) \|$", DOC.read_text(encoding="utf-8"), re.M)
    shown = {layer: tuple(re.findall(r"`([\w.*]+)`", cells)) for layer, cells in rows}
    assert shown == dict(LAYERS)
    assert [layer for layer, _ in rows] == [layer for layer, _ in LAYERS]


# The packages whose every module the diagram names, row by row: the stages of the data.
# (cli/, hosts/, ui/, semantic/ and store/ hold one job each, described as a whole.)
LISTED = ("sync", "reports", "recall", "derive", "capture", "base")


def _diagram_rows() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    diagram = text.split("## Layers", 1)[1].split("```", 2)[1]
    # A layer's row opens at the margin: its name, then a space; it runs to the next.
    starts = list(re.finditer(r"^([a-z]+)/? +\S", diagram, re.M))
    ends = [m.start() for m in starts[1:]] + [len(diagram)]
    return {m.group(1): diagram[m.start() : end] for m, end in zip(starts, ends, strict=True)}


def test_the_docs_diagram_names_every_layer_in_order() -> None:
    assert list(_diagram_rows()) == [layer for layer, _ in LAYERS]


@pytest.mark.parametrize("layer", LISTED)
def test_the_docs_diagram_names_every_module_of_a_stage(layer: str) -> None:
    (pattern,) = dict(LAYERS)[layer]
    package = PACKAGE / pattern.removeprefix("memplug.").removesuffix(".*")
    children = sorted(
        path.stem if path.suffix == ".py" else path.name
        for path in package.iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").exists()
    )
    row = _diagram_rows()[layer]
    missing = [name for name in children if not re.search(rf"\b{name}\b", row)]
    assert children and missing == [], f"the diagram's {layer} row lacks {missing}"


def import_cycles(mods: tuple[Module, ...]) -> list[list[str]]:
    """Every circle of modules importing each other, counting every import (lazy ones,
    and those only a type checker reads): a circle is a tangle wherever it is."""
    known = {m.name for m in mods}
    graph = {
        m.name: sorted({t for _, t in imports_of(m, known) if t in known and t != m.name})
        for m in mods
    }
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current walk; 2: done

    def walk(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in graph[name]:
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                walk(target, [*path, target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            walk(name, [name])
    return cycles


def test_no_module_imports_one_that_imports_it_back() -> None:
    assert import_cycles(modules()) == []


def test_the_circle_check_sees_a_circle() -> None:
    back = ast.parse("from memplug.recall.retrieve.candidates import Pool\n")
    mods = tuple(
        Module(m.name, m.path, ast.Module(body=[*m.tree.body, *back.body], type_ignores=[]))
        if m.name == "memplug.recall.retrieve.branches"
        else m
        for m in modules()
    )
    pair = {"memplug.recall.retrieve.branches", "memplug.recall.retrieve.candidates"}
    assert any(pair <= set(cycle) for cycle in import_cycles(mods))


def test_dependencies_go_downward_only() -> None:
    assert violations(modules()) == []


@pytest.mark.parametrize(
    ("module", "target", "why"),
    [
        ("memplug.store.events", "memplug.memory", "upward"),
        ("memplug.reports.purge", "memplug.memory", "upward"),
        ("memplug.derive.extract", "memplug.recall.retrieve", "upward"),
        ("memplug.hosts.claude_hook", "memplug.store.hosts", "through plugin/memory"),
        ("memplug.hosts.claude_hook", "memplug.recall.assemble", "through plugin/memory"),
        ("memplug.base.text", "memplug.store", "base uses only base"),
    ],
)
def test_the_check_sees_a_bad_import(module: str, target: str, why: str) -> None:
    bad = ast.parse(f"from {target} import *\n")
    mods = tuple(
        Module(m.name, m.path, ast.Module(body=[*m.tree.body, *bad.body], type_ignores=[]))
        if m.name == module
        else m
        for m in modules()
    )
    before = set(violations(modules()))
    new = [v for v in violations(mods) if v not in before]
    assert len(new) == 1, new
    assert new[0].startswith(f"{module}:1 ") and target in new[0] and why in new[0]


def _layer_name(module: Module) -> str:
    return layer_of(module.name)[1]


def test_apsw_is_imported_only_in_db_and_store() -> None:
    offenders = [
        f"{module.name}:{line}"
        for module in modules()
        if _layer_name(module) not in ENGINE_LAYERS
        for line, target in imports_of(module, set())
        if target == "apsw" or target.startswith("apsw.")
    ]
    assert offenders == []


# The backend-neutral part of store/ (docs/architecture.md "The storage port"): the
# Protocols and the records they carry. Every other store module is SQLite's (or the
# sync server's), and the layers above type against these two alone.
PORT_MODULES = {"memplug.store.ports", "memplug.store.records"}
# Who may still name a backend module, and why: the composition roots build the one
# Store on one connection (memory; the import helper process opens its own), and read
# the saved cursors before opening it; the idle hook's path in the CLI peeks at those
# cursors before anything else is imported; the error paths turn an engine's error into
# one line (store.db.engine_error), and status reports the schema this code expects.
BACKEND_IMPORTS = {
    ("memplug.memory", "memplug.store.sqlite"),
    ("memplug.memory", "memplug.store.peek"),
    ("memplug.memory", "memplug.store.db"),
    ("memplug.ahead_helper", "memplug.store.db"),
    ("memplug.cli", "memplug.store.peek"),
    ("memplug.cli.app", "memplug.store.db"),
    ("memplug.cli.doctor", "memplug.store.db"),
    ("memplug.plugin", "memplug.store.db"),
    ("memplug.reports.diagnostics", "memplug.store.db"),
}


def backend_imports(mods: tuple[Module, ...]) -> list[str]:
    known = {m.name for m in mods}
    return [
        f"{module.name}:{line} imports {target}"
        for module in mods
        if _layer_name(module) not in ENGINE_LAYERS
        for line, target in imports_of(module, known)
        if (target == "memplug.store" or target.startswith("memplug.store."))
        and target not in PORT_MODULES
        and (module.name, target) not in BACKEND_IMPORTS
    ]


def test_nothing_above_store_imports_a_backend_module() -> None:
    assert backend_imports(modules()) == []


@pytest.mark.parametrize(
    ("module", "target"),
    [
        ("memplug.recall.retrieve.search", "memplug.store.search"),
        ("memplug.derive.extract", "memplug.store.items"),
        ("memplug.plugin", "memplug.store.sqlite"),
        ("memplug.reports.explain", "memplug.store"),
    ],
)
def test_the_backend_check_sees_a_bad_import(module: str, target: str) -> None:
    bad = ast.parse(f"from {target} import Thing\n")
    mods = tuple(
        Module(m.name, m.path, ast.Module(body=[*m.tree.body, *bad.body], type_ignores=[]))
        if m.name == module
        else m
        for m in modules()
    )
    assert backend_imports(mods) == [f"{module}:1 imports {target}"]


# A condition with a bound parameter ("x = ?", "x IN (?"): what EventScope.where()
# rendered before it moved to store/search.py.
PLACEHOLDER = re.compile(r"(=|\bIN\s*\()\s*\?")


def _strings(module: Module) -> list[str]:
    return [
        node.value
        for node in ast.walk(module.tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_the_port_modules_hold_no_sql_and_no_engine() -> None:
    for module in modules():
        if module.name in PORT_MODULES:
            targets = [t for _, t in imports_of(module, set())]
            assert not [t for t in targets if t.split(".")[0] == "apsw" or t == "memplug.store.db"]
            assert _sql_strings(module) == [], module.name
            assert not [s for s in _strings(module) if PLACEHOLDER.search(s)], module.name


def test_the_placeholder_pattern_sees_a_condition() -> None:
    assert PLACEHOLDER.search("e.session_id = ?") and PLACEHOLDER.search("m.status IN (?")
    assert not PLACEHOLDER.search("which port? the one in the config")


# What the plugin, and nothing above it, may reach in the store: a host's transcript
# cursors and record links (HostCursorPort), and the write transaction, with its lock
# wait, that holds a read's events and its moved cursor together (Plugin.session_writes;
# docs/architecture.md "Hosts and extension points"). Hosts and entry code reach none.
PLUGIN_STORE_CALLS = {"hosts", "lock_wait", "write_transaction"}


def store_reaches(module: Module) -> list[str]:
    """``module:line .store.name`` for each reach into a store the module may not make."""
    allowed = PLUGIN_STORE_CALLS if _layer_name(module) == "plugin" else set()
    return [
        f"{module.name}:{node.lineno} .store.{node.attr}"
        for node in ast.walk(module.tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "store"
        and node.attr not in allowed
    ]


def test_hosts_and_entry_code_go_through_plugin_and_memory() -> None:
    host_side = [m for m in modules() if _layer_name(m) in ("entry", "hosts", "plugin")]
    assert [hit for m in host_side for hit in store_reaches(m)] == []


def test_the_store_reach_check_sees_a_reach() -> None:
    plugin, hook = (next(m for m in modules() if m.name == name) for name in PLUGIN_AND_HOOK)
    bad = ast.parse("self.memory.store.logs.get(1)\nmemory.store.hosts.cursor('s')\n")
    assert store_reaches(Module(plugin.name, plugin.path, bad)) == ["memplug.plugin:1 .store.logs"]
    assert store_reaches(Module(hook.name, hook.path, bad)) == [
        f"{hook.name}:1 .store.logs",
        f"{hook.name}:2 .store.hosts",
    ]


PLUGIN_AND_HOOK = ("memplug.plugin", "memplug.hosts.claude_hook")


def requests_built(module: Module) -> list[str]:
    """Where a module names the assembler's request: a host speaks ``HostStep``."""
    return [
        f"{module.name}:{node.lineno}"
        for node in ast.walk(module.tree)
        if (isinstance(node, ast.Name) and node.id == "AssemblyRequest")
        or (isinstance(node, ast.alias) and node.name == "AssemblyRequest")
    ]


def test_no_host_builds_an_assembly_request() -> None:
    hosts = [m for m in modules() if _layer_name(m) == "hosts"]
    assert [hit for m in hosts for hit in requests_built(m)] == []
    hook = next(m for m in modules() if m.name == PLUGIN_AND_HOOK[1])
    bad = ast.parse("from memplug.recall.assemble import AssemblyRequest\nAssemblyRequest('s')\n")
    assert requests_built(Module(hook.name, hook.path, bad)) == [f"{hook.name}:1", f"{hook.name}:2"]


# One name, one concept: a class name is defined once in memplug/ (issue 27).
def duplicate_class_names(found: list[Module]) -> dict[str, list[str]]:
    where: dict[str, list[str]] = {}
    for module in found:
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(f"{module.name}:{node.lineno}")
    return {name: lines for name, lines in where.items() if len(lines) > 1}


def test_each_class_name_is_defined_once() -> None:
    assert duplicate_class_names(modules()) == {}


def test_the_class_name_check_sees_a_second_definition() -> None:
    plugin = next(m for m in modules() if m.name == "memplug.plugin")
    second = Module("memplug.other", plugin.path, ast.parse("class Plugin:\n    pass\n"))
    assert list(duplicate_class_names([plugin, second])) == ["Plugin"]


# The PostgreSQL driver is the sync server's engine (docs/sync.md): only its client
# (SQL_MODULES) imports it, and the rest of sync sees memplug's records and errors.
DRIVER_LAYERS = ("store",)


def test_psycopg_is_imported_only_by_the_sync_servers_client() -> None:
    offenders = [
        f"{module.name}:{line}"
        for module in modules()
        if _layer_name(module) not in DRIVER_LAYERS and module.name not in SQL_MODULES
        for line, target in imports_of(module, set())
        if target.split(".")[0] in ("psycopg", "psycopg2", "psycopg_binary")
    ]
    assert offenders == []


def test_no_hook_can_reach_the_sync_server() -> None:
    # Hosts, the plugin and everything below may not import memplug.sync.exchange (it is above
    # them), and only it and store/ name the server's module.
    offenders = [
        f"{module.name}:{line}"
        for module in modules()
        if module.name != "memplug.sync.exchange" and _layer_name(module) != "store"
        for line, target in imports_of(module, set())
        if target == "memplug.sync.postgres"
    ]
    assert offenders == []


def test_no_private_interpreter_module_is_imported() -> None:
    """``_blake2``, ``_sha256``, ``_json``…: missing on some CPython builds (FIPS builds,
    some distributions), where importing one fails; hashlib and json are on every build."""
    private = [
        f"{module.name}:{line} {target}"
        for module in modules()
        for line, target in imports_of(module, set())
        if target.startswith("_") and target != "__future__"
    ]
    assert private == []


# Where an apsw connection is opened: db (with _configure, the settings every
# connection gets) and the idle hook's cursor peek (which cannot import db).
CONNECTION_OPENERS = {"memplug.store.db", "memplug.store.peek"}


def test_connections_are_opened_only_by_db_and_the_peek() -> None:
    openers = {
        module.name
        for module in modules()
        for node in ast.walk(module.tree)
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "apsw.Connection"
    }
    assert openers == CONNECTION_OPENERS


def _nodes(tree: ast.AST, function: str = "") -> list[tuple[str, ast.AST]]:
    """Every node with the name of the innermost function around it."""
    found: list[tuple[str, ast.AST]] = []
    for child in ast.iter_child_nodes(tree):
        inner = (
            child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else function
        )
        found.append((inner, child))
        found += _nodes(child, inner)
    return found


def _sql_strings(module: Module) -> list[tuple[str, int, str]]:
    found = []
    for function, node in _nodes(module.tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
        else:
            continue
        if SQL.search(text):
            found.append((function, node.lineno, text))
    return found


def _connections(module: Module) -> list[tuple[str, int]]:
    return [
        (function, node.lineno)
        for function, node in _nodes(module.tree)
        if isinstance(node, ast.Attribute) and node.attr == "conn"
    ]


def _above_store() -> list[Module]:
    return [m for m in modules() if _layer_name(m) not in SQL_LAYERS and m.name not in SQL_MODULES]


def test_no_sql_outside_store_db_and_migrations() -> None:
    offenders = [
        f"{module.name}:{line} in {function or 'module'}: {text[:60]!r}"
        for module in _above_store()
        for function, line, text in _sql_strings(module)
    ]
    assert offenders == []


def test_no_raw_connection_above_store() -> None:
    offenders = [
        f"{module.name}:{line} in {function or 'module'}"
        for module in _above_store()
        for function, line in _connections(module)
    ]
    assert offenders == []


@pytest.mark.parametrize(
    "text",
    [
        "SELECT id FROM events WHERE session_id = ?",
        "INSERT OR IGNORE INTO host_links (a) VALUES (?)",
        "UPDATE checkpoints SET x = 1",
        "DELETE FROM events",
        "CREATE VIRTUAL TABLE t USING fts5(x)",
        "PRAGMA user_version",
        "events_fts MATCH ?",
    ],
)
def test_the_sql_pattern_sees_sql(text: str) -> None:
    assert SQL.search(text)


@pytest.mark.parametrize(
    "text",
    ["Select the newest items first.", "an update to the plan", "delete it from the list"],
)
def test_the_sql_pattern_leaves_prose_alone(text: str) -> None:
    assert not SQL.search(text)


# docs/architecture.md "Records": records are msgspec Structs; these stay dataclasses
# because the pydantic boundary models nest them (pydantic validates dataclasses).
DATACLASS_MODULES = {"memplug.base.messages"}


def _dataclass_lines(module: Module) -> list[int]:
    return [
        node.lineno
        for node in ast.walk(module.tree)
        if isinstance(node, ast.ClassDef)
        for deco in node.decorator_list
        if "dataclass" in ast.unparse(deco)
    ]


def test_records_are_structs() -> None:
    found = [
        f"{module.name}:{line}"
        for module in modules()
        if module.name not in DATACLASS_MODULES
        for line in _dataclass_lines(module)
    ]
    assert found == [], "a record is a msgspec.Struct (docs/architecture.md Records)"


def test_the_record_check_sees_a_dataclass() -> None:
    messages = next(m for m in modules() if m.name == "memplug.base.messages")
    assert len(_dataclass_lines(messages)) == 2
