"""Configuration: defaults, a TOML file, ``MEMPLUG_*`` environment variables — in that order.

Keys are camelCase in files and docs (``assembly.softBudgetTokens``); an environment
variable names a key as ``MEMPLUG_<SECTION>__<KEY>`` in upper snake case
(``MEMPLUG_ASSEMBLY__SOFT_BUDGET_TOKENS=2000``). Unknown keys are errors that name the
key; numbers are clamped to sane bounds rather than trusted.

Sections are frozen msgspec records (docs/architecture.md "Records") that msgspec's
conversion checks (``msgspec.convert``, lax as TOML and environment strings need), not
pydantic models: every Claude Code hook is a fresh process that loads the
configuration, and importing pydantic (or pydantic-settings, for its environment
mapping) costs that process more than the dozen scalar and list types here need
(docs/history/benchmarks-2026.md, "Config and records").
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Struct, field
from msgspec.structs import force_setattr

from memplug.base.errors import ValidationError, split_msgspec_error
from memplug.base.paths import CONFIG_FILENAME, config_file

ENV_PREFIX = "MEMPLUG_"
# Environment variables that are not configuration keys.
_ENV_NOT_CONFIG = frozenset({"MEMPLUG_DB", "MEMPLUG_HOME", "MEMPLUG_CONFIG"})


class Clamp(Struct, frozen=True):
    """Marks a number key (``Annotated[int, Clamp(1, 100)]``) whose value is clamped
    into ``[low, high]`` rather than refused (msgspec's own ``Meta(ge=, le=)`` refuses,
    and the documented bounds clamp, with a warning)."""

    low: float
    high: float


class Section(Struct, frozen=True, rename="camel", forbid_unknown_fields=True):
    """A config table: its keys are its fields' camelCase names, and any other is an error."""


class CaptureConfig(Section, frozen=True):
    index_thinking: bool = False
    index_tool_output: bool = True
    max_text_chars: Annotated[int, Clamp(1_000, 1_000_000)] = 20_000
    generated_source_kinds: tuple[str, ...] = ()


class ExtractionConfig(Section, frozen=True):
    enabled: bool = True
    extract_proposals: bool = True


# The weight tables' defaults. A table given in a file or the API changes the weights it
# names and keeps the others, so every kind, evidence type and role has its weight.
DEFAULT_KIND_WEIGHTS = {
    "decision": 1.0,
    "constraint": 1.0,
    "fact": 0.95,
    "preference": 0.8,
    "open_question": 0.8,
    "proposal": 0.5,
}
DEFAULT_EVIDENCE_WEIGHTS = {
    "user_explicit": 1.0,
    "artifact_verified": 0.95,
    "skill": 0.9,
    "assistant_proposal": 0.6,
    "inferred": 0.4,
}
DEFAULT_ROLE_WEIGHTS = {
    "user": 1.0,
    "assistant": 0.5,
    "tool": 0.5,
    "system": 0.4,
    "command": 0.4,
}


class RetrievalConfig(Section, frozen=True):
    limit: Annotated[int, Clamp(1, 100)] = 24
    min_score: float = 0.5
    candidate_budget: Annotated[int, Clamp(10, 100_000)] = 400
    like_fallback_cap: int = 2_000
    exact_match_boost: float = 0.5
    recency_boost: float = 0.1
    recency_window: int = 40
    superseded_factor: float = 0.4
    kind_weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_KIND_WEIGHTS))
    evidence_weights: dict[str, float] = field(
        default_factory=lambda: dict(DEFAULT_EVIDENCE_WEIGHTS)
    )
    role_weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_ROLE_WEIGHTS))
    # The tool role's weight on the pull path (`memory search`, memory_search): an agent
    # searching memory wants a turn's conclusion or a person's word before raw tool
    # output that says the same words more often. Assembly keeps `roleWeights`. Chosen
    # on the next-day questions, every author held out (docs/benchmarks.md).
    search_tool_weight: Annotated[float, Clamp(0.0, 10.0)] = 0.25
    # The assistant role's weight on the pull path: the agent's reply of a turn (what it
    # found, fixed, decided) is what a later search for that work asks for, beside a
    # person's word. Chosen on the next-day questions, one author held out at a time
    # (docs/search.md, "Conclusions before tool output"); assembly keeps `roleWeights`.
    search_assistant_weight: Annotated[float, Clamp(0.0, 10.0)] = 0.7
    # Lexical ranking shape, measured on LoCoMo and LongMemEval-S dev (docs/search.md,
    # docs/benchmarks.md): BM25 re-scored in code, a text's length measured against a
    # fixed pivot and capped, so that a long answer that mentions everything does not
    # outrank the short turn that holds the fact, nor is buried for being long.
    bm25_k1: float = 1.2
    bm25_b: Annotated[float, Clamp(0.0, 1.0)] = 0.5
    length_pivot_chars: Annotated[int, Clamp(1, 1_000_000)] = 200
    length_cap: Annotated[float, Clamp(1.0, 1_000.0)] = 8.0
    # A hit's session adds this share of its best score; a hit lends these shares of
    # its score to the next and the previous event: evidence sits next to what matches.
    session_weight: float = 0.5
    next_spread: float = 0.6
    prev_spread: float = 0.3
    # The event two steps from a hit receives this share of what the adjacent one
    # receives (0: only the adjacent events): the answer often comes a line later.
    far_spread: Annotated[float, Clamp(0.0, 1.0)] = 0.5
    # A query word found whole, not only as a prefix (`billing服务` over `billing2服务`).
    boundary_bonus: float = 0.3
    # A word that only begins like the query's word (another Snowball stem: `painter`
    # for `painted`) counts this share of an occurrence.
    prefix_match_weight: Annotated[float, Clamp(0.0, 1.0)] = 0.5
    generated_factor: float = 0.5
    event_recency_share: float = 0.5
    regex_timeout_ms: int = 200
    regex_max_pattern_bytes: int = 512
    regex_max_haystack_chars: int = 2_000_000

    def __post_init__(self) -> None:
        for name, defaults in (
            ("kind_weights", DEFAULT_KIND_WEIGHTS),
            ("evidence_weights", DEFAULT_EVIDENCE_WEIGHTS),
            ("role_weights", DEFAULT_ROLE_WEIGHTS),
        ):
            given = getattr(self, name)
            if not given.keys() >= defaults.keys():  # frozen, so set past the guard
                force_setattr(self, name, {**defaults, **given})


