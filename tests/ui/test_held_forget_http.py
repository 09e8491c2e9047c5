"""The viewer's review page lists an agent's forget of a shared memory (held by MCP
``forget``): "forget it" forgets the memory, "keep it" drops the request."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from sealmem.client.store import agentwrites
from sealmem.client.store.trust_rows import version_key
from sealmem.client.ui.guard import Secrets

from .conftest import HOSTILE, Seeded
from .test_http import ORIGIN, _store
from .test_http import client as client
from .test_http import secrets as secrets

pytestmark = pytest.mark.slow  # store writes and a viewer: > 0.2 s


def _held(seeded: Seeded, memory_id: str, reason: str) -> None:
    with _store(seeded) as store:
        digest = version_key(store.get(memory_id).record)[4]  # the version the agent saw
        request = agentwrites.HeldForget(memory_id, reason, "mcp:test", store.now(), digest)
        agentwrites.hold_forget(store.connection, request)


def _post(client: TestClient, secrets: Secrets, path: str, memory_id: str) -> None:
    done = client.post(path, data={"id": memory_id, "csrf": secrets.csrf}, headers=ORIGIN)
    assert done.status_code == 303, done.text


def test_keep_then_forget_from_the_page(
    client: TestClient, secrets: Secrets, seeded: Seeded
) -> None:
    _held(seeded, seeded.new, "superseded by <b>the</b> upgrade")
    page = client.get("/captured").text
    assert "an agent asks to forget" in page
    assert "superseded by &lt;b&gt;the&lt;/b&gt; upgrade" in page
    assert "Orders live in PostgreSQL 16" in page
    _post(client, secrets, "/captured/discard", seeded.new)
    with _store(seeded) as store:
        assert not store.get(seeded.new).deleted
        assert agentwrites.held_forgets(store.connection) == {}
    assert "no forget waiting" in client.get("/captured").text

    _held(seeded, seeded.hostile, "noise")
    assert HOSTILE not in client.get("/captured").text  # escaped like every card
    _post(client, secrets, "/captured/accept", seeded.hostile)
    with _store(seeded) as store:
        assert store.get(seeded.hostile).deleted
        assert store.get(seeded.hostile).record.delete_reason == "noise"
        assert agentwrites.held_forgets(store.connection) == {}
