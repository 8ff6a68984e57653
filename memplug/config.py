"""Configuration: defaults, a TOML file, ``MEMPLUG_*`` environment variables — in that order.

Keys are camelCase in files and docs (``assembly.softBudgetTokens``); an environment
variable names a key as ``MEMPLUG_<SECTION>__<KEY>`` in upper snake case
(``MEMPLUG_ASSEMBLY__SOFT_BUDGET_TOKENS=2000``). Unknown keys are errors that name the
key; numbers are clamped to sane bounds rather than trusted.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any, Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from memplug.errors import ValidationError
from memplug.paths import CONFIG_FILENAME, config_file

ENV_PREFIX = "MEMPLUG_"
# Environment variables that are not configuration keys.
_ENV_NOT_CONFIG = frozenset({"MEMPLUG_DB", "MEMPLUG_HOME", "MEMPLUG_CONFIG"})


class _Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        defer_build=True,
    )


def _clamp(low: float, high: float) -> Any:
    def clamp(value: Any) -> Any:
        return min(max(value, low), high)

    return clamp


class CaptureConfig(_Section):
    index_thinking: bool = False
    index_tool_output: bool = True
    max_text_chars: int = 20_000
    generated_source_kinds: tuple[str, ...] = ()

    _clamp_chars = field_validator("max_text_chars")(_clamp(1_000, 1_000_000))


class ExtractionConfig(_Section):
    enabled: bool = True
    extract_proposals: bool = True


class RetrievalConfig(_Section):
    limit: int = 24
    min_score: float = 0.5
    candidate_budget: int = 400
    like_fallback_cap: int = 2_000
    exact_match_boost: float = 0.5
    recency_boost: float = 0.1
    recency_window: int = 40
    superseded_factor: float = 0.4
    kind_weights: dict[str, float] = Field(
        default_factory=lambda: {
            "decision": 1.0,
            "constraint": 1.0,
            "fact": 0.95,
            "preference": 0.8,
            "open_question": 0.8,
            "proposal": 0.5,
        }
    )
    evidence_weights: dict[str, float] = Field(
        default_factory=lambda: {
            "user_explicit": 1.0,
            "artifact_verified": 0.95,
            "skill": 0.9,
            "assistant_proposal": 0.6,
            "inferred": 0.4,
        }
    )
    role_weights: dict[str, float] = Field(
        default_factory=lambda: {
            "user": 1.0,
            "assistant": 0.5,
            "tool": 0.5,
            "system": 0.4,
            "command": 0.4,
        }
    )
    # Lexical ranking shape, measured on LoCoMo and LongMemEval-S dev (docs/search.md,
    # docs/benchmarks.md): BM25 re-scored in code, a text's length measured against a
    # fixed pivot and capped, so that a long answer that mentions everything does not
    # outrank the short turn that holds the fact, nor is buried for being long.
    bm25_k1: float = 1.2
    bm25_b: float = 0.5
    length_pivot_chars: int = 200
    length_cap: float = 8.0
    # A hit's session adds this share of its best score; a hit lends these shares of
    # its score to the next and the previous event: evidence sits next to what matches.
    session_weight: float = 0.5
    next_spread: float = 0.6
    prev_spread: float = 0.3
    # A query word found whole, not only as a prefix (`billing服务` over `billing2服务`).
    boundary_bonus: float = 0.1
    generated_factor: float = 0.5
    event_recency_share: float = 0.5
    regex_timeout_ms: int = 200
    regex_max_pattern_bytes: int = 512
    regex_max_haystack_chars: int = 2_000_000

    _clamp_limit = field_validator("limit")(_clamp(1, 100))
    _clamp_budget = field_validator("candidate_budget")(_clamp(10, 100_000))
    _clamp_b = field_validator("bm25_b")(_clamp(0.0, 1.0))
    _clamp_pivot = field_validator("length_pivot_chars")(_clamp(1, 1_000_000))
    _clamp_cap = field_validator("length_cap")(_clamp(1.0, 1_000.0))


class AssemblyConfig(_Section):
    min_budget_tokens: int = 600
    soft_budget_tokens: int = 3000
    evidence_types: tuple[str, ...] = ("user/message", "assistant/message")
    locale: Literal["en", "zh"] = "en"
    skip_when_empty: bool = True
    snippet_chars: int = 600
    # How many ranked items and events assembly asks retrieval for; the budget decides
    # how many are used, so this is set to fill it rather than to retrieval.limit.
    candidate_limit: int = 100
    # Which sessions a step's memory comes from: its own, its project's, or all.
    scope: Literal["session", "project", "global"] = "project"

    _clamp_min = field_validator("min_budget_tokens")(_clamp(50, 200_000))
    _clamp_soft = field_validator("soft_budget_tokens")(_clamp(0, 200_000))
    _clamp_snippet = field_validator("snippet_chars")(_clamp(80, 20_000))
    _clamp_candidates = field_validator("candidate_limit")(_clamp(1, 100))

    @property
    def budget_tokens(self) -> int:
        return max(self.min_budget_tokens, self.soft_budget_tokens)


class DiagnosticsConfig(_Section):
    assembly_log_retention: int = 1000
    error_log_retention: int = 500

    _clamp_ret = field_validator("assembly_log_retention")(_clamp(1, 1_000_000))


class HookConfig(_Section):
    max_context_chars: int = 9_000
    deadline_ms: int = 4_000

    _clamp_chars = field_validator("max_context_chars")(_clamp(500, 100_000))


# Rule categories, in the order the docs list them (docs/skills.md maps headings to them).
RULE_CATEGORIES: tuple[str, ...] = ("workflow", "constraint", "style", "current_state", "reference")


class SkillsConfig(_Section):
    include: tuple[str, ...] = ("**/SKILL.md",)
    exclude: tuple[str, ...] = ("**/.git/**", "**/node_modules/**")
    # Workflow lines per skill in the resident core; the rest are omitted "over limit".
    core_max_lines: int = 6
    rules_limit: int = 12
    min_rule_score: float = 0.05
    category_weights: dict[str, float] = Field(
        default_factory=lambda: {
            "constraint": 1.0,
            "current_state": 0.9,
            "workflow": 0.8,
            "style": 0.8,
            "reference": 0.6,
        }
    )

    _clamp_core = field_validator("core_max_lines")(_clamp(0, 100))
    _clamp_rules = field_validator("rules_limit")(_clamp(0, 100))


class PreconditionConfig(_Section):
    """Before a tool touches a path matching a pattern, that path must (not) exist."""

    name: str = ""
    tools: tuple[str, ...] = ()
    must_exist: tuple[str, ...] = ()
    must_not_exist: tuple[str, ...] = ()
    reason: str | None = None


class ValidationConfig(_Section):
    # Run the checks on each committed assistant message (hosts and hooks).
    enabled: bool = True
    # Each check is a table with a `type`; unknown types are reported and skipped when
    # they run, not refused here (see docs/validation.md for the types and their keys).
    checks: tuple[dict[str, Any], ...] = ()
    preconditions: tuple[PreconditionConfig, ...] = ()
    block_on_violation: bool = False
    max_repair_attempts: int = 2
    reminder_max_chars: int = 600

    _clamp_attempts = field_validator("max_repair_attempts")(_clamp(0, 20))
    _clamp_reminder = field_validator("reminder_max_chars")(_clamp(80, 4_000))


class Config(_Section):
    # Defaults are built without validation: they are valid by construction, and a
    # hook process that changes nothing should not pay for building validators.
    capture: CaptureConfig = Field(default_factory=CaptureConfig.model_construct)
    extraction: ExtractionConfig = Field(default_factory=ExtractionConfig.model_construct)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig.model_construct)
    assembly: AssemblyConfig = Field(default_factory=AssemblyConfig.model_construct)
    diagnostics: DiagnosticsConfig = Field(default_factory=DiagnosticsConfig.model_construct)
    hook: HookConfig = Field(default_factory=HookConfig.model_construct)
    skills: SkillsConfig = Field(default_factory=SkillsConfig.model_construct)
    validation: ValidationConfig = Field(default_factory=ValidationConfig.model_construct)

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json")


@dataclass(frozen=True)
class LoadedConfig:
    """The effective configuration and where each value came from."""

    config: Config
    sources: dict[str, str]
    file: str | None = None
    # dotted key → the number given, for each value that was clamped into its bounds.
    clamped: dict[str, Any] = dataclass_field(default_factory=dict)

    def clamp_warnings(self) -> list[str]:
        """One line per clamped value, naming where it was set."""
        return [
            f"config {key} = {given} (from {self.sources.get(key, 'the configuration')}) "
            f"is out of bounds; using {_value(self.config, key)}"
            for key, given in self.clamped.items()
        ]


def _snake_to_camel(name: str) -> str:
    return to_camel(name.lower())


def _env_overrides(environ: Mapping[str, str]) -> dict[str, tuple[str, str, Any]]:
    """``{dotted.key: (section, camelKey, value)}`` from ``MEMPLUG_SECTION__KEY`` variables."""
    found: dict[str, tuple[str, str, Any]] = {}
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX) or name in _ENV_NOT_CONFIG:
            continue
        rest = name[len(ENV_PREFIX) :]
        if "__" not in rest:
            raise ValidationError(
                f"environment variable {name} is not a config key "
                f"(expected {ENV_PREFIX}<SECTION>__<KEY>)"
            )
        section, key = rest.split("__", 1)
        raw = environ[name]
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        section_name, key_name = section.lower(), _snake_to_camel(key)
        found[f"{section_name}.{key_name}"] = (section_name, key_name, value)
    return found


def _describe(error: pydantic.ValidationError, sources: Mapping[str, str]) -> str:
    first = error.errors()[0]
    key = ".".join(str(p) for p in first.get("loc", ()))
    # Name where the offending key was set (a file, a variable, the API) when known.
    origin = sources.get(key) or next(
        (where for dotted, where in sorted(sources.items()) if dotted.startswith(key + ".")),
        "the configuration",
    )
    if first.get("type") == "extra_forbidden":
        return f"unknown config key '{key}' in {origin}"
    return f"config key '{key}' in {origin}: {first.get('msg', 'is invalid')}"


def load_config(
    path: Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    required: bool = False,
    overrides: Mapping[str, Any] | None = None,
) -> LoadedConfig:
    """Build the effective config from defaults, ``path`` (TOML) and the environment.

    ``required`` makes a missing file an error (an explicit ``--config``); the file
    beside the database is optional. ``overrides`` (a nested mapping, as in TOML) are
    applied last — the Python API's way to pass config.
    """
    environ = os.environ if environ is None else environ
    merged: dict[str, dict[str, Any]] = {}
    sources: dict[str, str] = {}
    file_used: str | None = None
    if path is not None:
        if path.is_file():
            import tomllib  # only when there is a file to read

            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
                raise ValidationError(f"config file {path} is not valid TOML: {error}") from None
            file_used = str(path)
            _merge(merged, sources, data, f"file {path}")
        elif required:
            raise ValidationError(f"config file {path} does not exist")
    for dotted, (section, key, value) in _env_overrides(environ).items():
        merged.setdefault(section, {})[key] = value
        sources[dotted] = "env " + env_name(dotted)
    if overrides:
        _merge(merged, sources, dict(overrides), "api")
    if merged:
        try:
            config = Config.model_validate(merged)
        except pydantic.ValidationError as error:
            raise ValidationError(_describe(error, sources)) from None
    else:
        config = Config.model_construct()
    for dotted in _all_keys(config):
        sources.setdefault(dotted, "default")
    return LoadedConfig(
        config=config,
        sources=dict(sorted(sources.items())),
        file=file_used,
        clamped=_clamped(config, merged),
    )


def _snake(key: str) -> str:
    return _CAMEL_WORD.sub("_", key).lower()


def _value(config: Config, dotted: str) -> Any:
    section, key = dotted.split(".", 1)
    return getattr(getattr(config, section), _snake(key))


def _clamped(config: Config, merged: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The numbers given that validation moved into their bounds (a number the model
    only converted, 3 → 3.0, is not clamped)."""
    found: dict[str, Any] = {}
    for section, values in sorted(merged.items()):
        for key, given in sorted(values.items()):
            if isinstance(given, bool) or not isinstance(given, int | float):
                continue
            dotted = f"{section}.{to_camel(_snake(key))}"
            if _value(config, dotted) != given:
                found[dotted] = given
    return found


