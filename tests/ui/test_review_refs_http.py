"""The viewer's review page with a teammate's memory and another's proposal to edit it
(one memory id, two versions): each form names its own version."""

from __future__ import annotations

import re

from starlette.testclient import TestClient

from sealmem.client.store import trust_rows
from sealmem.client.ui.guard import Secrets
from tests.hosts.test_review_refs import _queue

from .conftest import Seeded
from .test_http import ORIGIN, _store
from .test_http import client as client
from .test_http import secrets as secrets


def test_each_form_names_its_own_version(
    client: TestClient, secrets: Secrets, seeded: Seeded
) -> None:
    with _store(seeded) as store:
        memory_id, bob, _ = _queue(store)
    page = client.get("/captured").text
    posted = re.findall(r'action="/captured/accept">.*?name="id" value="([^"]+)"', page)
    ours = [value for value in posted if value.startswith(memory_id)]
    assert len(ours) == 2
    assert len(set(ours)) == 2
    bobs = next(value for value in ours if value.endswith("@" + bob.editor[:8]))
    done = client.post("/captured/accept", data={"id": bobs, "csrf": secrets.csrf}, headers=ORIGIN)
    assert done.status_code == 303
    with _store(seeded) as store:
        verdicts = trust_rows.verdicts(store.connection)
    assert verdicts == {trust_rows.version_key(bob): "accepted"}
