"""`memory skills ingest|list`, `memory rules list|show|override` and `memory validate`."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from memplug.base.config import RULE_CATEGORIES
from memplug.base.errors import UsageError
from memplug.base.refs import event_ref
from memplug.base.text import clip
from memplug.cli.output import CliContext, emit, json_option, table


@click.group("skills")
def skills_group() -> None:
    """Skill files (SKILL.md) ingested as versioned rules."""


@skills_group.command("ingest")
@click.argument("directory", type=click.Path(exists=True))
@json_option
@click.pass_obj
def skills_ingest(ctx: CliContext, directory: str, as_json: bool) -> None:
    """Ingest the SKILL.md files under DIRECTORY (or one SKILL.md file).

    Which files: skills.include / skills.exclude, for a file given directly too. A
    skill file is YAML frontmatter between '---' lines (name, description,
    when_to_use) and a Markdown body whose list items are its rules (docs/skills.md).

    Prints "N new, M unchanged": N versions written (new skills and changed files), M
    files whose content was already the skill's current version. Exit 2 when a file
    could not be ingested; the others are kept either way.
    """
    from memplug.derive.skills import ingest

    with ctx.open(create=True) as memory:
        summary = ingest(memory.store, directory, memory.config.skills)
    if as_json:
        emit(summary.as_dict(), True)
    else:
        line = f"{summary.new} new, {summary.unchanged} unchanged"
        if summary.changed:
            line += f" ({summary.changed} of the new supersede an older version)"
        if summary.removed:
            line += f"; {len(summary.removed)} removed: {', '.join(summary.removed)}"
        click.echo(line)
        for error in summary.errors:
            click.echo(f"  {error['path']}: {error['error']}", err=True)
    if summary.errors:
        sys.exit(2)


def _render_skills(data: dict[str, Any]) -> str:
    if not data["skills"]:
        return "no skills ingested (memory skills ingest DIR)"
    rows = [
        [
            s["name"],
            str(s["version"]),
            "yes" if s["enabled"] else "no",
            str(s["rules"]),
            clip(s["description"] or "", 50),
        ]
        for s in data["skills"]
    ]
    return table(
        rows, ["skill", "version", "enabled", "rules", "description"], fit=("description",)
    )


@skills_group.command("list")
@json_option
@click.pass_obj
def skills_list(ctx: CliContext, as_json: bool) -> None:
    """The ingested skills: current version, enabled, active rules."""
    with ctx.read() as memory:
        skills = [
            {**s.as_dict(), "rules": len(memory.rules(skill=s.name, active=True))}
            for s in memory.skills()
        ]
    emit({"skills": skills}, as_json, _render_skills)


@click.group("rules")
def rules_group() -> None:
    """Rules parsed from skills, with people's overrides applied."""


def _render_rules(data: dict[str, Any]) -> str:
    if not data["rules"]:
        return "no rules"
    rows = [
        [
            f"{r['skill']}:{r['key']}",
            r["category"],
            "yes" if r["active"] else "no",
            f"{r['source_path']}:{r['line']}",
            clip(r["text"], 60),
        ]
        for r in data["rules"]
    ]
    return table(rows, ["rule", "category", "active", "source", "text"], fit=("text",))


@rules_group.command("list")
@click.option("--skill", default=None, help="Only this skill's rules.")
@click.option("--category", type=click.Choice(RULE_CATEGORIES), help="Only this category.")
@click.option(
    "--active/--inactive", "active", default=None, help="Only active (or inactive) rules."
)
@json_option
@click.pass_obj
def rules_list(
    ctx: CliContext, skill: str | None, category: str | None, active: bool | None, as_json: bool
) -> None:
    """The rules in force.

    `--json`: `{rules: [{key, skill, category, text, source_path, line, active}]}`."""
    with ctx.read() as memory:
        rules = memory.rules(skill=skill, category=category, active=active)
    emit({"rules": [r.as_dict() for r in rules]}, as_json, _render_rules)


def _render_rule(data: dict[str, Any]) -> str:
    lines = [
        f"rule      {data['skill']}:{data['key']} ({data['id']})",
        f"category  {data['category']}",
        f"active    {'yes' if data['active'] else 'no'}",
        f"source    {data['source_path']}:{data['line']} (skill version {data['version']})",
        f"scope     {json.dumps(data['scope'], ensure_ascii=False)}",
    ]
    if data["overridden"]:
        lines.append(f"override  {', '.join(data['overridden'])}")
    return "\n".join([*lines, "", data["text"]])


@rules_group.command("show")
@click.argument("ref")
@json_option
@click.pass_obj
def rules_show(ctx: CliContext, ref: str, as_json: bool) -> None:
    """One rule, by id (rule_…) or SKILL:KEY."""
    from memplug.derive.skills import find_rule

    with ctx.read() as memory:
        rule = find_rule(memory.store, ref)
    emit(rule.as_dict(), as_json, _render_rule)


@rules_group.command("override")
@click.argument("ref")
@click.option("--category", type=click.Choice(RULE_CATEGORIES), help="Set the category.")
@click.option("--active/--inactive", "active", default=None, help="Switch the rule on or off.")
@click.option("--scope", default=None, help='Set the scope, a JSON object ({"paths": "src/"}).')
@click.option("--clear", is_flag=True, help="Remove every override of the rule.")
@json_option
@click.pass_obj
def rules_override(
    ctx: CliContext,
    ref: str,
    category: str | None,
    active: bool | None,
    scope: str | None,
    clear: bool,
    as_json: bool,
) -> None:
    """Change a rule's category, active flag or scope.

    Without editing its skill file."""
    from memplug.derive.skills import override_rule

    parsed: dict[str, Any] | None = None
    if scope is not None:
        try:
            parsed = json.loads(scope)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            raise UsageError(f"--scope must be a JSON object, not {scope!r}")
    if clear and (category is not None or active is not None or scope is not None):
        raise UsageError("--clear removes every override; give it alone")
    with ctx.open(create=False) as memory:
        rule = override_rule(
            memory.store, ref, category=category, active=active, scope=parsed, clear=clear
        )
    emit(rule.as_dict(), as_json, _render_rule)


def render_validation(data: dict[str, Any]) -> str:
    head = (
        f"validation {data['id']} of {event_ref(data['session_id'], data['event_seq'])}: "
        f"{'ok' if data['ok'] else str(len(data['violations'])) + ' violation(s)'}, "
        f"{data['checked']} checked, {data['skipped']} skipped"
    )
    if data["blocking"]:
        head += f"; BLOCKING (repair {data['repair_attempt']}/{data['max_repair_attempts']})"
    elif data["exhausted"]:
        head += "; would block, but the repair attempts are spent"
    lines = [head]
    lines += [f"  - [{v['check']}] {v['message']}" for v in data["violations"]]
    lines += [f"  ! [{e['check']}] skipped: {e['error']}" for e in data["errors"]]
    return "\n".join(lines)


@click.command("validate")
@click.option("--session", "session_id", required=True, help="Session to validate.")
@click.option("--seq", type=int, default=None, help="This assistant message (default: latest).")
@json_option
@click.pass_obj
def validate_cmd(ctx: CliContext, session_id: str, seq: int | None, as_json: bool) -> None:
    """Check the session's latest assistant message.

    Runs the configured checks on it and logs the run. Prints
    `{violations: […], blocking, …}`; exit 0 whatever the checks found.
    """
    with ctx.open(create=False) as memory:
        run = memory.validator.run(session_id, seq=seq, trigger="cli")
        data = run.as_dict(memory.config.validation.max_repair_attempts)
    emit(data, as_json, render_validation)