def _merge(
    merged: dict[str, dict[str, Any]], sources: dict[str, str], data: Mapping[str, Any], origin: str
) -> None:
    for section, values in data.items():
        if not isinstance(values, Mapping):
            raise ValidationError(f"config key '{section}' in {origin} must be a table")
        for key, value in values.items():
            merged.setdefault(section, {})[key] = value
            sources[f"{section}.{key}"] = origin


def _all_keys(config: Config) -> list[str]:
    # From the classes' field tables, not model_dump(): dumping builds a serializer.
    keys: list[str] = []
    for section, field in type(config).model_fields.items():
        section_type = type(getattr(config, section))
        keys.extend(
            f"{field.alias or section}.{entry.alias or name}"
            for name, entry in section_type.model_fields.items()
        )
    return keys


def config_path_beside(db_path: Path) -> Path:
    return db_path.parent / CONFIG_FILENAME


def load_for_database(
    db_path: Path,
    config_path: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> LoadedConfig:
    """The config of a database: ``config_path`` (else ``MEMPLUG_CONFIG``), which must
    exist, else ``memory.toml`` beside the database when there is one."""
    path, named = config_file(db_path, config_path)
    return load_config(path, required=named, overrides=overrides)


_CAMEL_WORD = re.compile(r"(?<!^)(?=[A-Z])")


def env_name(dotted: str) -> str:
    """``assembly.softBudgetTokens`` → ``MEMPLUG_ASSEMBLY__SOFT_BUDGET_TOKENS``."""
    section, key = dotted.split(".", 1)
    return f"{ENV_PREFIX}{section.upper()}__{_CAMEL_WORD.sub('_', key).upper()}"
