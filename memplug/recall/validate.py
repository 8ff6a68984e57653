"""Deterministic checks of committed assistant messages (tool preconditions are
:mod:`memplug.base.preconditions`).

Checks are configured in ``validation.checks`` (docs/validation.md). Each reads the
message through a *scope*; every character belongs to exactly one, taken in this
order: ``quote`` (code, block quotes, quoted strings), else ``path`` (file paths and
URLs), else ``explanation`` (parenthesised text and ``Note:``-style lines), else
``body``. Scopes keep character positions, so a window around a number means the same
in each.

A run is persisted in ``validation_logs``. A violation *blocks* only when its check is
deterministic, configured to block (``block``, else ``validation.blockOnViolation``)
and repair attempts remain (``validation.maxRepairAttempts`` distinct blocked messages
since the session's last clean run); the next assembly then carries a bounded repair
reminder. A ``script`` check is a user module: not deterministic unless it says so, so
its findings never block by default. Unknown check types and broken check
configurations are reported in the run's errors and skipped.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pydantic
from msgspec import Struct
from msgspec.structs import replace
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from memplug.base.clock import utc_now
from memplug.base.config import Config
from memplug.base.errors import NotFound
from memplug.base.models import describe_validation_error
from memplug.base.patterns import LazyPattern
from memplug.recall.query import _PATH, _QUOTED, _URLISH
from memplug.store.ports import Storage
from memplug.store.records import EventRow, ValidationRecord

SCOPES: tuple[str, ...] = ("body", "quote", "path", "explanation")
TARGET = "assistant/message"
# At most this many findings per check and term: a message that repeats a forbidden
# word a thousand times needs one line, not a thousand.
MAX_FINDINGS = 20

_FENCED = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?(?:^[ \t]*\1[^\n]*$|\Z)", re.M | re.S)
_BLOCKQUOTE = re.compile(r"^[ \t]*>[^\n]*$", re.M)
_INLINE_CODE = re.compile(r"`[^`\n]+`")
_PAREN = re.compile(r"\([^()\n]{1,400}\)|（[^（）\n]{1,400}）")
_EXPLAIN_LINE = re.compile(
    r"^[ \t]*(?:note|explanation|why|because|注|说明)[ \t]*[:：][^\n]*$", re.M | re.I
)
# Precedence, highest first: a character is labelled by the first pattern that covers it.
_LABELS: tuple[tuple[str, tuple[re.Pattern[str] | LazyPattern, ...]], ...] = (
    ("quote", (_FENCED, _BLOCKQUOTE, _INLINE_CODE, _QUOTED)),
    ("path", (_URLISH, _PATH)),
    ("explanation", (_EXPLAIN_LINE, _PAREN)),
)


def scoped_texts(text: str) -> dict[str, str]:
    """The message once per scope, other scopes' characters blanked (newlines kept)."""
    labels = ["body"] * len(text)
    for label, patterns in _LABELS:
        for rx in patterns:
            for match in rx.finditer(text):
                for i in range(match.start(), match.end()):
                    if labels[i] == "body":
                        labels[i] = label
    out = {}
    for scope in SCOPES:
        out[scope] = "".join(
            c if labels[i] == scope or c == "\n" else " " for i, c in enumerate(text)
        )
    return out


# -- check configurations -----------------------------------------------------------------


class _Check(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)
    type: str
    name: str | None = None
    block: bool | None = None
    scope: str | list[str] | None = None
    case_sensitive: bool = False

    def scopes(self, default: Sequence[str]) -> tuple[str, ...]:
        value = self.scope if self.scope is not None else list(default)
        wanted = [value] if isinstance(value, str) else list(value)
        if "all" in wanted:
            return SCOPES
        unknown = [s for s in wanted if s not in SCOPES]
        if unknown:
            raise ValueError(f"unknown scope {unknown[0]!r} (expected all or {', '.join(SCOPES)})")
        return tuple(s for s in SCOPES if s in wanted)

    @property
    def deterministic(self) -> bool:
        return True


class RequiredTerms(_Check):
    terms: list[str] = Field(min_length=1)
    min_count: int = Field(default=1, ge=1)


class ForbiddenTerms(_Check):
    terms: list[str] = Field(min_length=1)


class NumberRule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: str = Field(min_length=1)
    conditions: list[str] = Field(default_factory=list)


class NumbersWithConditions(_Check):
    numbers: list[NumberRule] = Field(default_factory=list)
    forbidden_numbers: list[str] = Field(default_factory=list)
    window: int = Field(default=80, ge=1, le=2_000)


class ScriptCheck(_Check):
    module: str
    function: str = "check"
    declared_deterministic: bool = Field(default=False, alias="deterministic")

    @property
    def deterministic(self) -> bool:
        return self.declared_deterministic


CHECK_TYPES: dict[str, type[_Check]] = {
    "required_terms": RequiredTerms,
    "forbidden_terms": ForbiddenTerms,
    "numbers_with_conditions": NumbersWithConditions,
    "script": ScriptCheck,
}


