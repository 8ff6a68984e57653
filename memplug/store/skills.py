"""SQL for skills, their rules, people's overrides of rules, and validation runs.

A skill file's every distinct content is a ``skill_versions`` row; ``skill_files`` holds
the current state. Rules are never deleted: one that left its file turns inactive.
Rules are read with their overrides applied (``rule_overrides`` values that are set win).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from memplug.base.text import canonical_json
from memplug.store.db import Database
from memplug.store.records import RuleRow, SkillRow, SkillWrite, ValidationRecord

_RULE_SELECT = (
    "SELECT r.id, r.skill_name, r.rule_key, r.text, coalesce(o.category, r.category), "
    "coalesce(o.scope_json, r.scope_json), r.source_path, r.source_line, "
    "coalesce(o.active, r.active), r.content_hash, r.version, "
    "o.category IS NOT NULL, o.active IS NOT NULL, o.scope_json IS NOT NULL "
    "FROM rules r LEFT JOIN rule_overrides o ON o.rule_id = r.id"
)
_SKILL_SELECT = (
    "SELECT f.name, f.path, f.source, f.version, f.enabled, f.description, f.when_to_use, "
    "f.invocation, v.content_hash, f.removed_at "
    "FROM skill_files f JOIN skill_versions v ON v.id = f.version_id"
)
_VALIDATION_COLUMNS = (
    "id, session_id, event_seq, target, trigger, created_at, ok, checked, skipped, "
    "deterministic, blocked, repair_attempt, violations_json, errors_json"
)


def _rule(row: Sequence[Any]) -> RuleRow:
    flags = zip(("category", "active", "scope"), row[11:14], strict=True)
    return RuleRow(
        id=str(row[0]),
        skill=str(row[1]),
        key=str(row[2]),
        text=str(row[3]),
        category=str(row[4]),
        scope=json.loads(row[5]),
        source_path=str(row[6]),
        line=int(row[7]),
        active=bool(row[8]),
        content_hash=str(row[9]),
        version=int(row[10]),
        overridden=tuple(name for name, on in flags if on),
    )


def _skill(row: Sequence[Any]) -> SkillRow:
    return SkillRow(
        name=str(row[0]),
        path=str(row[1]),
        source=str(row[2]),
        version=int(row[3]),
        enabled=bool(row[4]),
        description=row[5],
        when_to_use=row[6],
        invocation=row[7],
        content_hash=str(row[8]),
        removed_at=row[9],
    )


def _validation(row: Sequence[Any]) -> ValidationRecord:
    return ValidationRecord(
        id=int(row[0]),
        session_id=str(row[1]),
        event_seq=int(row[2]),
        target=str(row[3]),
        trigger=str(row[4]),
        created_at=str(row[5]),
        ok=bool(row[6]),
        checked=int(row[7]),
        skipped=int(row[8]),
        deterministic=bool(row[9]),
        blocked=bool(row[10]),
        repair_attempt=int(row[11]),
        violations=json.loads(row[12]),
        errors=json.loads(row[13]),
    )


class SkillStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.conn = db.conn

    # -- skills -------------------------------------------------------------------

    def skills(self) -> list[SkillRow]:
        return [_skill(r) for r in self.conn.execute(f"{_SKILL_SELECT} ORDER BY f.name")]

    def skill(self, name: str) -> SkillRow | None:
        row = self.conn.execute(f"{_SKILL_SELECT} WHERE f.name = ?", (name,)).fetchone()
        return _skill(row) if row else None

    def write_skill(self, skill: SkillWrite, rule_ids: Mapping[str, str], now: str) -> int:
        """Store a changed (or new) skill as its next version, its current state, and its
        rules; rules the new version no longer has turn inactive. Returns the version.
        Must run inside a write transaction."""
        current = self.conn.execute(
            "SELECT version_id, version FROM skill_files WHERE name = ?", (skill.name,)
        ).fetchone()
        version = int(current[1]) + 1 if current else 1
        self.conn.execute(
            "INSERT INTO skill_versions (name, source, path, content, content_hash, version, "
            "supersedes, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                skill.name,
                skill.source,
                skill.path,
                skill.content,
                skill.content_hash,
                version,
                current[0] if current else None,
                now,
            ),
        )
        version_id = self.conn.last_insert_rowid()
        self.conn.execute(
            "INSERT INTO skill_files (name, path, source, version_id, version, enabled, "
            "description, when_to_use, invocation, removed_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?) ON CONFLICT (name) DO UPDATE SET "
            "path = excluded.path, source = excluded.source, version_id = excluded.version_id, "
            "version = excluded.version, enabled = excluded.enabled, "
            "description = excluded.description, when_to_use = excluded.when_to_use, "
            "invocation = excluded.invocation, removed_at = NULL, "
            "updated_at = excluded.updated_at",
            (
                skill.name,
                skill.path,
                skill.source,
                version_id,
                version,
                int(skill.enabled),
                skill.description,
                skill.when_to_use,
                skill.invocation,
                now,
            ),
        )
        self.conn.execute("UPDATE rules SET active = 0 WHERE skill_name = ?", (skill.name,))
        self.conn.executemany(
            "INSERT INTO rules (id, skill_name, rule_key, text, category, scope_json, "
            "source_path, source_line, active, content_hash, version) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?) ON CONFLICT (skill_name, rule_key) "
            "DO UPDATE SET text = excluded.text, category = excluded.category, "
            "scope_json = excluded.scope_json, source_path = excluded.source_path, "
            "source_line = excluded.source_line, active = 1, "
            "content_hash = excluded.content_hash, version = excluded.version",
            [
                (
                    rule_ids[r.key],
                    skill.name,
                    r.key,
                    r.text,
                    r.category,
                    canonical_json(dict(r.scope)),
                    skill.path,
                    r.line,
                    r.content_hash,
                    version,
                )
                for r in skill.rules
            ],
        )
        return version

    def present(self, source: str) -> dict[str, str]:
        """``{name: path}`` of the skills ingested from ``source`` whose file was there at
        its last ingest."""
        rows = self.conn.execute(
            "SELECT name, path FROM skill_files WHERE source = ? AND removed_at IS NULL "
            "ORDER BY name",
            (source,),
        )
        return {str(r[0]): str(r[1]) for r in rows}

    def mark_removed(self, names: Sequence[str], now: str) -> None:
        """Their files are gone: the skills stay (with every version), their rules rest."""
        for name in names:
            self.conn.execute(
                "UPDATE skill_files SET removed_at = ?, updated_at = ? WHERE name = ?",
                (now, now, name),
            )
            self.conn.execute("UPDATE rules SET active = 0 WHERE skill_name = ?", (name,))

    # -- rules --------------------------------------------------------------------

    def rules(
        self,
        *,
        skill: str | None = None,
        category: str | None = None,
        active: bool | None = None,
        enabled_only: bool = False,
    ) -> list[RuleRow]:
        """Rules in force, ordered by skill, source line and key."""
        where: list[str] = []
        params: list[Any] = []
        if skill is not None:
            where.append("r.skill_name = ?")
            params.append(skill)
        if category is not None:
            where.append("coalesce(o.category, r.category) = ?")
            params.append(category)
        if active is not None:
            where.append("coalesce(o.active, r.active) = ?")
            params.append(int(active))
        if enabled_only:
            where.append(
                "r.skill_name IN (SELECT name FROM skill_files "
                "WHERE enabled = 1 AND removed_at IS NULL)"
            )
        sql = _RULE_SELECT + (" WHERE " + " AND ".join(where) if where else "")
        sql += " ORDER BY r.skill_name, r.source_line, r.rule_key"
        return [_rule(r) for r in self.conn.execute(sql, params)]

    def rule(self, rule_id: str) -> RuleRow | None:
        row = self.conn.execute(f"{_RULE_SELECT} WHERE r.id = ?", (rule_id,)).fetchone()
        return _rule(row) if row else None

    def rule_by_key(self, skill: str, key: str) -> RuleRow | None:
        row = self.conn.execute(
            f"{_RULE_SELECT} WHERE r.skill_name = ? AND r.rule_key = ?", (skill, key)
        ).fetchone()
        return _rule(row) if row else None

    def set_override(
        self,
        rule_id: str,
        *,
        category: str | None,
        active: bool | None,
        scope: Mapping[str, Any] | None,
        now: str,
    ) -> None:
        """Set the given fields of a rule's override; fields left None keep their value."""
        self.conn.execute(
            "INSERT INTO rule_overrides (rule_id, category, active, scope_json, updated_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (rule_id) DO UPDATE SET "
            "category = coalesce(excluded.category, category), "
            "active = coalesce(excluded.active, active), "
            "scope_json = coalesce(excluded.scope_json, scope_json), "
            "updated_at = excluded.updated_at",
            (
                rule_id,
                category,
                None if active is None else int(active),
                None if scope is None else canonical_json(dict(scope)),
                now,
            ),
        )

    def clear_override(self, rule_id: str) -> None:
        self.conn.execute("DELETE FROM rule_overrides WHERE rule_id = ?", (rule_id,))

    # -- validation runs ----------------------------------------------------------

    def insert_validation(self, record: ValidationRecord) -> int:
        self.conn.execute(
            "INSERT INTO validation_logs (session_id, event_seq, target, trigger, created_at, "
            "ok, checked, skipped, deterministic, blocked, repair_attempt, violations_json, "
            "errors_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.session_id,
                record.event_seq,
                record.target,
                record.trigger,
                record.created_at,
                int(record.ok),
                record.checked,
                record.skipped,
                int(record.deterministic),
                int(record.blocked),
                record.repair_attempt,
                canonical_json([dict(v) for v in record.violations]),
                canonical_json([dict(e) for e in record.errors]),
            ),
        )
        return int(self.conn.last_insert_rowid())

    def latest_validation(self, session_id: str | None = None) -> ValidationRecord | None:
        """The newest run (of a session)."""
        sql = f"SELECT {_VALIDATION_COLUMNS} FROM validation_logs"
        params: tuple[Any, ...] = ()
        if session_id is not None:
            sql += " WHERE session_id = ?"
            params = (session_id,)
        row = self.conn.execute(sql + " ORDER BY id DESC LIMIT 1", params).fetchone()
        return _validation(row) if row else None

    def validated(self, session_id: str, event_seq: int) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM validation_logs WHERE session_id = ? AND event_seq = ? LIMIT 1",
            (session_id, event_seq),
        ).fetchone()
        return row is not None

    def blocked_messages_since_ok(self, session_id: str, before_seq: int) -> int:
        """How many distinct earlier messages of the session were blocked since its last
        run that passed: the repair attempts already spent on the current violation."""
        row = self.conn.execute(
            "SELECT count(DISTINCT event_seq) FROM validation_logs WHERE session_id = ? "
            "AND blocked = 1 AND event_seq < ? AND id > coalesce((SELECT max(id) FROM "
            "validation_logs WHERE session_id = ? AND ok = 1), 0)",
            (session_id, before_seq, session_id),
        ).fetchone()
        return int(row[0]) if row else 0

    def latest_event_seq(self, session_id: str, event_type: str) -> int | None:
        """The seq of the session's latest event of a type that a person or model wrote
        (not generated text)."""
        row = self.conn.execute(
            "SELECT max(seq) FROM events WHERE session_id = ? AND type = ? AND generated = 0",
            (session_id, event_type),
        ).fetchone()
        return int(row[0]) if row and row[0] is not None else None
