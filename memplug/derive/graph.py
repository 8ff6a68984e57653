"""The entity graph: entities and edges derived from events and items, and its views
(``neighbors``, ``export``). See docs/timeline.md.

Derivation reads structural signals only (``memplug.derive.entities``): the files, hosts,
ports, packages, versions and identifiers in real user text and in tool input, the
project a session ran in, and the subject and value of key–value statements that
extraction turned into items. Relations:

* ``in_project`` — an entity named in a session of that project;
* ``mentioned_with`` — two entities named by the same event (undirected, lower id first);
* ``port`` — a host named with a port (``db:5432``, a URL);
* ``version`` — a package pinned to a version (``django==4.2``); one value at a time;
* ``is`` — a subject's value in a key–value statement (``the API port is 8080``); one
  value at a time.

For a relation that holds one value at a time, the edge stated last (event time, then
session and seq) is current and every other edge from the same entity is
``superseded_by`` it. Nothing is deleted; the mark is computed when the graph is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from msgspec import Struct

from memplug.base.errors import NotFound, ValidationError
from memplug.base.refs import row_scope
from memplug.derive.entities import (
    FUNCTIONAL_RELATIONS,
    Entity,
    Mentions,
    comentions,
    in_text,
    in_tool_input,
    project_entity,
    spellings,
    subject_entity,
    value_entity,
)
from memplug.derive.extract import READ_TYPES, is_user_statement
from memplug.derive.scopes import NamedScope
from memplug.store.ports import Storage
from memplug.store.records import EdgeRow, EventRow, ItemFact

MAX_HOPS = 3
MAX_NEIGHBORS = 100
MAX_SOURCES = 4
EXPORT_FORMATS: tuple[str, ...] = ("dot", "mermaid")
# An export larger than this is cut (and says so): a picture nobody can read helps nobody.
MAX_EXPORT_EDGES = 500


def event_mentions(event: EventRow, text: str) -> Mentions:
    """What an event names: real user text and tool input only."""
    if is_user_statement(event):
        return in_text(text, event.cwd)
    if event.type == "tool/call":
        return in_tool_input(event.tool_name, text, event.cwd)
    return Mentions()


def item_mentions(item: ItemFact, cwd: str | None) -> Mentions:
    """What an item names, and its key–value statement as an ``is`` edge."""
    found = in_text(item.content, cwd)
    if item.subject_key:
        subject = subject_entity(item.subject_key)
        value = next((e for e in found.entities if e.type not in ("ident", "subject")), None)
        if value is None and item.numbers:
            number = item.numbers[0]
            unit = f" {number['unit']}" if number.get("unit") else ""
            value = value_entity(item.subject_key, f"{number.get('value')}{unit}")
        found.add(subject)
        found.relate(subject, "is", found.add(value))
    return found


class GraphDeriver:
    """Entities and edges of each event (an extraction follower)."""

    # Recorded with the derived rows; raise it with a change to them (rederive.Follower).
    name = "graph"
    version = 1

    def __init__(self, store: Storage) -> None:
        self.store = store
        self.rows = store.timeline

    def clear(self, session_id: str) -> None:
        # The timeline follower clears the session's graph rows with its own.
        return None

    def prepare(self, event: EventRow) -> None:
        if event.type == "tool/call" or event.type in READ_TYPES:
            event_mentions(event, self._text(event))

    def _text(self, event: EventRow) -> str:
        return self.store.events.full_text(event) if is_user_statement(event) else event.text

    def follow(self, event: EventRow, items: Sequence[ItemFact] = ()) -> None:
        project = event.project_key
        if event.type != "tool/call" and event.type not in READ_TYPES:
            return
        found = event_mentions(event, self._text(event))
        for item in items:
            found.merge(item_mentions(item, event.cwd))
        if not found.entities:
            return
        relations = _last_values([(r.src, r.relation, r.dst) for r in found.relations])
        # A pair a specific relation already joins needs no `mentioned_with` besides.
        joined = {frozenset((r.src, r.dst)) for r in found.relations}
        relations += [
            (r.src, r.relation, r.dst)
            for r in comentions(found.entities)
            if frozenset((r.src, r.dst)) not in joined
        ]
        home = project_entity(project)
        entities: list[Entity] = list(found.entities)
        if home is not None:
            entities.append(home)
            relations += [(e.id, "in_project", home.id) for e in found.entities]
        scope, agent = row_scope(project, event.session_id), event.agent
        self.rows.note_entities(
            event.session_id, scope, event.seq, ((e.id, e.type, e.name) for e in entities), agent
        )
        self.rows.note_edges(
            event.session_id, scope, event.seq, event.event_time, dict.fromkeys(relations), agent
        )


def _last_values(relations: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """One event stating two values of a one-value relation (``a==1 -> a==2``) states
    the last one: the earlier ones are not statements of the current value."""
    last = {(s, r): d for s, r, d in relations if r in FUNCTIONAL_RELATIONS}
    return [
        (s, r, d) for s, r, d in relations if r not in FUNCTIONAL_RELATIONS or last[(s, r)] == d
    ]


class _Edge(Struct, frozen=True):
    """Edge rows of several sessions joined into one statement of the graph."""

    src: str
    relation: str
    dst: str
    rows: tuple[EdgeRow, ...]

    @property
    def last(self) -> tuple[str, str, int]:
        return max(r.order_key() for r in self.rows)

    def sources(self) -> list[dict[str, Any]]:
        refs = sorted({(r.session_id, s) for r in self.rows for s in (r.first_seq, r.last_seq)})
        return [{"session_id": s, "seq": q} for s, q in refs[:MAX_SOURCES]]


class Graph:
    """Read the graph: an entity's neighbours, the whole graph as a picture."""

    def __init__(self, store: Storage) -> None:
        self.rows = store.timeline
        self.store = store

    def resolve(self, text: str, scope: NamedScope) -> str:
        """The entity ``text`` names: an id, a spelling that normalises to one (a package,
        host, port, identifier or subject, by the rules of ``memplug.derive.entities``), a first
        spelling, or the end of a path; several matches are an error that lists them."""
        wanted = (text or "").strip()
        if not wanted:
            raise ValidationError("give an ENTITY (an id such as file:/a/b.py, or a name)")
        found = [e.entity for e in self.rows.find_entities(spellings(wanted), wanted, scope.where)]
        if not found and ("/" in wanted or "." in wanted):
            found = self.rows.entity_ids_like("/" + wanted.lstrip("./"), scope.where, 6)
        if not found:
            raise NotFound(f"no entity '{wanted}' in scope {scope.name}")
        if len(found) > 1:
            shown = ", ".join(found[:5])
            raise ValidationError(f"'{wanted}' names several entities ({shown}); give the id")
        return found[0]

    def neighbors(self, entity: str, scope: NamedScope, *, hops: int = 2) -> dict[str, Any]:
        """Entities within ``hops`` edges of ``entity``, nearest first."""
        if not 1 <= hops <= MAX_HOPS:
            raise ValidationError(f"--hops must be between 1 and {MAX_HOPS}")
        start = self.resolve(entity, scope)
        seen = {start: 0}
        frontier = [start]
        out: list[dict[str, Any]] = []
        cut = False
        for depth in range(1, hops + 1):
            edges = _joined(self.rows.edges_touching(frontier, scope.where))
            nxt: list[str] = []
            for edge in edges:
                for near, far in ((edge.src, edge.dst), (edge.dst, edge.src)):
                    if near not in frontier or (far in seen and seen[far] < depth):
                        continue
                    if len(out) >= MAX_NEIGHBORS:
                        cut = True
                        break
                    out.append(self._neighbor(edge, far, near, depth, scope))
                    if far not in seen:
                        seen[far] = depth
                        nxt.append(far)
            frontier = sorted(set(nxt))
            if not frontier or cut:
                break
        return {
            "entity": start,
            "scope": scope.name,
            "hops": hops,
            "neighbors": out,
            "coverage": {
                "complete": not cut,
                "reasons": [f"neighbor_limit:{MAX_NEIGHBORS}"] if cut else [],
            },
        }

    def _neighbor(
        self, edge: _Edge, far: str, near: str, depth: int, scope: NamedScope
    ) -> dict[str, Any]:
        item: dict[str, Any] = {
            "entity": far,
            "relation": edge.relation,
            "direction": "out" if near == edge.src else "in",
            "via": near,
            "hops": depth,
            "sources": edge.sources(),
        }
        superseding = self._superseded_by(edge, scope)
        if superseding is not None:
            item["superseded_by"] = superseding
        return item

    def _superseded_by(self, edge: _Edge, scope: NamedScope) -> dict[str, str] | None:
        if edge.relation not in FUNCTIONAL_RELATIONS:
            return None
        slot = _joined(self.rows.edges_in_slot(edge.src, edge.relation, scope.where))
        current = max(slot, key=lambda e: (e.last, e.dst))
        if current.dst == edge.dst:
            return None
        return {"src": current.src, "relation": current.relation, "dst": current.dst}

    def export(self, scope: NamedScope, fmt: str) -> str:
        """The graph in ``scope`` as Graphviz dot or a Mermaid flowchart; superseded edges
        are drawn dashed."""
        if fmt not in EXPORT_FORMATS:
            raise ValidationError(f"--format must be one of {', '.join(EXPORT_FORMATS)}")
        edges = _joined(self.rows.all_edges(scope.where))
        current = _current_values(edges)
        cut = len(edges) > MAX_EXPORT_EDGES
        edges = edges[:MAX_EXPORT_EDGES]
        nodes = sorted({e.src for e in edges} | {e.dst for e in edges})
        draw = _dot if fmt == "dot" else _mermaid
        return draw(nodes, edges, current, scope.name, cut)


