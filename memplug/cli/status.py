"""`memory status` and `memory config show`."""

from __future__ import annotations

import json
from typing import Any

import click

from memplug.base.config import load_for_database
from memplug.base.errors import DatabaseMissing
from memplug.cli.output import CliContext, emit, json_option, table, warn_clamped


def _render_status(data: dict[str, Any]) -> str:
    if not data["exists"]:
        return "\n".join(
            [
                f"no memplug database at {data['path']} (nothing captured yet)",
                *_pending_lines(data["hook_pending"]),
            ]
        )
    counts = data["counts"]
    perms = data["permissions"]
    lines = [
        f"database   {data['path']}",
        f"size       {data['size_bytes']:,} bytes",
        f"schema     {data['schema_version']} (code {data['code_schema_version']})",
        f"modes      file {perms['file']}, dir {perms['dir']}"
        + ("" if perms["private"] else "  WARNING: readable by others"),
        f"integrity  {', '.join(data['integrity'] or ['not checked'])}",
        f"budget     {data['budget']['budget_tokens']} tokens",
        f"semantic   {_semantic_line(data['semantic'])}",
        f"derived    {_derivation_line(data['derivation'])}",
        "",
        "counts     " + ", ".join(f"{k} {v:,}" for k, v in counts.items()),
    ]
    if data["sessions"]:
        rows = [
            [
                s["session_id"],
                str(s["events"]),
                str(s["last_event_seq"]),
                "-" if s["last_extract_seq"] is None else str(s["last_extract_seq"]),
                str(s["extraction_lag"]),
                str(s["pending_extractions"]),
                s["project"] or "",
            ]
            for s in data["sessions"][:30]
        ]
        headers = ["session", "events", "last seq", "extracted to", "lag", "retrying", "project"]
        lines += ["", table(rows, headers)]
        if len(data["sessions"]) > 30:
            lines.append(f"… {len(data['sessions']) - 30} more sessions (see --json)")
    lagging = sum(1 for s in data["sessions"] if s["extraction_lag"])
    if lagging:
        lines.append(
            f"extraction lags in {lagging} session(s): the next command that writes "
            "(an import, a hook, memory rebuild) catches up"
        )
    if data["compaction"]["detected"]:
        events = ", ".join(f"{k} {v}" for k, v in data["compaction"]["events"].items())
        lines += ["", f"compaction detected: {events}"]
    if data["latest_assembly"]:
        a = data["latest_assembly"]
        lines += [
            "",
            f"latest assembly #{a['id']} session {a['session_id']}: "
            f"{'injected' if a['injected'] else 'not injected'}, "
            f"{a['used_tokens']}/{a['budget']} tokens",
        ]
    if data.get("latest_validation"):
        from memplug.cli.skills import render_validation

        lines += ["", "latest " + render_validation(data["latest_validation"])]
    if data.get("host_cursors"):
        lines += ["", "host transcripts:"]
        lines += [
            f"  {c['host']} {c['session_id']}: {c['path']} read to byte {c['byte_offset']:,}"
            for c in data["host_cursors"][:10]
        ]
    if data.get("sync"):
        lines += ["", *_sync_lines(data["sync"])]
    if data["latest_errors"]:
        lines += ["", "latest errors:"]
        lines += [f"  {e['at']} [{e['stage']}] {e['message']}" for e in data["latest_errors"]]
    lines += _pending_lines(data["hook_pending"])
    return "\n".join(lines)


def _derivation_line(d: dict[str, Any]) -> str:
    if not d["stale"]:
        return "by this memplug's rules"
    if d["derived_with"] is None:
        made = "an older memplug"
    else:
        made = "other versions of " + ", ".join(d["changed"])
    return f"STALE: made by {made}; {d['next']}"


def _sync_lines(sync: dict[str, Any]) -> list[str]:
    shared = ", ".join(
        p["project"] + (f" ({p['unpushed']:,} to push)" if p["unpushed"] else "")
        for p in sync["projects"]
    )
    return [
        f"sync       {sync['url']} as {sync['origin']}, last {sync['last_sync_at'] or 'never'}",
        f"shared     {shared or 'no project (memory share --project P)'}",
        f"           {sync['pulled_sessions']:,} sessions pulled, {sync['conflicts']:,} conflicts "
        f"kept apart, {sync['tombstones_to_send']:,} purges to send",
    ]


def _pending_lines(pending: dict[str, Any]) -> list[str]:
    if not pending["count"]:
        return []
    return [
        "",
        f"hook errors not yet in error_log: {pending['count']} "
        "(the database could not take them), latest:",
        *(f"  {message}" for message in pending["latest"]),
    ]


def _semantic_line(sem: dict[str, Any]) -> str:
    if sem["state"] == "off":
        return "off"
    if "vectors" not in sem:
        return f"{sem['provider']}: UNAVAILABLE — {sem['reason']}"
    v = sem["vectors"]
    line = (
        f"{sem['provider']} ({sem['model']}, {sem['version']}): "
        f"{v['current']:,} of {v['embeddable']:,} events embedded"
    )
    if v["missing"]:
        line += f", lag {v['missing']:,} ({v['stale']:,} stale) — memory rebuild --vectors"
    return line


@click.command("status")
@json_option
@click.pass_obj
def status_cmd(ctx: CliContext, as_json: bool) -> None:
    """Show the database's health, counts, sessions and errors.

    Per session: events, the last sequence number, how far extraction has read and
    what it still has to read (the lag)."""
    from memplug.reports.diagnostics import missing_status, status

    path = ctx.resolved_path()
    if not path.exists():
        missing = missing_status(path)
        if ctx.db_path and not missing["hook_pending"]["count"]:
            # A path someone named (--db, MEMPLUG_DB) that holds nothing, not even the
            # errors of hooks that ran against it, is a mistake to say; the default
            # place is only a fresh install's.
            raise DatabaseMissing(f"no memplug database at {path}")
        emit(missing, as_json, _render_status)
        return
    # Status only reports: stale derived memory is left for the next command.
    with ctx.read(upgrade=False) as memory:
        emit(status(memory), as_json, _render_status)


@click.group("config")
def config_group() -> None:
    """Inspect the effective configuration."""


@config_group.command("show")
@json_option
@click.pass_obj
def config_show(ctx: CliContext, as_json: bool) -> None:
    """Print every effective value and where it came from.

    The source is default, file or env."""
    loaded = load_for_database(ctx.resolved_path(), ctx.config_path)
    values = loaded.config.to_dict()
    flat = {
        f"{section}.{key}": value
        for section, entries in values.items()
        for key, value in entries.items()
    }
    values = {k: {"value": flat[k], "source": loaded.sources[k]} for k in sorted(flat)}
    for key, given in loaded.clamped.items():
        values[key]["clamped_from"] = given
    data = {"file": loaded.file, "values": values}

    def render(d: dict[str, Any]) -> str:
        rows = [
            [
                k,
                # As the config file spells it: TOML takes JSON's strings, numbers,
                # booleans and arrays as they are (not Python's reprs).
                json.dumps(v["value"], ensure_ascii=False)
                + (f" (clamped from {v['clamped_from']})" if "clamped_from" in v else ""),
                v["source"],
            ]
            for k, v in d["values"].items()
        ]
        return table(rows, ["key", "value", "source"], fit=("value",))

    warn_clamped(loaded)

    emit(data, as_json, render)
