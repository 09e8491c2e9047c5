"""Writing memories: create, de-duplicating merge, supersedes, limits, forget, history."""

from __future__ import annotations

import pytest

from sealmem.client import DEFAULT_PROJECT, SHARED_PROJECT, Memory, MemoryStore
from sealmem.protocol.errors import InputError, NotFoundError
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import MAX_CONTENT_CHARS, MAX_KEYWORDS, is_memory_id

from .conftest import FakeClock, OpenStore


def count(store: MemoryStore, table: str = "memories") -> int:
    return int(store.connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


def test_remember_creates_a_valid_record(store: MemoryStore, clock: FakeClock) -> None:
    result = store.remember(
        "  Deploys go through the staging cluster first  ",
        kind="Decision",
        keywords=["deploy", "staging", "deploy", " "],
        importance=0.8,
        project="webshop",
        origin="claude-code",
    )
    rec = result.memory.record
    assert result.created
    assert not result.merged
    assert result.warnings == []
    assert is_memory_id(rec.id)
    assert rec.content == "Deploys go through the staging cluster first"
    assert rec.kind == "decision"
    assert rec.keywords == ("deploy", "staging")
    assert rec.importance == 0.8
    assert rec.project == "webshop"
    assert rec.author == rec.editor == store.author
    assert rec.created_at == rec.hlc.wall
    assert rec.created_at <= clock.now
    assert rec.visibility == "team"
    assert rec.origin == "claude-code"
    assert result.memory.provenance.transport == "local"
    assert result.memory.seen_count == 1
    assert store.get(rec.id) == result.memory
    rec.validate()


def test_default_project_and_private(store: MemoryStore) -> None:
    memory = store.remember("my own shell alias", private=True).memory
    assert memory.project == DEFAULT_PROJECT
    assert memory.record.visibility == "private"


def test_each_write_ticks_the_hlc(store: MemoryStore, clock: FakeClock) -> None:
    stamps = []
    for i in range(3):
        clock.now = 5_000_000_000_000  # a clock stuck on one millisecond
        stamps.append(store.remember(f"memory number {i}").memory.record.hlc)
    assert stamps == sorted(stamps)
    assert len(set(stamps)) == 3
    assert stamps[1] == Hlc(stamps[0].wall, stamps[0].counter + 1)


def test_same_content_merges(store: MemoryStore) -> None:
    first = store.remember(
        "Run the tests with pytest -q", keywords=["pytest"], importance=0.3, project="p"
    )
    second = store.remember(
        "run the tests   with PYTEST -q",
        kind="lesson",
        keywords=["tests", "PyTest"],
        importance=0.7,
        project="p",
    )
    assert second.merged
    assert not second.created
    merged = second.memory
    assert merged.id == first.memory.id
    assert merged.seen_count == 2
    assert merged.record.keywords == ("pytest", "tests")
    assert merged.record.importance == 0.7
    assert merged.kind == "lesson"  # a plain note takes the more specific kind
    assert merged.record.hlc > first.memory.record.hlc
    assert count(store) == 1
    assert [m.record for m in store.history(merged.id)] == [first.memory.record]

    third = store.remember("Run the tests with pytest -q", importance=0.1, project="p")
    assert third.merged
    assert third.memory.seen_count == 3
    assert third.memory.record == merged.record  # nothing new: no new version
    assert len(store.history(merged.id)) == 1


def test_merge_is_per_project(store: MemoryStore) -> None:
    a = store.remember("use uv for installs", project="alpha")
    b = store.remember("use uv for installs", project="beta")
    assert b.created
    assert a.memory.id != b.memory.id


def test_merge_keeps_visibility_and_says_so(store: MemoryStore) -> None:
    store.remember("the staging password lives in vault", project="p")
    again = store.remember("the staging password lives in vault", project="p", private=True)
    assert again.merged
    assert again.memory.record.visibility == "team"
    assert any("stays" in w for w in again.warnings)


def test_forgotten_content_is_not_merged_into(store: MemoryStore) -> None:
    old = store.remember("cache keys use sha1", project="p").memory
    store.forget(old.id, reason="we moved to blake2")
    new = store.remember("cache keys use sha1", project="p")
    assert new.created
    assert new.memory.id != old.id


def test_supersedes_links_and_unknown_id_stores_nothing(store: MemoryStore) -> None:
    old = store.remember("the API listens on port 8000").memory
    new = store.remember("the API listens on port 9000", supersedes=[old.id]).memory
    assert new.record.supersedes == (old.id,)
    links = store.connection.execute("SELECT old_id, new_id FROM supersedes").fetchall()
    assert [tuple(r) for r in links] == [(old.id, new.id)]

    before = count(store)
    hlc_before = store.connection.execute("SELECT value FROM meta WHERE key='hlc'").fetchone()
    missing = "01900000-0000-7000-8000-000000000000"
    with pytest.raises(NotFoundError, match=f"{missing}.*nothing was stored"):
        store.remember("the API listens on port 7000", supersedes=[old.id, missing])
    assert count(store) == before
    hlc_after = store.connection.execute("SELECT value FROM meta WHERE key='hlc'").fetchone()
    assert tuple(hlc_before) == tuple(hlc_after)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"content": ""}, "empty"),
        ({"content": "   \n "}, "empty"),
        ({"content": "x" * (MAX_CONTENT_CHARS + 1)}, f"limit is {MAX_CONTENT_CHARS}"),
        ({"kind": "Not A Kind!"}, "kind"),
        ({"importance": 1.5}, "between 0 and 1"),
        ({"importance": float("nan")}, "between 0 and 1"),
        ({"project": "bad project/name"}, "project"),
        ({"keywords": ["k"] * 1 + [f"k{i}" for i in range(MAX_KEYWORDS)]}, "limit is 32"),
        ({"keywords": ["x" * 65]}, "limit is 64"),
        ({"supersedes": ["not-an-id"]}, "is not a memory id"),
        ({"origin": ""}, "origin"),
    ],
)
def test_bad_input_is_refused_and_nothing_stored(
    store: MemoryStore, kwargs: dict[str, object], message: str
) -> None:
    args: dict[str, object] = {"content": "a fine memory"}
    args.update(kwargs)
    content = args.pop("content")
    with pytest.raises(InputError, match=message):
        store.remember(content, **args)  # type: ignore[arg-type]
    assert count(store) == 0