class AssemblyConfig(Section, frozen=True):
    min_budget_tokens: Annotated[int, Clamp(50, 200_000)] = 600
    soft_budget_tokens: Annotated[int, Clamp(0, 200_000)] = 3000
    # Event types quoted as raw evidence; assistant text is labelled "assistant said"
    # and ranks below the user's word. Tool output never is (docs/security.md).
    evidence_types: tuple[str, ...] = ("user/message", "assistant/message")
    # The work section (docs/assembly.md, "Work"): its own share of the budget (0 turns
    # it off), how many records the query may bring, how many "where we were" records.
    work_budget_tokens: Annotated[int, Clamp(0, 200_000)] = 400
    work_records: Annotated[int, Clamp(0, 100)] = 8
    recent_work_records: Annotated[int, Clamp(0, 100)] = 5
    # Assistant messages quoted per step at most, each cut to this many characters:
    # the agent's words are long, and they rank below the user's.
    assistant_quotes: Annotated[int, Clamp(0, 100)] = 10
    assistant_snippet_chars: Annotated[int, Clamp(80, 20_000)] = 300
    locale: Literal["en", "zh"] = "en"
    skip_when_empty: bool = True
    snippet_chars: Annotated[int, Clamp(80, 20_000)] = 300
    # An event over its snippet limit is quoted by the sentences that hold the query's
    # strongest terms ("…" at each cut) instead of its head (docs/assembly.md).
    focused_quotes: bool = True
    # The role and minute every quotable line of a session-and-day group shares are
    # said once in its heading instead of on each line.
    shared_frames: bool = True
    # How many ranked items and events assembly asks retrieval for; the budget decides
    # how many are used, so this is set to fill it rather than to retrieval.limit.
    candidate_limit: Annotated[int, Clamp(1, 100)] = 100
    # Which sessions a step's memory comes from: its own, its project's, or all.
    scope: Literal["session", "project", "global"] = "project"
    # The resident core (section 0): its own share of the budget, ≈ 2 KB of text.
    core_budget_tokens: Annotated[int, Clamp(0, 20_000)] = 500
    # Precise, not full (docs/assembly.md): quote an event only when it adds to its
    # item, holds a strong term or two weak ones worth at least evidence_min_share of
    # the query's IDF (or sits next to a line that holds twice that), and stops where
    # relevance falls off (a ranking score under evidence_falloff of the best quotable
    # line's). False quotes every ranked candidate that fits, as memplug first did (the
    # budget curve's baseline). Both chosen on LoCoMo, confirmed on LongMemEval-S dev.
    precise: bool = True
    evidence_falloff: Annotated[float, Clamp(0.0, 1.0)] = 0.3
    evidence_min_share: Annotated[float, Clamp(0.0, 1.0)] = 0.15
    # With precise: quote a message that holds none of the query's words and is ranked
    # only for sitting beside a matched tool call or its output. Off: in replayed coding
    # sessions those were the agent's talk around the call (docs/benchmarks.md).
    tool_neighbours: bool = False
    # The fall-off in a step whose ranked events include tool calls or output (a coding
    # session): there the lines that share the request's topic without answering it
    # rank close behind; chosen on half the replayed labelled sessions, confirmed on the
    # other half (docs/benchmarks.md, "Real sessions replayed"). LoCoMo has no tools.
    tool_evidence_falloff: Annotated[float, Clamp(0.0, 1.0)] = 0.5
    # Two tiers (docs/assembly.md, "Quotes, then an index"): of the events that pass,
    # at most `quotes` are quoted verbatim, each only when the match is strong — its own
    # text holds `quoteSpecific` of the query's specific term groups, or it is the best
    # ranked by a margin of `quoteMargin` over the next; the rest, and those relevance
    # let fall off, are indexed (ref, date, who, a gist, its size), `indexLines` at
    # most; `quoteSpecific = 0` quotes every line that passes (one tier, as before).
    # Chosen across authors on the next-day questions (docs/benchmarks.md).
    quotes: Annotated[int, Clamp(0, 100)] = 3
    quote_specific: Annotated[int, Clamp(0, 20)] = 3
    quote_margin: Annotated[float, Clamp(1.0, 100.0)] = 2.0
    index_lines: Annotated[int, Clamp(0, 100)] = 30

    @property
    def budget_tokens(self) -> int:
        return max(self.min_budget_tokens, self.soft_budget_tokens)


