"""A memory written as a Markdown file reads back as the same text, whatever it holds;
its file name is made of safe characters only."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sealmem.client.hosts.sources import from_note, split_front_matter
from sealmem.client.recall.api import MemoryStore
from sealmem.client.store.markdown import file_name, render
from sealmem.client.store.memory import Memory


@pytest.fixture
def memory(tmp_path: Path) -> Memory:
    with MemoryStore.open(tmp_path / "store.db", author="alice") as store:
        return store.remember("a first text", keywords=["db"]).memory


# Text as a memory holds it: stripped, not empty, any characters a string can carry
# (YAML's own marks, '---' lines, '#' headings, controls, line separators).
TEXTS = (
    st.text(
        st.one_of(
            st.sampled_from(list("-#:'\"|>&*!%@`[]{},.?\n\t \r\x1b\x85\u2028\ufeff")),
            st.characters(exclude_categories=("Cs",)),
        ),
        min_size=1,
        max_size=200,
    )
    .map(str.strip)
    .filter(bool)
)


# Keywords as the store keeps them: whitespace runs (line breaks included) made one space.
WORDS = st.lists(
    st.text(min_size=1, max_size=20).map(lambda w: " ".join(w.split())).filter(bool), max_size=4
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=TEXTS, words=WORDS)
def test_render_then_read_gives_the_same_text(memory: Memory, text: str, words: list[str]) -> None:
    record = memory.record.evolve(content=text, keywords=tuple(words))
    rendered = render(replace(memory, record=record))
    front, _ = split_front_matter(rendered)
    assert front["id"] == record.id
    assert front["tags"] == words
    assert from_note(rendered, name="n.md").content == text
    assert re.fullmatch(r"[a-z0-9-]+-[0-9a-f]{12}\.md", file_name(replace(memory, record=record)))


def test_the_front_matter_is_plain_yaml(memory: Memory) -> None:
    front, body = split_front_matter(render(memory))
    assert yaml.safe_load(yaml.safe_dump(front)) == front
    assert set(front) == {
        "title",
        "id",
        "kind",
        "type",
        "project",
        "tags",
        "importance",
        "created",
        "writer",
        "source",
        "visibility",
    }
    assert (front["tags"], front["writer"], front["source"]) == (["db"], "alice", "person")
    assert body.strip() == "a first text"
