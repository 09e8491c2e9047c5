"""Write ``hub-v1/``: a hub data directory made by the first hub (schema version 1).

Run it with the code of that hub (commit c8031a9) importable as ``sealmem``::

    git archive c8031a9 | tar -x -C /tmp/v1/src
    mkdir -p /tmp/v1/ns/sealmem
    for p in client hub crypto protocol; do ln -s /tmp/v1/src/$p /tmp/v1/ns/sealmem/$p; done
    cd /tmp/v1/src && PYTHONPATH=/tmp/v1/ns:/tmp/v1/src python THIS_FILE OUT_DIR

Two teams on one hub (so the old global cursor interleaves them), members that
pushed two rounds of snapshots, and a pending join request.

``hub-v2/`` is the same script run the same way with the code of commit
1eac825 (schema version 2: the nonce table still in ``hub.db``).
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

from starlette.testclient import TestClient

from sealmem.client.sync.hub import HubTransport
from sealmem.client.team.admin import invite
from sealmem.client.team.invite import make_join_request, read_invite
from sealmem.hub.http.app import create_app
from tests.hub.conftest import IN_PROCESS_URL, TOKEN, HubWorld, hub_config


def _now() -> int:
    return time.time_ns() // 1_000_000


def main(out: Path) -> None:
    work = out.parent / (out.name + "-work")
    shutil.rmtree(work, ignore_errors=True)
    data = work / "hub-data"
    app = create_app(hub_config(data))
    with TestClient(app, base_url=IN_PROCESS_URL) as client:
        worlds = []
        for team in ("acme-one", "acme-two"):
            homes = work / team
            homes.mkdir(parents=True)

            def transport(key, team=team):  # type: ignore[no-untyped-def]
                return HubTransport(IN_PROCESS_URL, team, key, operator_token=TOKEN, client=client)

            world = HubWorld(homes, IN_PROCESS_URL, transport, team=team)
            world.create()
            world.join("alice", "bob")
            worlds.append(world)
        for round_ in range(2):
            for world in worlds:
                for name in ("alice", "bob"):
                    world.nodes[name].remember(f"{world.team} {name} note {round_}")
                world.sync_all(1)
        one = worlds[0]
        inv = read_invite(invite(one.nodes["admin"].t, _now()), now=_now())
        carol = one.node("carol")
        request = make_join_request(
            carol.key, team=one.team, name="carol", invite_id=inv.invite_id, now=_now()
        )
        one.nodes["alice"].t.transport.post_request(carol.key.kid, request)
        for world in worlds:
            world.close()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    shutil.copy(data / "hub.db", out / "hub.db")
    shutil.copytree(data / "blobs", out / "blobs")
    shutil.rmtree(work)


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve())
