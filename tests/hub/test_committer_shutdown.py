"""A hub process stopped with SIGTERM while PUTs run through the committer (small
chunks) and worker threads (chunks over the batch size): it exits cleanly and soon
(every queued write answered or failed, no future left waiting), no PUT is answered
with a 500, and after a restart every chunk it acknowledged is there."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from sealmem.client.sync.hub import HubTransport
from sealmem.crypto import SUITE, MemberKey
from sealmem.hub.routes import BATCHED_CHUNK_BYTES
from sealmem.hub.server import free_port
from sealmem.protocol.snapshot import chunk_id

from .conftest import PROJECT, TEAM, TOKEN, HubWorld, signed, start_hub_process


@pytest.mark.slow
def test_sigterm_under_uploads_exits_cleanly_and_keeps_every_acknowledged_chunk(
    tmp_path: Path,
) -> None:
    data, port = tmp_path / "hub-data", free_port()
    url = f"http://127.0.0.1:{port}"
    proc: subprocess.Popen[bytes] = start_hub_process(data, port)
    homes = tmp_path / "homes"
    homes.mkdir()
    w = HubWorld(homes, url, lambda k: HubTransport(url, TEAM, k, operator_token=TOKEN))
    acked: dict[tuple[str, str], bytes] = {}
    statuses: set[int] = set()
    lock, stop = threading.Lock(), threading.Event()

    def upload(key: MemberKey, j: int) -> None:
        with httpx.Client(base_url=url, timeout=30) as client:
            i = 0
            while not stop.is_set():
                body = f"chunk {i} of uploader {j} ".encode() * 8
                if j == 0 and i % 4 == 0:  # a large one now and then: a worker thread
                    body = body * (BATCHED_CHUNK_BYTES // len(body) + 1)
                cid = chunk_id(SUITE, body)
                path = f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{key.kid}/{cid}"
                try:
                    r = client.put(path, headers=signed(key, "PUT", path, body), content=body)
                except httpx.HTTPError:
                    return  # the hub is gone
                with lock:
                    statuses.add(r.status_code)
                    if r.status_code == 201:
                        acked[(key.kid, cid)] = body
                i += 1

    try:
        w.create()
        members = w.join("alice", "bob")
        threads = [threading.Thread(target=upload, args=(members[j % 2].key, j)) for j in range(12)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 60
        while len(acked) < 200 and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)  # uploads in flight, some queued for the committer
        code = proc.wait(timeout=30)  # uvicorn's graceful 3 s, then the lifespan's end
        stop.set()
        for t in threads:
            t.join(30)
        assert code in (0, -signal.SIGTERM)  # uvicorn raises the signal again once done
        assert len(acked) >= 200
        assert 500 not in statuses, statuses
        proc = start_hub_process(data, port)
        keys = {m.key.kid: m.key for m in members}
        with httpx.Client(base_url=url, timeout=10) as client:
            for (kid, cid), body in sorted(acked.items()):
                path = f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{kid}/{cid}"
                r = client.get(path, headers=signed(keys[kid], "GET", path))
                assert r.status_code == 200, (cid, r.status_code, r.text)
                assert r.content == body
    finally:
        stop.set()
        w.close()
        proc.kill()
        proc.wait()
