"""How the hub client settles answers it did not get (client/sync/retry.py), against a
scripted hub on a real uvicorn: a manifest PUT whose gateway answered 504 after the hub
stored it, one that never landed, one where another manifest is found; ``hub-busy``
(nothing was done) is repeated, ``disk-full`` never."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from sealmem.client.sync.hub import HubTransport
from sealmem.client.sync.hub_answers import HubError
from sealmem.client.sync.transport import ConflictError
from sealmem.crypto import MemberKey
from sealmem.hub.http.server import BackgroundHub
from sealmem.protocol.encoding import b64e
from tests.hub.conftest import PROJECT, TEAM, HubWorld, signed
from tests.hub.test_edge_bodies import _connect, _head, _manifest_path, _wait_reading, edge
from tests.support.asgi_thread import serving

__all__ = ["edge"]  # a fixture, re-exported for pytest

pytestmark = pytest.mark.slow  # a uvicorn server per test
MANIFEST = b"our manifest envelope"


@dataclass
class Scripted:
    """A hub that answers each manifest or chunk PUT with the next of ``puts`` (status, code,
    whether it stores the body first); a GET of the writer's manifests serves what it
    stored (or ``held``).  Every request's method, path and nonce is kept."""

    puts: list[tuple[int, str, bool]]
    held: bytes | None = None
    seen: list[tuple[str, str, bytes]] = field(default_factory=list)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        nonce = next((v for k, v in scope["headers"] if k == b"sealmem-nonce"), b"")
        self.seen.append((scope["method"], scope["path"], nonce))
        headers = [(b"content-type", b"application/json")]
        status, doc = 200, b'{"manifests": []}'
        if scope["method"] == "PUT":
            status, code, stores = self.puts.pop(0) if self.puts else (201, "", True)
            if stores:
                self.held = body
            doc = b'{"ok": true}'
            if status >= 400:
                doc = b'{"error": "%s", "detail": "scripted"}' % code.encode()
                headers.append((b"retry-after", b"0.1"))
        elif self.held is not None:
            doc = b'{"manifests": ["%s"]}' % b64e(self.held).encode()
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": doc})

    def methods(self) -> list[str]:
        return [m for m, _, _ in self.seen]


@pytest.fixture
def key() -> MemberKey:
    return MemberKey.generate()


def run(app: Scripted, key: MemberKey, chunks: dict[str, bytes] | None = None) -> None:
    with serving(app) as url:
        transport = HubTransport(url, TEAM, key, retry_budget_s=5)
        try:
            transport.push(PROJECT, key.kid, 7, MANIFEST, chunks or {})
        finally:
            transport.close()


def test_a_504_after_the_hub_stored_the_manifest_is_settled_as_done(key: MemberKey) -> None:
    app = Scripted([(504, "http-error", True)])
    run(app, key)
    assert app.methods() == ["PUT", "GET"]  # read back, found ours: not sent again


def test_a_manifest_that_did_not_land_is_sent_once_more_signed_afresh(key: MemberKey) -> None:
    app = Scripted([(504, "http-error", False)])
    run(app, key)
    assert app.methods() == ["PUT", "GET", "PUT"]
    puts = [n for m, _, n in app.seen if m == "PUT"]
    assert len(set(puts)) == 2  # a new nonce: the hub would refuse a resent one as a replay
    assert app.held == MANIFEST


def test_a_manifest_lost_twice_gives_up_with_the_lost_answer(key: MemberKey) -> None:
    app = Scripted([(504, "http-error", False), (504, "http-error", False)])
    with pytest.raises(HubError, match=r"publish manifest seq 7.*HTTP 504"):
        run(app, key)
    assert app.methods() == ["PUT", "GET", "PUT", "GET"]


def test_another_manifest_found_on_read_back_is_a_conflict(key: MemberKey) -> None:
    app = Scripted([(504, "http-error", False)], held=b"someone else's manifest")
    with pytest.raises(ConflictError, match="holds another object"):
        run(app, key)
    assert app.methods() == ["PUT", "GET"]


def test_hub_busy_on_a_manifest_is_repeated_without_reading_back(key: MemberKey) -> None:
    app = Scripted([(503, "hub-busy", False)])  # refused before the body: nothing done
    run(app, key)
    assert app.methods() == ["PUT", "PUT"]
    assert app.held == MANIFEST


def test_disk_full_is_never_repeated_and_says_whom_to_tell(key: MemberKey) -> None:
    app = Scripted([(503, "disk-full", False)])
    with pytest.raises(HubError) as refused:
        run(app, key, chunks={"ab" * 32: b"chunk"})  # a chunk PUT, else repeatable
    assert app.methods() == ["PUT"]
    assert "the hub's disk is full; tell its operator" in str(refused.value)
    assert refused.value.code == "disk-full"


def test_a_real_hub_busy_on_a_manifest_did_nothing_and_is_retried(
    edge: tuple[BackgroundHub, HubWorld],
) -> None:
    """On a real hub, alice's one body reader (of two, a quarter each, at least one) is held
    by a stalled body: her manifest PUT is refused hub-busy before its body is read, then
    repeated once the stall is cut off (408), and answered by the verifier itself."""
    hub, world = edge
    alice = world.nodes["alice"].key
    path = _manifest_path(alice.kid)
    with _connect(hub) as stalled:
        stalled.sendall(_head(hub, "PUT", path, signed(alice, "PUT", path), 1000) + b"half")
        _wait_reading(hub, "sealmem_hub_body_reads", 1)
        transport = HubTransport(hub.url, TEAM, alice)
        try:
            with pytest.raises(HubError) as refused:
                transport.push(PROJECT, alice.kid, 5, b"not a manifest", {})
        finally:
            transport.close()
    assert refused.value.code not in ("hub-busy", "replayed")  # the hub read it the 2nd time
    assert refused.value.status in (400, 422)
    assert re.search(r"after [2-6] attempts", str(refused.value))


def test_a_lost_manifest_is_not_sent_again_once_the_sync_budget_is_spent(
    key: MemberKey,
) -> None:
    """The sync's budget ends every repeat, the resend after a read back included."""
    app = Scripted([(504, "http-error", False)])
    with serving(app) as url:
        transport = HubTransport(url, TEAM, key, sync_budget_s=0.0)
        try:
            with transport.syncing(), pytest.raises(HubError, match=r"seq 7.*HTTP 504"):
                transport.push(PROJECT, key.kid, 7, MANIFEST, {})
        finally:
            transport.close()
    assert app.methods() == ["PUT", "GET"]  # read back, not there: the budget says stop


async def _redirects(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """What a proxy that sends http:// to https:// answers every request with."""
    if scope["type"] != "http":
        return
    location = b"https://hub.example" + scope["raw_path"]
    headers = [(b"location", location), (b"content-length", b"0")]
    await send({"type": "http.response.start", "status": 308, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


def test_a_redirect_is_no_success_and_says_to_fix_the_url(key: MemberKey) -> None:
    """Before, any status under 400 was taken as done: chunks and the manifest "pushed"
    to a proxy's redirect, nothing stored anywhere, the push recorded as landed."""
    with serving(_redirects) as url:
        transport = HubTransport(url, TEAM, key)
        try:
            with pytest.raises(HubError) as refused:
                transport.push(PROJECT, key.kid, 7, MANIFEST, {"ab" * 32: b"chunk"})
        finally:
            transport.close()
    assert (refused.value.status, refused.value.code) == (308, "redirect")
    assert "hub.example" not in str(refused.value)  # the hub's words are not repeated
    assert "set the hub URL" in str(refused.value)
