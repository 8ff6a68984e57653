"""Configuration: defaults, clamps, `memory.toml` beside the database or `--config`,
`MEMPLUG_*` variables, unknown keys named in the error, and `memory config show`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import pytest
from conftest import CliResult, run_cli_here

from memplug.base.config import (
    DEFAULT_KIND_WEIGHTS,
    Config,
    config_key,
    env_name,
    load_config,
    validate_config,
)
from memplug.base.errors import ValidationError
from memplug.memory import Memory


def show(db: Path, *args: str, env: dict[str, str] | None = None) -> CliResult:
    return run_cli_here("--db", str(db), *args, "config", "show", "--json", env=env)


def test_defaults() -> None:
    config = load_config(None, environ={}).config
    assert config.assembly.min_budget_tokens == 600
    assert config.assembly.soft_budget_tokens == 3000
    assert config.assembly.budget_tokens == 3000
    assert config.assembly.evidence_types == ("user/message", "assistant/message")
    assert config.assembly.locale == "en"
    assert config.retrieval.limit == 24
    assert config.diagnostics.assembly_log_retention == 1000


@pytest.mark.parametrize(
    ("section", "key", "given", "field", "kept"),
    [
        ("retrieval", "limit", 500, "limit", 100),
        ("retrieval", "limit", 0, "limit", 1),
        ("assembly", "minBudgetTokens", 5, "min_budget_tokens", 50),
        ("assembly", "softBudgetTokens", 10**9, "soft_budget_tokens", 200_000),
        ("assembly", "candidateLimit", 1000, "candidate_limit", 100),
        ("assembly", "snippetChars", 3, "snippet_chars", 80),
    ],
)
def test_numbers_are_clamped(section: str, key: str, given: int, field: str, kept: int) -> None:
    config = load_config(None, environ={}, overrides={section: {key: given}}).config
    assert getattr(getattr(config, section), field) == kept


def test_file_beside_the_database_then_environment(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    (tmp_path / "memory.toml").write_text(
        '[assembly]\nsoftBudgetTokens = 1200\nlocale = "zh"\n', encoding="utf-8"
    )
    with Memory.open(db) as memory:
        assert memory.config.assembly.soft_budget_tokens == 1200
        assert memory.loaded.sources["assembly.softBudgetTokens"].startswith("file ")
    variable = env_name("assembly.softBudgetTokens")
    assert variable == "MEMPLUG_ASSEMBLY__SOFT_BUDGET_TOKENS"
    loaded = load_config(tmp_path / "memory.toml", environ={variable: "900"})
    assert loaded.config.assembly.soft_budget_tokens == 900
    assert loaded.sources["assembly.softBudgetTokens"] == f"env {variable}"
    assert loaded.config.assembly.locale == "zh"
    assert loaded.sources["assembly.minBudgetTokens"] == "default"


def test_unknown_keys_are_errors_that_name_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "memory.toml"
    bad.write_text("[assembly]\nsoftBudget = 10\n", encoding="utf-8")
    with pytest.raises(
        ValidationError, match=r"unknown config key 'assembly\.softBudget' in file "
    ):
        load_config(bad, environ={})
    with pytest.raises(ValidationError, match="unknown config key 'asembly' in api"):
        load_config(None, environ={}, overrides={"asembly": {"locale": "zh"}})
    with pytest.raises(ValidationError, match="MEMPLUG_LOCALE is not a config key"):
        load_config(None, environ={"MEMPLUG_LOCALE": "zh"})
    with pytest.raises(ValidationError, match=r"config key 'assembly\.locale' in api"):
        load_config(None, environ={}, overrides={"assembly": {"locale": "fr"}})


def test_an_explicit_config_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="does not exist"):
        load_config(tmp_path / "nope.toml", environ={}, required=True)
    broken = tmp_path / "broken.toml"
    broken.write_text("[assembly\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="is not valid TOML"):
        load_config(broken, environ={})


def test_config_show_prints_values_and_where_they_came_from(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    (tmp_path / "memory.toml").write_text("[assembly]\nsoftBudgetTokens = 1500\n")
    done = show(db, env={"MEMPLUG_RETRIEVAL__LIMIT": "30"})
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    values = data["values"]
    assert values["assembly.softBudgetTokens"] == {
        "value": 1500,
        "source": f"file {tmp_path / 'memory.toml'}",
    }
    assert values["retrieval.limit"] == {"value": 30, "source": "env MEMPLUG_RETRIEVAL__LIMIT"}
    assert values["assembly.locale"] == {"value": "en", "source": "default"}
    assert not db.exists(), "config show created a database"


def test_config_show_with_a_bad_key_is_one_error_line(tmp_path: Path) -> None:
    config = tmp_path / "other.toml"
    config.write_text("[assembly]\nbudget = 1\n")
    done = show(tmp_path / "m.sqlite", "--config", str(config))
    assert done.returncode == 2
    assert done.stderr.strip() == f"Error: unknown config key 'assembly.budget' in file {config}"


def test_defaults_built_without_validation_equal_validated_defaults() -> None:
    """With nothing set, load_config skips validation; the result must be the same."""
    fast = load_config(None, environ={}).config
    validated = validate_config({})
    assert fast == validated
    assert fast.to_dict() == validated.to_dict()


@pytest.mark.parametrize(
    ("given", "field", "kept"),
    [
        ({"retrieval": {"minScore": 1}}, ("retrieval", "min_score"), 1.0),
        ({"retrieval": {"min_score": "0.25"}}, ("retrieval", "min_score"), 0.25),
        ({"retrieval": {"limit": 5.0}}, ("retrieval", "limit"), 5),
        ({"retrieval": {"limit": "7"}}, ("retrieval", "limit"), 7),
        ({"capture": {"indexThinking": "True"}}, ("capture", "index_thinking"), True),
        ({"capture": {"indexToolOutput": 0}}, ("capture", "index_tool_output"), False),
        ({"assembly": {"evidenceTypes": ["a", "b"]}}, ("assembly", "evidence_types"), ("a", "b")),
        (
            {"retrieval": {"kindWeights": {"fact": 2}}},
            ("retrieval", "kind_weights"),
            {**DEFAULT_KIND_WEIGHTS, "fact": 2.0},
        ),
    ],
)
def test_values_are_converted_as_toml_and_env_need(
    given: dict[str, dict[str, object]], field: tuple[str, str], kept: object
) -> None:
    config = load_config(None, environ={}, overrides=given).config
    value = getattr(getattr(config, field[0]), field[1])
    assert value == kept
    assert type(value) is type(kept)


@pytest.mark.parametrize(
    ("given", "error"),
    [
        ({"retrieval": {"limit": "many"}}, "'retrieval.limit' in api: Expected `int`, got `str`"),
        ({"retrieval": {"limit": True}}, "'retrieval.limit' in api: Expected `int`, got `bool`"),
        ({"retrieval": {"limit": 2.5}}, "'retrieval.limit' in api: Expected `int`, got `float`"),
        (
            {"retrieval": {"minScore": "high"}},
            "'retrieval.minScore' in api: Expected `float`, got `str`",
        ),
        (
            {"capture": {"indexThinking": 2}},
            "'capture.indexThinking' in api: Expected `bool`, got `int`",
        ),
        # msgspec's booleans: true/false in any case, 1/0 (no longer yes/no, on/off).
        (
            {"capture": {"indexThinking": "yes"}},
            "'capture.indexThinking' in api: Expected `bool`, got `str`",
        ),
        ({"assembly": {"scope": "team"}}, "'assembly.scope' in api: Invalid enum value 'team'"),
        ({"assembly": {"evidenceTypes": "user/message"}}, "Expected `array`, got `str`"),
        (
            {"assembly": {"evidenceTypes": [1]}},
            "'assembly.evidenceTypes.0' in api: Expected `str`, got `int`",
        ),
        ({"retrieval": {"kindWeights": {"fact": "x"}}}, "'retrieval.kindWeights' in api"),
        (
            {"validation": {"preconditions": [{"mustExist": "a"}]}},
            "'validation.preconditions.0.mustExist' in api: Expected `array`, got `str`",
        ),
        (
            {"validation": {"preconditions": [{"mustExist": ["a"], "must": 1}]}},
            "unknown config key 'validation.preconditions.0.must' in api",
        ),
    ],
)
def test_bad_values_name_the_key_and_the_problem(
    given: dict[str, dict[str, object]], error: str
) -> None:
    with pytest.raises(ValidationError, match=re.escape(error)) as raised:
        load_config(None, environ={}, overrides=given)
    assert "\n" not in str(raised.value)


def test_a_bad_variable_is_named_as_the_source(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as raised:
        load_config(None, environ={"MEMPLUG_ASSEMBLY__EVIDENCE_TYPES": "[1]"})
    assert str(raised.value) == (
        "config key 'assembly.evidenceTypes.0' in env MEMPLUG_ASSEMBLY__EVIDENCE_TYPES: "
        "Expected `str`, got `int`"
    )
    done = show(tmp_path / "m.sqlite", env={"MEMPLUG_RETRIEVAL__LIMT": "3"})
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "Error: unknown config key 'retrieval.limt' in env MEMPLUG_RETRIEVAL__LIMT"
    )


def test_a_snake_case_key_names_the_same_field_and_source() -> None:
    loaded = load_config(None, environ={}, overrides={"retrieval": {"min_score": 0.25}})
    assert loaded.config.retrieval.min_score == 0.25
    assert loaded.sources["retrieval.minScore"] == "api"
    assert "retrieval.min_score" not in loaded.sources


def test_a_key_is_spelled_as_msgspec_spells_the_field() -> None:
    """``config_key`` (variables, snake_case keys) and msgspec's camelCase renaming (what
    files are checked against) must agree, or a variable would name an unknown key."""
    for section in msgspec.structs.fields(Config):
        for info in msgspec.structs.fields(section.type):
            assert config_key(info.name) == info.encode_name
            assert config_key(info.encode_name) == info.encode_name


def test_a_weight_table_given_changes_only_the_weights_it_names() -> None:
    given = {"fact": 2.0}
    config = validate_config({"retrieval": {"roleWeights": {"tool": 0.1}, "kindWeights": given}})
    assert config.retrieval.role_weights == {**Config().retrieval.role_weights, "tool": 0.1}
    assert config.retrieval.kind_weights == {**DEFAULT_KIND_WEIGHTS, "fact": 2.0}
    assert given == {"fact": 2.0}