# -- matching -----------------------------------------------------------------------------


def term_pattern(
    term: str, *, case_sensitive: bool = False, flexible_space: bool = False
) -> re.Pattern[str]:
    """``term`` verbatim; an ASCII letter or digit at either end must not continue a word
    (``ok`` is not in ``token``), CJK needs no boundary."""
    parts = term.split() if flexible_space else [term]
    body = r"\s*".join(re.escape(p) for p in parts) if flexible_space else re.escape(term)
    if term[:1].isascii() and term[:1].isalnum():
        body = r"(?<![A-Za-z0-9_.])" + body if flexible_space else r"(?<![A-Za-z0-9_])" + body
    if term[-1:].isascii() and term[-1:].isalnum():
        body += r"(?![A-Za-z0-9_])"
    return re.compile(body, 0 if case_sensitive else re.IGNORECASE)


def _finding(check: _Check, name: str, message: str, **detail: Any) -> dict[str, Any]:
    return {
        "check": name,
        "type": check.type,
        "message": message,
        **{k: v for k, v in detail.items() if v is not None},
    }


def _required(check: RequiredTerms, name: str, scoped: Mapping[str, str]) -> list[dict[str, Any]]:
    scopes = check.scopes(SCOPES)
    found = []
    for term in check.terms:
        rx = term_pattern(term, case_sensitive=check.case_sensitive)
        count = sum(len(rx.findall(scoped[s])) for s in scopes)
        if count < check.min_count:
            found.append(
                _finding(
                    check,
                    name,
                    f"required term {term!r} found {count} time(s), needs {check.min_count}",
                    term=term,
                    count=count,
                    scope=list(scopes),
                )
            )
    return found


def _forbidden(check: ForbiddenTerms, name: str, scoped: Mapping[str, str]) -> list[dict[str, Any]]:
    found = []
    for term in check.terms:
        rx = term_pattern(term, case_sensitive=check.case_sensitive)
        for scope in check.scopes(["body"]):
            hits = list(rx.finditer(scoped[scope]))
            if hits:
                found.append(
                    _finding(
                        check,
                        name,
                        f"forbidden term {term!r} in {scope} ({len(hits)} time(s))",
                        term=term,
                        scope=scope,
                        count=len(hits),
                        at=hits[0].start(),
                    )
                )
    return found


def _numbers(
    check: NumbersWithConditions, name: str, scoped: Mapping[str, str]
) -> list[dict[str, Any]]:
    found = []
    for scope in check.scopes(SCOPES):
        text = scoped[scope]
        for rule in check.numbers:
            rx = term_pattern(rule.value, case_sensitive=check.case_sensitive, flexible_space=True)
            for match in list(rx.finditer(text))[:MAX_FINDINGS]:
                around = text[max(0, match.start() - check.window) : match.end() + check.window]
                missing = [
                    c
                    for c in rule.conditions
                    if not term_pattern(c, case_sensitive=check.case_sensitive).search(around)
                ]
                if missing:
                    found.append(
                        _finding(
                            check,
                            name,
                            f"number {match.group(0)!r} without its condition(s) "
                            f"{', '.join(map(repr, missing))} within {check.window} characters",
                            number=rule.value,
                            missing=missing,
                            scope=scope,
                            at=match.start(),
                        )
                    )
        for value in check.forbidden_numbers:
            rx = term_pattern(value, case_sensitive=check.case_sensitive, flexible_space=True)
            hit = rx.search(text)
            if hit:
                found.append(
                    _finding(
                        check,
                        name,
                        f"forbidden number {hit.group(0)!r} in {scope}",
                        number=value,
                        scope=scope,
                        at=hit.start(),
                    )
                )
    return found


def _script(
    check: ScriptCheck, name: str, scoped: Mapping[str, str], context: Mapping[str, Any]
) -> list[dict[str, Any]]:
    function = load_script(check.module, check.function, context.get("base_dir"))
    result = function(context["text"], {**context, "scopes": dict(scoped)})
    found = []
    for item in list(result or ())[:MAX_FINDINGS]:
        if isinstance(item, Mapping):
            message = str(item.get("message") or item)
            extra = {k: v for k, v in item.items() if k != "message" and isinstance(k, str)}
        else:
            message, extra = str(item), {}
        found.append({**extra, **_finding(check, name, message)})
    return found


def load_script(module: str, function: str, base_dir: str | None) -> Callable[..., Any]:
    """A check function from a ``.py`` file (relative to ``base_dir``) or a module name."""
    if module.endswith(".py") or "/" in module or os.sep in module:
        path = Path(module)
        if not path.is_absolute() and base_dir:
            path = Path(base_dir) / path
        spec = importlib.util.spec_from_file_location(f"memplug_check_{path.stem}", path)
        if spec is None or spec.loader is None or not path.is_file():
            raise FileNotFoundError(f"no check script at {path}")
        loaded = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(loaded)
    else:
        loaded = importlib.import_module(module)
    found = getattr(loaded, function, None)
    if not callable(found):
        raise AttributeError(f"{module} has no function {function!r}")
    return found