class DiagnosticsConfig(Section, frozen=True):
    assembly_log_retention: Annotated[int, Clamp(1, 1_000_000)] = 1000
    error_log_retention: int = 500


class HookConfig(Section, frozen=True):
    max_context_chars: Annotated[int, Clamp(500, 100_000)] = 9_000
    deadline_ms: int = 4_000


# Rule categories, in the order the docs list them (docs/skills.md maps headings to them).
RULE_CATEGORIES: tuple[str, ...] = ("workflow", "constraint", "style", "current_state", "reference")


class SkillsConfig(Section, frozen=True):
    include: tuple[str, ...] = ("**/SKILL.md",)
    exclude: tuple[str, ...] = ("**/.git/**", "**/node_modules/**")
    # Workflow lines per skill in the resident core; the rest are omitted "over limit".
    core_max_lines: Annotated[int, Clamp(0, 100)] = 6
    rules_limit: Annotated[int, Clamp(0, 100)] = 12
    min_rule_score: float = 0.05
    category_weights: dict[str, float] = field(
        default_factory=lambda: {
            "constraint": 1.0,
            "current_state": 0.9,
            "workflow": 0.8,
            "style": 0.8,
            "reference": 0.6,
        }
    )


class PreconditionConfig(Section, frozen=True):
    """Before a tool touches a path matching a pattern, that path must (not) exist."""

    name: str = ""
    tools: tuple[str, ...] = ()
    must_exist: tuple[str, ...] = ()
    must_not_exist: tuple[str, ...] = ()
    reason: str | None = None


class ValidationConfig(Section, frozen=True):
    # Run the checks on each committed assistant message (hosts and hooks).
    enabled: bool = True
    # Each check is a table with a `type`; unknown types are reported and skipped when
    # they run, not refused here (see docs/validation.md for the types and their keys).
    checks: tuple[dict[str, Any], ...] = ()
    preconditions: tuple[PreconditionConfig, ...] = ()
    block_on_violation: bool = False
    max_repair_attempts: Annotated[int, Clamp(0, 20)] = 2
    reminder_max_chars: Annotated[int, Clamp(80, 4_000)] = 600


class SemanticConfig(Section, frozen=True):
    # "off", or the name of a provider registered under the `memplug.embedders` entry
    # points ("builtin" with `pip install 'memplug-local[semantic]'`).
    provider: str = "off"
    batch_size: Annotated[int, Clamp(1, 10_000)] = 256
    # How long a live capture (a hook, an on_event) may spend embedding new events; the
    # rest waits for the next capture, an import or `memory rebuild --vectors`.
    capture_budget_ms: Annotated[int, Clamp(0, 60_000)] = 30
    # Semantic candidates a query adds, and the similarity below which none is taken.
    candidates: Annotated[int, Clamp(1, 1_000)] = 20
    min_similarity: float = 0.2
    # The candidate of rank r (0 first) adds weight x rankK / (rankK + r) to its score
    # (lexical scores run ~0–2): measured on LoCoMo (docs/semantic.md).
    weight: float = 0.15
    rank_k: Annotated[float, Clamp(1.0, 1_000.0)] = 10.0
    # A query reads the vectors of the cells nearest to it until it has read this many
    # (every vector, in a smaller scope): the hook's cost stays flat as memory grows.
    scan_limit: Annotated[int, Clamp(100, 10_000_000)] = 3_000


