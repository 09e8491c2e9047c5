"""Replay every committed vector in protocol/vectors/ through the real verifier."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sealmem.crypto import SUITE, ContentKey, MemberKey
from sealmem.protocol import reasons
from sealmem.protocol.encoding import b64d
from sealmem.protocol.errors import Rejected
from sealmem.protocol.state import TrustedState
from sealmem.protocol.verify import accept_keyring, accept_manifest, accept_roster, open_snapshot

VECTORS = Path(__file__).resolve().parents[2] / "protocol" / "vectors"
# The reader's clock for snapshot vectors that name none: the generator's NOW + 1 minute.
READER_NOW = 1_760_000_060_000
FILES = sorted(VECTORS.glob("*.json"))
ACCEPT = {"roster": accept_roster, "keyring": accept_keyring, "manifest": accept_manifest}


def replay(case: dict[str, Any]) -> int | None:
    """Run a case; return the record count for an opened snapshot."""
    inputs = case["inputs"]
    state = TrustedState.pin(SUITE, inputs["team"], b64d(inputs["root_public"]))
    for i, step in enumerate(inputs["setup"]):
        try:
            state, _ = ACCEPT[step["kind"]](SUITE, state, b64d(step["data"]))  # type: ignore[operator]
        except Rejected as exc:  # a broken setup must not pass as the expected rejection
            pytest.fail(f"setup step {i} ({step['kind']}) was refused: {exc}")
    obj = inputs["object"]
    data = b64d(obj["data"])
    if obj["kind"] == "keyring":
        _, keyring = accept_keyring(SUITE, state, data)
        if "reader" in obj:
            seeds = obj["reader"]
            member = MemberKey.from_seeds(b64d(seeds["sign_seed"]), b64d(seeds["box_seed"]))
            keyring.check_key(ContentKey.unwrap(keyring.wrap_for(member.kid), member))
        return None
    if obj["kind"] == "roster":
        accept_roster(SUITE, state, data)
        return None
    where = {k: obj[k] for k in ("project", "writer") if k in obj}
    state, manifest = accept_manifest(SUITE, state, data, **where)
    if obj["kind"] == "manifest":
        return None
    chunks = {cid: b64d(text) for cid, text in obj["chunks"].items()}
    key = ContentKey.from_bytes(b64d(obj["content_key"]))
    return len(open_snapshot(SUITE, key, manifest, chunks, now_ms=obj.get("now_ms", READER_NOW)))


def test_there_are_enough_vectors_and_every_reason_is_covered() -> None:
    assert len(FILES) >= 40
    expected = [json.loads(f.read_text())["expected"] for f in FILES]
    covered = {e["reject"] for e in expected if isinstance(e, dict)}
    assert set(reasons.REASONS) <= covered, set(reasons.REASONS) - covered
    kinds = {json.loads(f.read_text())["inputs"]["object"]["kind"] for f in FILES}
    assert kinds == {"roster", "keyring", "manifest", "snapshot"}


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_vector(path: Path) -> None:
    case = json.loads(path.read_text(encoding="utf-8"))
    assert case["description"]
    expected = case["expected"]
    if expected == "accept":
        count = replay(case)
        if "records" in case:
            assert count == case["records"]
        return
    with pytest.raises(Rejected) as info:
        replay(case)
    assert info.value.reason == expected["reject"], info.value.detail
