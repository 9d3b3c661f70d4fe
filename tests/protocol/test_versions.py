"""`mcpfast.versions`: what each known revision has, one predicate per question, as a table
over every revision (a new revision is one column here)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mcpfast import versions
from mcpfast.versions import (
    ALL_VERSIONS,
    at_least,
    first_with,
    gates_sampling_context,
    has_elicitation,
    has_legacy_tasks,
    has_polling,
    has_sampling_tools,
    has_url_elicitation,
    is_modern,
    names_form_mode,
    supports_batching,
)

COLUMNS = ("2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
TABLE: dict[Callable[[str], bool], tuple[bool, bool, bool, bool]] = {
    is_modern: (False, False, False, True),
    supports_batching: (True, False, False, False),
    has_elicitation: (False, True, True, True),
    has_url_elicitation: (False, False, True, True),
    has_sampling_tools: (False, False, True, True),
    gates_sampling_context: (False, False, True, True),
    has_legacy_tasks: (False, False, True, False),
    has_polling: (False, False, True, False),
    names_form_mode: (False, False, True, False),
}


def test_the_table_covers_every_known_revision_and_predicate() -> None:
    assert sorted(COLUMNS) == sorted(ALL_VERSIONS)
    predicates = {
        value
        for name, value in vars(versions).items()
        if callable(value) and name.startswith(("is_", "has_", "supports_", "gates_", "names_"))
    }
    assert predicates == set(TABLE)


@pytest.mark.parametrize("predicate", TABLE, ids=lambda p: p.__name__)
@pytest.mark.parametrize("column", range(len(COLUMNS)), ids=lambda i: COLUMNS[i])
def test_what_each_revision_has(predicate: Callable[[str], bool], column: int) -> None:
    assert predicate(COLUMNS[column]) is TABLE[predicate][column]


@pytest.mark.parametrize(
    ("predicate", "first"),
    [
        (has_elicitation, "2025-06-18"),
        (has_url_elicitation, "2025-11-25"),
        (has_sampling_tools, "2025-11-25"),
        (is_modern, "2026-07-28"),
    ],
    ids=lambda p: getattr(p, "__name__", p),
)
def test_first_with_names_the_oldest_revision_that_has_it(
    predicate: Callable[[str], bool], first: str
) -> None:
    assert first_with(predicate) == first


@pytest.mark.parametrize(
    ("version", "first", "expected"),
    [
        ("2025-11-25", "2025-11-25", True),
        ("2026-07-28", "2025-03-26", True),
        ("2025-06-18", "2025-11-25", False),
    ],
)
def test_at_least(version: str, first: str, expected: bool) -> None:
    assert at_least(version, first) is expected