def test_forget_keeps_a_tombstone_and_purges_history(store: MemoryStore) -> None:
    memory = store.remember("temporary workaround: pin numpy<2", keywords=["numpy"]).memory
    tomb = store.forget(memory.id, reason="numpy 2 works now")
    assert tomb.id == memory.id
    assert tomb.deleted
    assert tomb.content == ""
    assert tomb.record.keywords == ()
    assert tomb.record.delete_reason == "numpy 2 works now"
    assert tomb.record.hlc > memory.record.hlc
    assert store.get(memory.id) == tomb
    assert store.history(memory.id) == []  # the text of older versions goes too
    assert store.recent() == []
    hits = store.connection.execute(
        "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'numpy'"
    ).fetchone()[0]
    assert hits == 0
    with pytest.raises(InputError, match="already forgotten"):
        store.forget(memory.id, reason="again")


def test_forget_needs_a_reason_and_a_known_id(store: MemoryStore) -> None:
    memory = store.remember("something").memory
    with pytest.raises(InputError, match="reason"):
        store.forget(memory.id, reason="  ")
    with pytest.raises(NotFoundError, match="sealmem list"):
        store.forget("01900000-0000-7000-8000-000000000000", reason="gone")
    assert not store.get(memory.id).deleted


def test_forget_drops_the_supersede_links_of_the_forgotten(store: MemoryStore) -> None:
    old = store.remember("use tabs").memory
    new = store.remember("use spaces", supersedes=[old.id]).memory
    store.forget(new.id, reason="the spaces rule was wrong")
    assert store.connection.execute("SELECT COUNT(*) FROM supersedes").fetchone()[0] == 0