# -- a run ----------------------------------------------------------------------------------


class CheckOutcome(Struct, frozen=True):
    violations: list[dict[str, Any]]
    errors: list[dict[str, Any]]
    checked: int
    skipped: int
    deterministic: bool


def run_checks(
    text: str, checks: Sequence[Mapping[str, Any]], config: Config, context: Mapping[str, Any]
) -> CheckOutcome:
    """Every configured check over ``text``; findings carry whether they may block."""
    scoped = scoped_texts(text)
    violations: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    checked = skipped = 0
    deterministic = True
    for index, raw in enumerate(checks):
        kind = str(raw.get("type", ""))
        name = str(raw.get("name") or f"{kind or 'check'}#{index + 1}")
        model = CHECK_TYPES.get(kind)
        if model is None:
            errors.append({"check": name, "type": kind, "error": f"unknown check type {kind!r}"})
            skipped += 1
            continue
        try:
            check = model.model_validate(dict(raw))
            found = _run_one(check, name, scoped, {**context, "text": text})
        except pydantic.ValidationError as error:
            errors.append({"check": name, "type": kind, "error": describe_validation_error(error)})
            skipped += 1
            continue
        except Exception as error:  # a user script may raise anything; it is reported
            errors.append(
                {"check": name, "type": kind, "error": f"{type(error).__name__}: {error}"}
            )
            skipped += 1
            continue
        checked += 1
        deterministic = deterministic and check.deterministic
        blocks = check.block if check.block is not None else config.validation.block_on_violation
        for finding in found:
            finding["deterministic"] = check.deterministic
            finding["block"] = bool(blocks and check.deterministic)
        violations.extend(found)
    return CheckOutcome(violations, errors, checked, skipped, deterministic)


def _run_one(
    check: _Check, name: str, scoped: Mapping[str, str], context: Mapping[str, Any]
) -> list[dict[str, Any]]:
    if isinstance(check, RequiredTerms):
        return _required(check, name, scoped)
    if isinstance(check, ForbiddenTerms):
        return _forbidden(check, name, scoped)
    if isinstance(check, NumbersWithConditions):
        return _numbers(check, name, scoped)
    if isinstance(check, ScriptCheck):
        return _script(check, name, scoped, context)
    raise TypeError(f"no runner for {type(check).__name__}")  # CHECK_TYPES and this agree


class Validator:
    """Runs the configured checks on a session's assistant messages and logs each run."""

    def __init__(self, store: Storage, config: Config, base_dir: str | None = None) -> None:
        self.store = store
        self.config = config
        self.base_dir = base_dir

    def run(
        self, session_id: str, *, seq: int | None = None, trigger: str = "api"
    ) -> ValidationRecord:
        """Check the session's latest assistant message (or the one at ``seq``)."""
        event = self._message(session_id, seq)
        text = self.store.events.full_text(event)
        context = {"session_id": session_id, "seq": event.seq, "base_dir": self.base_dir}
        outcome = run_checks(text, self.config.validation.checks, self.config, context)
        cfg = self.config.validation
        blocking = any(v["block"] for v in outcome.violations)
        attempt = 0
        if blocking:
            spent = self.store.skills.blocked_messages_since_ok(session_id, event.seq)
            attempt = spent + 1 if spent < cfg.max_repair_attempts else 0
        record = ValidationRecord(
            session_id=session_id,
            event_seq=event.seq,
            target=TARGET,
            trigger=trigger,
            created_at=utc_now(),
            ok=not outcome.violations,
            checked=outcome.checked,
            skipped=outcome.skipped,
            deterministic=outcome.deterministic,
            blocked=attempt > 0,
            repair_attempt=attempt,
            violations=outcome.violations,
            errors=outcome.errors,
        )
        with self.store.write_transaction():
            record_id = self.store.skills.insert_validation(record)
        return replace(record, id=record_id)

    def run_latest_once(self, session_id: str, *, trigger: str) -> ValidationRecord | None:
        """Check the latest assistant message unless a run already checked it."""
        seq = self.store.skills.latest_event_seq(session_id, TARGET)
        if seq is None or self.store.skills.validated(session_id, seq):
            return None
        return self.run(session_id, seq=seq, trigger=trigger)

    def _message(self, session_id: str, seq: int | None) -> EventRow:
        if seq is None:
            seq = self.store.skills.latest_event_seq(session_id, TARGET)
        event = self.store.events.get(session_id, seq) if seq is not None else None
        if event is None or event.type != TARGET:
            where = f" at seq {seq}" if seq is not None else ""
            raise NotFound(f"session {session_id!r} has no assistant message{where} to validate")
        return event
