"""A roster publication whose keyrings do not fit one body still lands whole.

An admin sends the keyrings that name a new roster inside that roster's publication
(SPEC "Bodies").  When they do not fit the hub's body limit, the client sends the roster
with those that fit (or alone, when the hub's own limit is lower than the protocol's),
then each other keyring by itself once its roster is stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from sealmem.hub.http.app import create_app
from tests.hub.conftest import IN_PROCESS_URL, TEAM, HubWorld, InProcess, hub_config, now_ms

PROJECTS = tuple(f"p{i:02d}" for i in range(40))


@pytest.fixture
def small(tmp_path: Path) -> Iterator[InProcess]:
    """A hub that reads bodies of at most 16 KiB: 40 keyrings do not fit one."""
    data_dir = tmp_path / "hub-data"
    app = create_app(hub_config(data_dir, max_body_bytes=16 * 1024))
    with TestClient(app, base_url=IN_PROCESS_URL) as client:
        yield InProcess(app, client, data_dir)


@pytest.mark.slow
def test_a_team_whose_keyrings_do_not_fit_its_first_roster_registers_whole(
    tmp_path: Path, small: InProcess
) -> None:
    homes = tmp_path / "homes"
    homes.mkdir()
    world = HubWorld(homes, IN_PROCESS_URL, small.transport)
    try:
        admin = world.create(projects=PROJECTS)
        state, refused = admin.t.refresh(admin.t.trusted(), now_ms())
        assert not refused
        assert {p for p, _ in state.keyrings} == set(PROJECTS)
        assert len(small.storage.keyrings(TEAM)) == len(PROJECTS)
    finally:
        world.close()


@pytest.mark.slow  # encodes megabytes
def test_the_keyrings_that_fit_go_with_the_roster_in_order() -> None:
    import json

    from sealmem.client.sync.hub import _fitting
    from sealmem.protocol import hubapi
    from sealmem.protocol.encoding import b64e
    from sealmem.protocol.verify import MAX_KEYRING_BYTES, MAX_ROSTER_BYTES

    roster = bytes(MAX_ROSTER_BYTES)
    keyrings = [(f"p{i}", 1, bytes(MAX_KEYRING_BYTES)) for i in range(3)]
    bundled, later = _fitting(roster, keyrings)
    assert (bundled, later) == (keyrings[:1], keyrings[1:])  # one full-size beside a full roster
    body = json.dumps({"roster": b64e(roster), "keyrings": [b64e(k) for *_, k in bundled]})
    assert len(body) <= hubapi.MAX_ROSTER_PUBLISH_BYTES
    small = [(f"p{i}", 1, bytes(2000)) for i in range(3)]
    assert _fitting(b"{}", small) == (small, [])
