"""``memory explain``: read one logged assembly back. Nothing is re-run.

Every figure here comes from the ``assembly_logs`` row as it was written at the time of
the step, so explain answers "why was this (not) injected *then*", even after the
database has moved on.
"""

from __future__ import annotations

from typing import Any

from memplug.base.errors import NotFound
from memplug.base.refs import event_ref
from memplug.base.text import clip
from memplug.recall.assemble import SECTIONS, count_reasons
from memplug.store.ports import Storage
from memplug.store.records import LogRecord


def find_assembly(
    store: Storage,
    *,
    assembly_id: int | None = None,
    session_id: str | None = None,
    turn: int | None = None,
) -> LogRecord:
    """The logged attempt by id, else the newest (of a session, of a turn of it)."""
    if assembly_id is not None:
        record = store.logs.get(assembly_id)
        if record is None:
            raise NotFound(f"no assembly {assembly_id} in the log (it may have aged out)")
        return record
    record = store.logs.latest(session_id, turn)
    if record is None:
        if session_id is None:
            raise NotFound("no assembly has been logged yet")
        where = f"session {session_id!r}" + (f" turn {turn}" if turn is not None else "")
        raise NotFound(f"no assembly logged for {where}")
    return record


def explain(record: LogRecord, validation: dict[str, Any] | None = None) -> dict[str, Any]:
    """The documented JSON shape of ``memory explain --json``; ``validation`` is the
    session's latest validation run, read as it is now."""
    sections = []
    # Numbered as DESIGN.md numbers them: the resident core is section 0.
    for number, meta in enumerate(_section_meta(record)):
        name = meta["name"]
        sections.append(
            {
                "number": number,
                "name": name,
                "title": meta.get("title", name),
                "tokens": meta.get("tokens", 0),
                "included": [dict(e) for e in record.included if e.get("section") == name],
                "omitted": [dict(o) for o in record.omitted if o.get("section") == name],
            }
        )
    return {
        "id": record.id,
        "session_id": record.session_id,
        "turn": record.turn,
        "step": record.step,
        "trigger": record.trigger,
        "created_at": record.created_at,
        "injected": record.injected,
        "budget": record.budget,
        "used_tokens": record.used_tokens,
        "token_source": record.token_source,
        "content_hash": record.content_hash,
        "message_seq": record.message_seq,
        "duration_ms": record.duration_ms,
        "query": {"text": record.query_text, **dict(record.query)},
        "coverage": {k: v for k, v in record.coverage.items() if k != "why_not"},
        "why_not": record.coverage.get("why_not"),
        "errors": list(record.errors),
        "sections": sections,
        "omitted_by_reason": count_reasons(record.omitted),
        "validation": validation,
        "text": record.text,
    }


def _section_meta(record: LogRecord) -> list[dict[str, Any]]:
    logged = {s.get("name"): dict(s) for s in record.sections}
    # A failed attempt logs no sections; explain still shows the fixed order.
    return [logged.get(name, {"name": name, "title": name, "tokens": 0}) for name in SECTIONS]


