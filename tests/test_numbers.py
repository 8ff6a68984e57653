"""Numbers keep their unit, comparator, metric and the conditions of their clause."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memplug.derive.quantities import conditions_of, extract_numbers


def only(text: str) -> dict:
    found = extract_numbers(text)
    assert len(found) == 1, [n.to_dict() for n in found]
    return found[0].to_dict()


def test_latency_with_comparator_metric_and_condition() -> None:
    n = only("The checkout endpoint must keep p95 < 200 ms at 1k rps.")
    assert (n["value"], n["unit"], n["comparator"], n["metric"]) == (200, "ms", "<", "p95")
    assert n["conditions"] == ["at 1k rps"]
    assert n["raw"] == "p95 < 200 ms"
    assert n["flagged"] is False


# text → (value, unit, kind, flagged): the cases the issue names, and their neighbours.
CASES = {
    "port 8080": (8080, None, "port", False),
    "the API port is 8080": (8080, None, "port", False),
    "localhost:8080": (8080, None, "port", False),
    "pin requests to v2.31.5": ("2.31.5", None, "version", False),
    "Python 3.12": ("3.12", None, "version", False),
    "3 GB": (3, "GB", "quantity", False),
    "maxmemory 3gb": (3, "GB", "quantity", False),
    "30%": (30, "%", "quantity", False),
    "1.5x faster": (1.5, "x", "quantity", False),
    "3秒": (3, "s", "quantity", False),
    "200毫秒": (200, "ms", "quantity", False),
    "10k users": (10_000, "users", "quantity", False),
    "2万行": (20_000, "行", "quantity", False),
    "$5 a month": (5, "USD", "quantity", False),
    "the retry limit is 5": (5, None, "quantity", True),
    "值班室分机号 4324": (4324, None, "quantity", True),
    "2026-03-02": ("2026-03-02", None, "date", False),
    "10.0.0.1": ("10.0.0.1", None, "address", False),
    "see #42": ("#42", None, "ref", False),
    "maps 8080:8080": ("8080:8080", None, "mapping", False),
}


@pytest.mark.parametrize("text", sorted(CASES))
def test_value_unit_kind_and_flag(text: str) -> None:
    n = only(text)
    assert (n["value"], n["unit"], n["kind"], n["flagged"]) == CASES[text]


def test_rate_per_period_is_not_flagged() -> None:
    n = only("our error budget is 0.1% per month")
    assert (n["value"], n["unit"], n["per"], n["metric"]) == (0.1, "%", "mo", "budget")
    assert n["flagged"] is False
    assert only("每月0.1%")["per"] == "mo"


@pytest.mark.parametrize(
    ("text", "comparator"),
    [
        ("at most 3 GB", "<="),
        ("at least 2 replicas", ">="),
        ("under 200 ms", "<"),
        ("over 5 s", ">"),
        ("200 ms or less", "<="),
        ("小于200毫秒", "<"),
        ("3秒内", "<="),
        ("不超过3 GB", "<="),
    ],
)
def test_comparators(text: str, comparator: str) -> None:
    assert only(text)["comparator"] == comparator


def test_a_number_qualifying_another_is_its_condition_not_a_number() -> None:
    found = extract_numbers("p95 < 200 ms at 1k rps and p99 < 1 s at 2k rps")
    assert [(n.value, n.conditions) for n in found] == [
        (200, ("at 1k rps",)),
        (1, ("at 2k rps",)),
    ]


def test_a_leading_condition_qualifies_every_number_of_its_clause() -> None:
    found = extract_numbers("At 1k rps, p95 < 200 ms and p99 < 500 ms.")
    assert [n.conditions for n in found] == [("At 1k rps",), ("At 1k rps",)]


def test_chinese_condition() -> None:
    n = only("在1k rps下p95小于200毫秒")
    assert (n["value"], n["unit"], n["metric"]) == (200, "ms", "p95")
    assert n["conditions"] == ["在1k rps下"]


def test_conditions_stay_in_their_comma_segment() -> None:
    found = extract_numbers("port 8080 in staging, 9090 in prod")
    assert [(n.value, n.conditions) for n in found] == [
        (8080, ("in staging",)),
        (9090, ("in prod",)),
    ]
    text = "a 30 minute TTL, fall back to Postgres on a miss, and set maxmemory 3gb"
    assert [n.conditions for n in extract_numbers(text)] == [(), ()]


def test_a_preposition_in_front_of_the_only_number_is_grammar() -> None:
    n = only("respond in 200 ms")
    assert (n["raw"], n["conditions"]) == ("200 ms", [])
    assert only("Cache pages for 60 s in production")["conditions"] == ["in production"]


@pytest.mark.parametrize(
    "text", ["utf8 and x86_64 and p95", "db-staging-2", "ticket SHOP-311", "the 3rd try", "abc123"]
)
def test_digits_inside_names_are_not_numbers(text: str) -> None:
    assert extract_numbers(text) == []


def test_conditions_of_is_ordered_and_distinct() -> None:
    found = extract_numbers("At 1k rps, p95 < 200 ms and p99 < 500 ms in staging.")
    assert conditions_of(found) == ["At 1k rps", "in staging"]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_safe_and_deterministic(text: str) -> None:
    first = [n.to_dict() for n in extract_numbers(text)]
    assert first == [n.to_dict() for n in extract_numbers(text)]
    for number in first:
        assert number["raw"]
        assert number["flagged"] == (
            number["kind"] == "quantity"
            and number["unit"] is None
            and number["per"] is None
            and not number["conditions"]
        )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "p95 < 200 ms",
                "at",
                "1k rps",
                "port",
                "8080",
                ",",
                "在",
                "下",
                "3秒",
                "v2.31.5",
                "30%",
                "and",
                "with",
                "under",
                "load",
                " ",
                "x",
                "1.5",
            ]
        ),
        max_size=25,
    )
)
def test_number_soup_is_safe(parts: list[str]) -> None:
    text = " ".join(parts)
    assert [n.to_dict() for n in extract_numbers(text)] == [
        n.to_dict() for n in extract_numbers(text)
    ]


def test_a_bare_major_after_a_product_name_is_a_version_not_an_alarm() -> None:
    for text, raw in (("switch to MySQL 8 instead", "MySQL 8"), ("use Node 20", "Node 20"),
                      ("PostgreSQL 16 for orders", "PostgreSQL 16")):  # fmt: skip
        (number,) = extract_numbers(text)
        assert (number.raw, number.kind, number.flagged) == (raw, "version", False)
    (steps,) = extract_numbers("go 2 steps back")
    assert steps.kind == "quantity"
