"""Skills: ``SKILL.md`` files ingested as versioned rules, and people's overrides.

A skill file is YAML frontmatter (``name``, ``description``, ``when_to_use``,
``invocation``, ``enabled``) and a Markdown body. Every list item of the body outside
code fences is one rule. Its category comes from explicit structure only — the
nearest heading that names a category keyword, else the list marker (numbered: a
workflow step; bulleted: reference) — never from what the sentence seems to say
(docs/skills.md has the table). Its key is the ``[key]`` written at its start, else
the slug of its heading and its ordinal under it.

Ingestion is idempotent: a file whose content hash is the skill's current one changes
nothing. What a step gets from the rules is :mod:`memplug.recall.skill_rules`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from memplug.base.clock import utc_now
from memplug.base.config import RULE_CATEGORIES, SkillsConfig
from memplug.base.errors import NotFound, UsageError, ValidationError
from memplug.base.text import glob_regex, normalize_text, sha256_hex, short_hash
from memplug.store.ports import Storage
from memplug.store.records import ParsedRule, RuleRow, SkillWrite

# Heading keywords per category, checked in this order (the first category with a
# keyword in the heading wins); matched as whole words, case-insensitively.
HEADING_KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("current_state", ("current state", "state", "status", "environment", "当前状态", "现状")),
    ("workflow", ("workflow", "steps", "procedure", "process", "checklist", "流程", "步骤")),
    (
        "constraint",
        ("constraints", "rules", "must", "never", "requirements", "guardrails", "约束", "禁止"),
    ),
    ("style", ("style", "conventions", "formatting", "tone", "naming", "风格", "规范")),
    ("reference", ("reference", "references", "notes", "see also", "resources", "参考", "备注")),
)
_HEADING_RX: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (category, re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, words)) + r")(?!\w)", re.I))
    for category, words in HEADING_KEYWORDS
)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^(\s*)([-*+]|\d{1,3}[.)])\s+(.*)$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_CHECKBOX = re.compile(r"^\[[ xX]\]\s+")
_KEY = re.compile(r"^\[([A-Za-z0-9][A-Za-z0-9_.-]{0,63})\]\s+")
_SLUG = re.compile(r"[^\w]+")


# -- parsing --------------------------------------------------------------------------


class ParsedSkill(Struct, frozen=True):
    name: str
    enabled: bool
    description: str | None
    when_to_use: str | None
    invocation: str | None
    rules: tuple[ParsedRule, ...]


def parse_skill(text: str, default_name: str) -> ParsedSkill:
    """Frontmatter and rules of one skill file; a malformed frontmatter is an error."""
    meta, body, first_line = split_frontmatter(text)
    name = _meta_text(meta, "name") or default_name
    enabled = meta.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ValidationError(f"frontmatter 'enabled' must be true or false, not {enabled!r}")
    return ParsedSkill(
        name=name,
        enabled=enabled,
        description=_meta_text(meta, "description"),
        when_to_use=_meta_text(meta, "when_to_use") or _meta_text(meta, "when-to-use"),
        invocation=_meta_text(meta, "invocation"),
        rules=tuple(parse_rules(body, first_line)),
    )


def split_frontmatter(text: str) -> tuple[dict[str, Any], list[str], int]:
    """``(frontmatter, body lines, file line number of the first body line)``."""
    lines = text.removeprefix("\ufeff").split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, lines, 1
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            break
    else:
        raise ValidationError("the frontmatter opened by '---' is never closed")
    import yaml  # only ingestion needs it

    try:
        meta = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        line = f" at line {where.line + 2}" if where is not None else ""
        raise ValidationError(f"the frontmatter is not valid YAML{line}") from None
    if not isinstance(meta, dict):
        raise ValidationError("the frontmatter must be a mapping of keys to values")
    return meta, lines[end + 1 :], end + 2


def _meta_text(meta: Mapping[str, Any], key: str) -> str | None:
    value = meta.get(key)
    if value is None:
        return None
    flat = " ".join(str(value).split())
    return flat or None


class _RuleDraft(Struct):
    key: str | None
    text: str
    category: str
    section: str
    slug: str
    line: int


def parse_rules(lines: Sequence[str], first_line: int = 1) -> list[ParsedRule]:
    """One rule per list item (continuation lines joined), code fences skipped."""
    found: list[_RuleDraft] = []
    headings: list[tuple[int, str]] = []
    fenced = False
    current: _RuleDraft | None = None
    for offset, raw in enumerate(lines):
        if _FENCE.match(raw):
            fenced, current = not fenced, None
            continue
        if fenced:
            continue
        heading = _HEADING.match(raw)
        if heading:
            level = len(heading.group(1))
            headings = [h for h in headings if h[0] < level] + [(level, heading.group(2))]
            current = None
            continue
        item = _ITEM.match(raw)
        if item:
            current = _new_rule(item, headings, first_line + offset)
            if current is not None:
                found.append(current)
            continue
        if current is not None and raw.strip() and raw[:1].isspace():
            current.text += " " + raw.strip()
        else:
            current = None
    return _keyed(found)


def _new_rule(item: re.Match[str], headings: list[tuple[int, str]], line: int) -> _RuleDraft | None:
    marker, text = item.group(2), item.group(3).strip()
    text = _CHECKBOX.sub("", text)
    key_match = _KEY.match(text)
    key = key_match.group(1) if key_match else None
    if key_match:
        text = text[key_match.end() :]
    if not text.strip():
        return None
    category = heading_category([h for _, h in headings])
    if category is None:
        category = "workflow" if marker[0].isdigit() else "reference"
    section = " > ".join(h for _, h in headings)
    slug = _SLUG.sub("-", (headings[-1][1] if headings else "rule").lower()).strip("-")[:40]
    return _RuleDraft(key, text, category, section, slug or "rule", line)


def heading_category(headings: Sequence[str]) -> str | None:
    """The category named by the nearest heading that names one (deepest first)."""
    for heading in reversed(headings):
        for category, rx in _HEADING_RX:
            if rx.search(heading):
                return category
    return None


def _keyed(rules: list[_RuleDraft]) -> list[ParsedRule]:
    """Explicit keys as written (a repeat gets a suffix); the rest ``<heading>-<n>``."""
    used: set[str] = set()
    ordinals: dict[str, int] = {}
    out: list[ParsedRule] = []
    for rule in rules:
        if rule.key is not None:
            key = rule.key
        else:
            ordinals[rule.slug] = ordinals.get(rule.slug, 0) + 1
            key = f"{rule.slug}-{ordinals[rule.slug]}"
        base, n = key, 1
        while key in used:
            n += 1
            key = f"{base}-{n}"
        used.add(key)
        text = " ".join(rule.text.split())
        scope = {"section": rule.section} if rule.section else {}
        out.append(
            ParsedRule(
                key=key,
                text=text,
                category=rule.category,
                scope=scope,
                line=rule.line,
                content_hash=sha256_hex(f"{rule.category}\x1f{text}"),
            )
        )
    return out


def rule_id(skill: str, key: str) -> str:
    return f"rule_{short_hash(skill, key)}"


# -- finding files ----------------------------------------------------------------------


def find_skill_files(root: Path, config: SkillsConfig) -> list[Path]:
    """Files under ``root`` (or ``root`` itself) that an include glob names and no
    exclude glob does, in path order. A file given as ``root`` is held to the same
    globs (by its name): a README's bullets are not a skill's rules."""
    include = [glob_regex(p) for p in config.include]
    exclude = [glob_regex(p) for p in config.exclude]
    if root.is_file():
        if any(rx.match(root.name) for rx in include) and not any(
            rx.match(root.name) for rx in exclude
        ):
            return [root]
        raise UsageError(
            f"{root} is not a skill file: a skill is a file named as skills.include says "
            f"({', '.join(config.include)}) with optional YAML frontmatter between '---' lines "
            "(name, description, when_to_use) and a Markdown body whose list items are its "
            "rules; give one, or a directory holding them"
        )
    if not root.is_dir():
        raise UsageError(f"{root} is neither a directory nor a file")
    found = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            if any(rx.match(rel) for rx in include) and not any(rx.match(rel) for rx in exclude):
                found.append(path)
    return sorted(found)


# -- ingestion --------------------------------------------------------------------------


class IngestSummary(Struct):
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    skills: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "new": self.new,
            "changed": self.changed,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "skills": self.skills,
            "errors": self.errors,
        }


def ingest(store: Storage, root: str | os.PathLike[str], config: SkillsConfig) -> IngestSummary:
    """Ingest every skill file under ``root``; unchanged files change nothing.

    ``new`` counts versions written (a first version or a changed file; ``changed`` is
    the share of them that superseded an older one). A file that cannot be read or
    parsed, or names a skill another file of this run already named, is reported in
    ``errors`` and skipped; the others are still ingested. A skill last ingested from
    ``root`` whose file is gone is marked removed (``removed``): its rules rest until
    the file comes back, as a new version.
    """
    base = Path(root)
    summary = IngestSummary()
    seen: dict[str, str] = {}
    broken: set[str] = set()  # a file that failed to parse is not a removed one
    for path in find_skill_files(base, config):
        shown = path.as_posix()
        try:
            content = normalize_text(path.read_text(encoding="utf-8"))
            parsed = parse_skill(content, default_name=path.parent.name or path.stem)
        except (OSError, UnicodeDecodeError, ValidationError) as error:
            summary.errors.append({"path": shown, "error": _one_line(error)})
            broken.add(shown)
            continue
        if parsed.name in seen:
            error_text = f"skill {parsed.name!r} is also defined by {seen[parsed.name]}"
            summary.errors.append({"path": shown, "error": error_text})
            continue
        seen[parsed.name] = shown
        summary.skills.append(_ingest_one(store, parsed, shown, str(base), content, summary))
    _mark_removed(store, str(base), seen, broken, summary)
    return summary


def _mark_removed(
    store: Storage, source: str, seen: Mapping[str, str], broken: set[str], summary: IngestSummary
) -> None:
    present = store.skills.present(source)
    gone = [name for name, path in present.items() if name not in seen and path not in broken]
    if gone:
        with store.write_transaction():
            store.skills.mark_removed(gone, utc_now())
        summary.removed = gone


def _ingest_one(
    store: Storage,
    parsed: ParsedSkill,
    path: str,
    source: str,
    content: str,
    summary: IngestSummary,
) -> dict[str, Any]:
    content_hash = sha256_hex(content)
    current = store.skills.skill(parsed.name)
    out = {"name": parsed.name, "path": path, "rules": len(parsed.rules)}
    if (
        current is not None
        and current.removed_at is None
        and current.content_hash == content_hash
        and current.path == path
    ):
        summary.unchanged += 1
        return {**out, "version": current.version, "status": "unchanged"}
    write = SkillWrite(
        name=parsed.name,
        source=source,
        path=path,
        content=content,
        content_hash=content_hash,
        enabled=parsed.enabled,
        description=parsed.description,
        when_to_use=parsed.when_to_use,
        invocation=parsed.invocation,
        rules=list(parsed.rules),
    )
    ids = {r.key: rule_id(parsed.name, r.key) for r in parsed.rules}
    with store.write_transaction():
        version = store.skills.write_skill(write, ids, utc_now())
    summary.new += 1
    summary.changed += current is not None
    return {**out, "version": version, "status": "changed" if current else "new"}


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def override_rule(
    store: Storage,
    ref: str,
    *,
    category: str | None = None,
    active: bool | None = None,
    scope: Mapping[str, Any] | None = None,
    clear: bool = False,
) -> RuleRow:
    """Change a rule's category, active flag or scope without editing its file."""
    rule = find_rule(store, ref)
    if category is not None and category not in RULE_CATEGORIES:
        raise UsageError(
            f"unknown category {category!r} (expected one of: {', '.join(RULE_CATEGORIES)})"
        )
    if not clear and category is None and active is None and scope is None:
        raise UsageError("nothing to override: give --category, --active/--inactive or --scope")
    with store.write_transaction():
        if clear:
            store.skills.clear_override(rule.id)
        else:
            store.skills.set_override(
                rule.id, category=category, active=active, scope=scope, now=utc_now()
            )
    found = store.skills.rule(rule.id)
    assert found is not None
    return found


def find_rule(store: Storage, ref: str) -> RuleRow:
    """A rule by id (``rule_…``) or by ``SKILL:KEY``."""
    if ref.startswith("rule_"):
        rule = store.skills.rule(ref)
    elif ":" in ref:
        skill, _, key = ref.rpartition(":")
        rule = store.skills.rule_by_key(skill, key)
    else:
        raise UsageError(f"{ref!r} is not a rule id (rule_…) or SKILL:KEY")
    if rule is None:
        raise NotFound(f"no rule {ref!r}")
    return rule
