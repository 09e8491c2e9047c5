"""A keyring whose wrap for this member does not open refuses what needs that key.

An admin-signed keyring passes every rule a verifier can check without the member's box
key; the member finds, when unwrapping, that its wrap is no sealed box for it.  That is
``tampered`` (SPEC "Keyring"), the manifests under that epoch are refused by name, and the
sync goes on: no exception leaves it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from sealmem.protocol.keyring import peek as peek_keyring
from tests.sync.conftest import PROJECT, make_world


@pytest.mark.slow
def test_a_wrap_that_does_not_open_is_tampered_and_the_sync_goes_on(tmp_path: Path) -> None:
    world = make_world(tmp_path, "alice", "bob")
    try:
        adm, alice, bob = (world.nodes[n] for n in ("admin", "alice", "bob"))
        alice.remember("the release branch is cut on Thursdays")
        alice.sync()
        team = adm.t.config.team
        path = world.folder / "sealmem" / team / "keyrings" / PROJECT / f"{1:010d}.json"
        keyring = peek_keyring(path.read_bytes())
        garbage = replace(keyring, wraps={**keyring.wraps, bob.key.kid: bytes(range(80))})
        path.write_bytes(garbage.sign(adm.key))
        summary = bob.sync()
        reasons = {r.reason for r in summary.refused}
        assert "tampered" in reasons, summary.refused
        assert bob.written_by(alice) == 0
        assert bob.t.status()["my_access"][PROJECT]["key"] is False  # said, not raised
    finally:
        world.close()
