"""A tool argument of the wrong JSON type is a usage error naming it, never coerced and acted on; a
value of the right type is taken as sent (ADR 0011)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import Remote, run_michi
from mcpkit import Wire, document

pytest.importorskip("mcp")


@pytest.fixture
def work(remote: Remote, cli) -> Path:
    repo = remote.clone("work")
    assert cli(repo, "init").exit_code == 0
    for name in ("one", "two"):
        assert cli(repo, "task", "add", name).exit_code == 0
    return repo


WRONG: list[tuple[str, dict[str, Any], str]] = [
    ("task_next", {"claim": "yes"}, "claim"),  # claimed a task
    ("task_next", {"claim": "off"}, "claim"),  # did not
    ("task_next", {"claim": 1}, "claim"),
    ("task_next", {"claim": True, "ttl": "60"}, "ttl"),  # a 60 s lease
    ("task_claim", {"id": "1", "ttl": True}, "ttl"),
    ("task_done", {"id": "1", "if_version": True}, "if_version"),  # checked version 1
    ("task_done", {"id": "1", "if_version": "1"}, "if_version"),
    ("task_done", {"id": "1", "if_version": 1.5}, "if_version"),
    ("task_start", {"id": "1", "wait": "5"}, "wait"),
    ("task_show", {"id": 1}, "id"),
    ("task_add", {"description": "three", "tags": "a"}, "tags"),
    ("task_add", {"description": "three", "tags": '["a"]'}, "tags"),  # a list in a string was taken
    ("task_add", {"description": "three", "depends": [1]}, "depends"),
    ("task_list", {"ready": "true"}, "ready"),
]


def test_a_wrong_type_is_a_usage_error_naming_the_argument_and_nothing_changes(work: Path) -> None:
    before = run_michi(work, "--json", "task", "list", "--state", "any").json()
    wire = Wire(work)
    try:
        for n, (tool, arguments, _) in enumerate(WRONG):
            wire.call(100 + n, tool, **arguments)
        answers = [document(wire.answer(100 + n)) for n in range(len(WRONG))]
    finally:
        wire.end()
        wire.kill()
    for (tool, arguments, name), (is_error, doc) in zip(WRONG, answers, strict=True):
        assert is_error and doc["error"]["code"] == "usage", (tool, arguments, doc)
        assert f"{tool}: {name}: expected" in doc["error"]["message"], doc
    assert run_michi(work, "--json", "task", "list", "--state", "any").json() == before


def test_values_of_the_right_type_are_taken_as_sent(work: Path) -> None:
    """A string that reads as JSON is still a string (the SDK parsed it, and refused a description
    '[1]'); an integer is a number, and JSON Schema's integer 2.0 is an integer."""
    wire = Wire(work)
    try:
        wire.call(2, "task_modify", id="1", description="[1]", project="null")
        wire.call(3, "task_claim", id="2", ttl=60, if_version=1.0)
        modified, claimed = document(wire.answer(2)), document(wire.answer(3))
    finally:
        wire.end()
        wire.kill()
    assert modified == (False, modified[1]) and modified[1]["description"] == "[1]", modified
    assert modified[1]["project"] == "null"
    assert claimed == (False, claimed[1]) and claimed[1]["assignee"] == "a1", claimed


def test_an_integer_of_hundreds_of_digits_is_answered_in_michis_terms(work: Path) -> None:
    """An integer too large for a float made the type check itself raise (OverflowError): the SDK
    answered with its bare text and printed a traceback, outside michi's JSON error contract."""
    wire = Wire(work)
    try:
        wire.call(4, "task_done", id="1", if_version=10**400)
        is_error, doc = document(wire.answer(4))
    finally:
        wire.end()
        wire.kill()
    assert is_error and doc["error"]["code"] in ("usage", "version_mismatch"), doc