class Config(Section, frozen=True):
    capture: CaptureConfig = field(default_factory=CaptureConfig)
    extraction: ExtractionConfig = field(default_factory=ExtractionConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    assembly: AssemblyConfig = field(default_factory=AssemblyConfig)
    diagnostics: DiagnosticsConfig = field(default_factory=DiagnosticsConfig)
    hook: HookConfig = field(default_factory=HookConfig)
    skills: SkillsConfig = field(default_factory=SkillsConfig)
    validation: ValidationConfig = field(default_factory=ValidationConfig)
    semantic: SemanticConfig = field(default_factory=SemanticConfig)

    def to_dict(self) -> dict[str, Any]:
        """``{section: {camelKey: value}}`` as JSON types (tuples become lists)."""
        data: dict[str, Any] = msgspec.to_builtins(self)
        return data


class LoadedConfig(Struct, frozen=True):
    """The effective configuration and where each value came from."""

    config: Config
    sources: dict[str, str]
    file: str | None = None
    # dotted key → the number given, for each value that was clamped into its bounds.
    clamped: dict[str, Any] = field(default_factory=dict)

    def clamp_warnings(self) -> list[str]:
        """One line per clamped value, naming where it was set."""
        return [
            f"config {key} = {given} (from {self.sources.get(key, 'the configuration')}) "
            f"is out of bounds; using {_value(self.config, key)}"
            for key, given in self.clamped.items()
        ]


def config_key(name: str) -> str:
    """A field's key in files and docs: ``soft_budget_tokens`` → ``softBudgetTokens``
    (a camelCase key is its own)."""
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


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
        section_name, key_name = section.lower(), config_key(key.lower())
        found[f"{section_name}.{key_name}"] = (section_name, key_name, value)
    return found


def validate_config(data: Mapping[str, Any], sources: Mapping[str, str] | None = None) -> Config:
    """A :class:`Config` from a nested mapping of sections (camelCase keys, as in files),
    its numbers clamped into their bounds; :class:`ValidationError` names the first bad
    key and where it was set."""
    try:
        config = msgspec.convert(data, Config, strict=False)
    except msgspec.ValidationError as error:
        raise ValidationError(_describe(str(error), sources or {})) from None
    return msgspec.structs.replace(
        config, **{section: _clamp(getattr(config, section)) for section in data}
    )


def _clamp(section: Any) -> Any:
    """``section`` with each :class:`Clamp`-marked number moved into its bounds."""
    changed: dict[str, Any] = {}
    for info in msgspec.structs.fields(section):
        marks = getattr(info.type, "__metadata__", ())
        bounds = next((m for m in marks if isinstance(m, Clamp)), None)
        value = getattr(section, info.name)
        if bounds is not None and not bounds.low <= value <= bounds.high:
            changed[info.name] = min(max(value, bounds.low), bounds.high)
    return msgspec.structs.replace(section, **changed)


# An unknown key is named in msgspec's message, not its place (the object holding it is).
_UNKNOWN = re.compile(r"^Object contains unknown field `(?P<key>[^`]*)`$")


def _describe(message: str, sources: Mapping[str, str]) -> str:
    """msgspec's error as one line naming the dotted key and where it was set."""
    why, path = split_msgspec_error(message)
    loc = re.findall(r"[^.\[\]]+", path.replace("[...]", ""))
    unknown = _UNKNOWN.match(why)
    if unknown:
        loc.append(unknown["key"])
    key = ".".join(loc)
    # Name where the offending key (or the table holding it) was set, when known.
    within = (".".join(loc[:n]) for n in range(len(loc), 0, -1))
    origin = next((sources[k] for k in within if k in sources), None) or next(
        (where for dotted, where in sorted(sources.items()) if dotted.startswith(key + ".")),
        "the configuration",
    )
    if unknown:
        return f"unknown config key '{key}' in {origin}"
    return f"config key '{key}' in {origin}: {why}"


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
    config = validate_config(merged, sources) if merged else Config()
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
    """The numbers given that validation moved into their bounds (a number msgspec
    only converted, 3 → 3.0, is not clamped)."""
    found: dict[str, Any] = {}
    for section, values in sorted(merged.items()):
        for key, given in sorted(values.items()):
            if isinstance(given, bool) or not isinstance(given, int | float):
                continue
            dotted = f"{section}.{key}"
            if _value(config, dotted) != given:
                found[dotted] = given
    return found


def _merge(
    merged: dict[str, dict[str, Any]], sources: dict[str, str], data: Mapping[str, Any], origin: str
) -> None:
    for section, values in data.items():
        if not isinstance(values, Mapping):
            raise ValidationError(f"config key '{section}' in {origin} must be a table")
        for given, value in values.items():
            # A snake_case key (``soft_budget_tokens``, as in Python) names the same field.
            key = config_key(str(given))
            merged.setdefault(section, {})[key] = value
            sources[f"{section}.{key}"] = origin


def _all_keys(config: Config) -> list[str]:
    return [f"{section}.{key}" for section, values in config.to_dict().items() for key in values]


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