def _joined(rows: Sequence[EdgeRow]) -> list[_Edge]:
    groups: dict[tuple[str, str, str], list[EdgeRow]] = {}
    for row in rows:
        groups.setdefault((row.src, row.relation, row.dst), []).append(row)
    return [_Edge(s, r, d, tuple(g)) for (s, r, d), g in sorted(groups.items())]


def _current_values(edges: Sequence[_Edge]) -> dict[tuple[str, str], str]:
    """``(src, relation) → dst`` of the current edge of each one-value relation."""
    best: dict[tuple[str, str], _Edge] = {}
    for edge in edges:
        if edge.relation in FUNCTIONAL_RELATIONS:
            key = (edge.src, edge.relation)
            if key not in best or (edge.last, edge.dst) > (best[key].last, best[key].dst):
                best[key] = edge
    return {key: edge.dst for key, edge in best.items()}


def _stale(edge: _Edge, current: dict[tuple[str, str], str]) -> bool:
    return current.get((edge.src, edge.relation), edge.dst) != edge.dst


def _dot(
    nodes: list[str], edges: list[_Edge], current: dict[tuple[str, str], str], name: str, cut: bool
) -> str:
    lines = [f"// memplug graph, scope {name}" + (" (cut: too many edges)" if cut else "")]
    lines.append("digraph memplug {")
    lines.append("  rankdir=LR;")
    for node in nodes:
        lines.append(f"  {_dot_quote(node)};")
    for edge in edges:
        style = ", style=dashed" if _stale(edge, current) else ""
        arrow = ", dir=none" if edge.relation == "mentioned_with" else ""
        lines.append(
            f"  {_dot_quote(edge.src)} -> {_dot_quote(edge.dst)}"
            f" [label={_dot_quote(edge.relation)}{style}{arrow}];"
        )
    lines.append("}")
    return "\n".join(lines)


def _mermaid(
    nodes: list[str], edges: list[_Edge], current: dict[tuple[str, str], str], name: str, cut: bool
) -> str:
    ids = {node: f"n{i}" for i, node in enumerate(nodes)}
    lines = [f"%% memplug graph, scope {name}" + (" (cut: too many edges)" if cut else "")]
    lines.append("flowchart LR")
    for node in nodes:
        lines.append(f'  {ids[node]}["{_mermaid_text(node)}"]')
    for edge in edges:
        link = "-.->" if _stale(edge, current) else "-->"
        if edge.relation == "mentioned_with":
            link = "---"
        lines.append(f"  {ids[edge.src]} {link}|{_mermaid_text(edge.relation)}| {ids[edge.dst]}")
    return "\n".join(lines)


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def _mermaid_text(text: str) -> str:
    # Mermaid has no escape inside a label; entity codes stand in for what would end it.
    return text.replace('"', "#quot;").replace("|", "#124;").replace("\n", " ")