def render_explain(
    data: dict[str, Any], *, max_omitted: int | None = None, max_included: int | None = None
) -> str:
    """``memory explain`` for people: the decision first, the injected text last.

    ``max_omitted`` shortens each section's list of omissions to that many lines plus
    a count by reason, ``max_included`` its inclusions to that many plus a count (the
    demo uses them; the command shows every line).
    """
    head = [f"assembly {data['id']}", f"session {data['session_id']}"]
    if data["turn"] is not None:
        head.append(f"turn {data['turn']}")
    if data["step"] is not None:
        head.append(f"step {data['step']}")
    head += [data["trigger"], data["created_at"]]
    lines = [" · ".join(head)]
    if data["injected"]:
        injected = f"yes: {data['used_tokens']} of {data['budget']} tokens ({data['token_source']})"
        if data["message_seq"] is not None:
            shown = event_ref(data["session_id"], data["message_seq"])
            injected += f", committed back as event {shown}"
    else:
        injected = f"no (budget {data['budget']} tokens, {data['token_source']})"
        if data.get("why_not"):
            injected += f": {data['why_not']}"
    lines.append(f"injected   {injected}")
    query = data["query"]
    lines.append(f"query      {clip(' '.join((query.get('text') or '').split()), 100)!r}")
    terms = [t["text"] for t in query.get("terms", []) if not t.get("stop")]
    if terms:
        lines.append(f"signals    {', '.join(terms[:16])}" + (" …" if len(terms) > 16 else ""))
    coverage = data["coverage"]
    if coverage.get("complete", True):
        lines.append("coverage   complete")
    else:
        lines.append(f"coverage   INCOMPLETE: {'; '.join(coverage.get('reasons', []))}")
    for error in data["errors"]:
        lines.append(f"error      {error}")
    # With a semantic provider on, each ranked line says how it was found.
    semantic = bool(query.get("semantic"))
    if semantic:
        lines.append(f"semantic   {query['semantic']}")
    lines.append("")
    for section in data["sections"]:
        inc, out = section["included"], section["omitted"]
        if not inc and not out:
            lines.append(f"{section['number']}. {section['title']}: empty")
            continue
        lines.append(
            f"{section['number']}. {section['title']}: {len(inc)} in, {len(out)} out, "
            f"{section['tokens']} tokens"
        )
        shown_in = inc if max_included is None else inc[:max_included]
        lines.extend("   + " + _entry_line(entry, semantic=semantic) for entry in shown_in)
        if len(shown_in) < len(inc):
            lines.append(f"   … {len(inc) - len(shown_in)} more included")
        shown = out if max_omitted is None else out[:max_omitted]
        lines.extend("   - " + _omission_line(omission) for omission in shown)
        if len(shown) < len(out):
            rest = count_reasons(out[len(shown) :])
            lines.append(
                f"   … {len(out) - len(shown)} more: "
                + ", ".join(f"{n} {reason}" for reason, n in rest.items())
            )
    run = data.get("validation")
    if run:
        state = "ok" if run["ok"] else f"{len(run['violations'])} violation(s)"
        if run["blocking"]:
            state += f", blocking (repair {run['repair_attempt']}/{run['max_repair_attempts']})"
        lines += [
            "",
            f"validation run {run['id']} of {event_ref(run['session_id'], run['event_seq'])}: "
            f"{state}",
        ]
    if data["omitted_by_reason"]:
        counts = ", ".join(f"{n} {reason}" for reason, n in data["omitted_by_reason"].items())
        lines += ["", f"omitted    {counts}"]
    if data["text"]:
        lines += ["", f"--- injected text ({data['used_tokens']} tokens) ---", data["text"]]
    return "\n".join(lines)


def found_via(why: str) -> str:
    """``lexical``, ``semantic`` or ``both``: how a ranked line was found, from its why."""
    if why.startswith("semantic:"):
        return "semantic"
    return "both" if " +semantic:" in why else "lexical"


def _entry_line(entry: dict[str, Any], *, semantic: bool = False) -> str:
    parts = [entry["ref"]]
    if entry.get("kind"):
        parts.append(str(entry["kind"]))
    if entry.get("score") is not None:
        parts.append(f"score {entry['score']:.3f}")
        if semantic:
            parts.append(f"via {found_via(str(entry.get('why') or ''))}")
    parts.append(f"{entry.get('tokens', 0)} tok")
    line = "  ".join(parts)
    if entry.get("why"):
        line += f"  ({entry['why']})"
    return line


def _omission_line(omission: dict[str, Any]) -> str:
    parts = [omission["ref"], omission["reason"]]
    if omission.get("score") is not None:
        parts.append(f"score {omission['score']:.3f}")
    if omission.get("detail"):
        parts.append(str(omission["detail"]))
    return "  ".join(parts)