def test_get_by_unique_prefix(store: MemoryStore, clock: FakeClock) -> None:
    a = store.remember("alpha").memory
    clock.advance(10_000_000)  # another time prefix
    b = store.remember("beta").memory
    assert store.get(a.id[:13]) == a
    assert store.get(b.id.upper()) == b
    with pytest.raises(NotFoundError):
        store.get("ffffffff-ffff")
    with pytest.raises(InputError):
        store.get("")


def test_recent_scope_and_order(store: MemoryStore) -> None:
    store.remember("one", project="alpha")
    store.remember("two", project="beta")
    store.remember("three", project=SHARED_PROJECT)
    store.remember("four", project="alpha")
    assert [m.content for m in store.recent(project="alpha")] == ["four", "three", "one"]
    assert [m.content for m in store.recent(all_projects=True, limit=2)] == ["four", "three"]
    assert [m.content for m in store.recent(project=SHARED_PROJECT)] == ["three"]
    with pytest.raises(InputError):
        store.recent(limit=0)


def test_history_of_unknown_id(store: MemoryStore) -> None:
    with pytest.raises(NotFoundError):
        store.history("01900000-0000-7000-8000-000000000000")


def test_author_is_persisted_and_validated(open_store: OpenStore) -> None:
    first = open_store().author
    assert open_store().author == first
    assert open_store(author="alice").author == "alice"
    with pytest.raises(InputError, match="member id"):
        open_store(author="Not Valid")


def test_to_dict_is_flat_and_json_ready(store: MemoryStore) -> None:
    import json

    memory = store.remember("json me", keywords=["j"], importance=0.25).memory
    data = memory.to_dict()
    assert data["id"] == memory.id
    assert data["importance"] == 0.25
    assert data["keywords"] == ["j"]
    assert data["seen_count"] == 1
    assert data["provenance"]["transport"] == "local"
    assert json.loads(json.dumps(data)) == data


def test_a_private_repeat_of_a_team_memory_publishes_nothing(store: MemoryStore) -> None:
    team = store.remember("deploys go through the release train", project="p").memory
    again = store.remember(
        "deploys go through the release train",
        project="p",
        private=True,
        keywords=["my-private-word"],
        importance=0.9,
        kind="warning",
    )
    assert again.merged
    after = store.get(team.id)
    assert after.record == team.record  # no new version that a sync would publish
    assert "my-private-word" not in after.record.keywords
    assert after.seen_count == 2


def test_an_overlong_keyword_is_refused_without_echoing_it(store: MemoryStore) -> None:
    token = "sk-" + "A1b2C3d4E5f6G7h8I9j0" * 4
    with pytest.raises(InputError) as refused:
        store.remember("rotate the key", keywords=["ok", token])
    assert token[:12] not in str(refused.value)
    assert "keyword number 2" in str(refused.value)


def test_every_write_returns_the_memory_as_the_store_then_holds_it(store: MemoryStore) -> None:
    def stored(memory: Memory) -> Memory:
        assert store.get(memory.id) == memory
        assert store.get(memory.id).to_dict() == memory.to_dict()
        return memory

    text = "the deploy key lives in the vault"
    first = stored(store.remember(text, keywords=["Vault"], importance=1, private=True).memory)
    stored(store.remember(text, keywords=["deploy"], kind="fact").memory)  # a new version
    stored(store.remember(text).memory)  # seen again: local state only
    stored(store.share(first.id))
    stored(store.set_importance(first.id, 0.25))
    stored(store.remember("the vault moved", supersedes=[first.id[-12:]]).memory)
    stored(store.forget(first.id, reason="  wrong  "))
