"""What a step gets from the skills: the resident core and the task-relevant rules.

Kept apart from ingestion (:mod:`memplug.derive.skills`), whose parsing rules a hook that
only assembles should not pay to compile; assembly imports this module only when an
enabled skill exists.

The core is a line per enabled skill (description, when to use) and its first
workflow steps. Every other active rule of an enabled skill is scored by the query
signals retrieval uses (:func:`memplug.recall.query.parse_query`), found in a rule's text by
retrieval's own matcher (:mod:`memplug.recall.retrieve.lexical`); see :func:`rank_rules`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from msgspec import Struct

from memplug.base.config import Config, SkillsConfig
from memplug.base.terms import QuerySignals
from memplug.recall.query import parse_query
from memplug.recall.retrieve.lexical import TermCounter, pin_patterns
from memplug.store.ports import Storage
from memplug.store.records import RuleRow, SkillRow


def rule_ref(rule: RuleRow) -> str:
    """How assembly logs name a rule: ``rule:SKILL:KEY`` (its label is ``[rule SKILL:KEY]``)."""
    return f"rule:{rule.skill}:{rule.key}"


class CoreLine(Struct, frozen=True):
    """A line of the resident skill core: a skill's description or a workflow step."""

    ref: str
    skill: str
    text: str
    kind: str  # "skill" or "workflow"
    when_to_use: str | None = None


class RuleHit(Struct, frozen=True):
    """A task-relevant rule, ranked."""

    rule: RuleRow
    score: float
    why: str
    pinned: bool = False

    @property
    def ref(self) -> str:
        return rule_ref(self.rule)


class SkillOmission(Struct, frozen=True):
    ref: str
    section: str
    reason: str
    score: float | None = None
    detail: str | None = None


class SkillContext(Struct, frozen=True):
    core: tuple[CoreLine, ...] = ()
    rules: tuple[RuleHit, ...] = ()
    omitted: tuple[SkillOmission, ...] = ()


def skill_context(
    store: Storage, skills: Sequence[SkillRow], config: Config, task_text: str
) -> SkillContext:
    """The resident core of the enabled ``skills`` and the rules relevant to ``task_text``."""
    rules = store.skills.rules(active=True, enabled_only=True)
    cfg = config.skills
    core, omitted = resident_core(skills, rules, cfg.core_max_lines)
    in_core = {line.ref for line in core}
    others = [r for r in rules if rule_ref(r) not in in_core]
    hits, more = rank_rules(others, parse_query(task_text), cfg)
    return SkillContext(core=tuple(core), rules=tuple(hits), omitted=tuple(omitted + more))


def resident_core(
    skills: Sequence[SkillRow], rules: Sequence[RuleRow], max_lines: int
) -> tuple[list[CoreLine], list[SkillOmission]]:
    """Per enabled skill, in name order: its description, then its first workflow steps."""
    lines: list[CoreLine] = []
    omitted: list[SkillOmission] = []
    steps_of: dict[str, list[RuleRow]] = {}
    for rule in rules:
        if rule.category == "workflow":
            steps_of.setdefault(rule.skill, []).append(rule)
    for skill in skills:
        lines.append(
            CoreLine(
                f"skill:{skill.name}",
                skill.name,
                skill.description or "",
                "skill",
                skill.when_to_use,
            )
        )
        for index, rule in enumerate(steps_of.get(skill.name, ())):
            ref = rule_ref(rule)
            if index >= max_lines:
                omitted.append(
                    SkillOmission(ref, "rules-core", "over limit", None, "skills.coreMaxLines")
                )
                continue
            lines.append(CoreLine(ref, skill.name, rule.text, "workflow"))
    return lines, omitted


def rank_rules(
    rules: Sequence[RuleRow], signals: QuerySignals, config: SkillsConfig
) -> tuple[list[RuleHit], list[SkillOmission]]:
    """Rules scored by the query's signals, matched as retrieval matches them (word
    stems at word starts, symbols and CJK anywhere): the idf-weighted share of the
    query's term groups a rule holds, times its category weight. A rule holding a
    numeric symbol of the query (retrieval's pins) ranks above every rule that does
    not. Ties break by reference."""
    if not rules or not signals.groups:
        return [], []
    counter, pins = TermCounter(signals), pin_patterns(signals)
    # Rule text is stored normalised (ingestion), so lower-casing is all matching needs.
    texts = [r.text.lower() for r in rules]
    matched = [_group_hits(counter, text) for text in texts]
    n = len(rules)
    df = [0] * len(counter.groups)
    for found in matched:
        for g, term in enumerate(found):
            if term is not None:
                df[g] += 1
    idf = [math.log(1 + (n - d + 0.5) / (d + 0.5)) for d in df]
    total = sum(idf) or 1.0
    scored = []
    for rule, text, found in zip(rules, texts, matched, strict=True):
        share = sum(idf[g] for g, hit in enumerate(found) if hit is not None) / total
        weight = config.category_weights.get(rule.category, 1.0)
        pinned = any(rx.search(text) for _, rx in pins)
        why = ", ".join(hit for hit in found if hit is not None)
        scored.append(RuleHit(rule, round(share * weight, 6), why, pinned))
    scored.sort(key=lambda h: (not h.pinned, -h.score, h.ref))
    hits: list[RuleHit] = []
    omitted: list[SkillOmission] = []
    for hit in scored:
        if not hit.why:
            continue  # shares nothing with the task: not a candidate at all
        if hit.score < config.min_rule_score and not hit.pinned:
            omitted.append(SkillOmission(hit.ref, "rules", "below min score", hit.score))
        elif len(hits) >= config.rules_limit:
            omitted.append(
                SkillOmission(hit.ref, "rules", "over limit", hit.score, "skills.rulesLimit")
            )
        else:
            hits.append(hit)
    return hits, omitted


def _group_hits(counter: TermCounter, text: str) -> list[str | None]:
    """Per query group, the first of its terms found in ``text`` (None when none is)."""
    counts, _ = counter.counts(text)
    return [next((t.text for t in group if counts.get(t.text)), None) for group in counter.groups]
