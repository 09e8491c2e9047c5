"""``list`` and ``show`` as a new user read them: ``list`` said "no memories yet" with
memories in other projects; ``show`` of a superseded memory did not say so, and its
``--json`` had ``verified: true`` beside ``provenance.verified: false``; ``list`` did not
mark private memories."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.support.cli import Run


def test_list_names_the_projects_that_hold_memories(cli: Callable[..., Run], home: Path) -> None:
    assert cli("init").code == 0
    assert "no memories yet" in cli("list").out  # truly empty
    for n, project in enumerate(("billing", "billing", "infra")):
        assert cli("remember", f"lesson {n} for {project}", "-p", project).code == 0
    shown = cli("list")  # run in webshop
    assert shown.code == 0
    assert "no memories yet" not in shown.out
    assert "no memories in project 'webshop'" in shown.out
    assert "billing (2), infra (1)" in shown.out
    assert "--all-projects" in shown.out


def test_show_says_superseded_and_whose_verification_is_which(
    cli: Callable[..., Run], home: Path
) -> None:
    old = cli("remember", "Orders live in PostgreSQL 14", "--json").json()["memory"]["id"]
    new = cli("remember", "Orders live in PostgreSQL 16", "--supersedes", old, "--json")
    new_id = new.json()["memory"]["id"]
    text = cli("show", old).out
    assert f"SUPERSEDED by {new_id}" in text
    doc = cli("show", old, "--json").json()
    assert [d["id"] for d in doc["superseded_by"]] == [new_id]
    assert "verified" not in doc  # no bare flag beside provenance.verified
    assert doc["writer_verified"] is True  # written here
    assert doc["provenance"]["verified"] is False  # no snapshot signature checked
    assert cli("show", new_id, "--json").json()["superseded_by"] == []
    hits = cli("recall", "orders postgresql", "--json").json()
    assert all("verified" not in h and "writer_verified" in h for h in hits["hits"])
    # one shape for superseded_by: the superseding memories as documents, both commands
    (hit,) = [h for h in hits["hits"] if h["id"] == old]
    assert hit["superseded_by"] == doc["superseded_by"]
    assert doc["superseded_by"][0]["content"] == "Orders live in PostgreSQL 16"


def test_list_marks_private_memories(cli: Callable[..., Run], home: Path) -> None:
    assert cli("remember", "my own scratch note", "--private").code == 0
    assert cli("remember", "a note for the team").code == 0
    rows = cli("list").out.splitlines()
    assert any("(private) my own scratch note" in row for row in rows), rows
    assert not any("(private) a note for the team" in row for row in rows), rows


def test_a_refusal_with_json_is_a_json_document(cli: Callable[..., Run], home: Path) -> None:
    missing = cli("show", "01900000-0000-7000-8000-000000000000", "--json")
    assert missing.code == 1
    assert "no memory" in missing.json()["error"]  # stdout used to be empty
    assert missing.err.startswith("error: ")


def test_help_names_what_a_value_is(cli: Callable[..., Run], home: Path) -> None:
    remember = cli("remember", "--help").out
    assert "Usage: sealmem remember [OPTIONS] TEXT\n" in remember  # typer wrote {TEXT}
    assert "--supersedes ID " in remember
    assert "--importance 0..1 " in remember
    approve = cli("admin", "approve", "--help").out
    assert "--as NAME " in approve
    assert "[OPTIONS] [NAME|KID]...\n" in approve
    accept = cli("captured", "accept", "--help").out
    assert "[OPTIONS] [ID...]\n" in accept
