"""Replay every committed vector in protocol/vectors/ through the real code.

The files are the contract (SPEC.md "Test vectors"); ``vectorgen/`` beside this
test writes them (``python -m tests.protocol.vectorgen.generate``).

Chain objects (roster, keyring, manifest, snapshot) go through the verifier;
the building blocks and the objects outside the chain each have a replay below
(SPEC.md "Test vectors" lists the object kinds).  A case with ``output`` also
checks every value the code computes.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from pathlib import Path
from typing import Any

import pytest

from sealmem.client.team.invite import fingerprint_of
from sealmem.crypto import SUITE, ContentKey, MemberKey, padme
from sealmem.crypto.request import (
    body_digest,
    body_matches,
    request_message,
    sign_request,
    verify_request,
)
from sealmem.protocol import canonical, hubapi, reasons
from sealmem.protocol.admission import InviteRecord, check_request_against_invite
from sealmem.protocol.bases import parsed_base, rebuild
from sealmem.protocol.checkpoint import accept_checkpoint
from sealmem.protocol.device_invite import (
    check_device_admission,
    read_device_invite,
    read_device_join,
)
from sealmem.protocol.encoding import b64d, b64e, need_b64, object_hash
from sealmem.protocol.errors import BadSignatureError, DecryptionError, ProtocolError, Rejected
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.invite import read_invite, read_join_request
from sealmem.protocol.merge import merge_many
from sealmem.protocol.names import name_skeleton
from sealmem.protocol.private import PrivateState, accept_member_keyring, accept_private_manifest
from sealmem.protocol.private_trust import accept_trust, open_trust
from sealmem.protocol.record import Record
from sealmem.protocol.settings import DEFAULTS
from sealmem.protocol.snapshot import bucket_count, bucket_of
from sealmem.protocol.state import TrustedState
from sealmem.protocol.verify import (
    accept_keyring,
    accept_manifest,
    accept_roster,
    open_snapshot,
    read_snapshot,
)
from tests.protocol.vectorgen.basics import NOW, TEAM
from tests.protocol.vectorgen.generate import VECTORS
from tests.protocol.vectorgen.own_chain import replay as replay_own_chain
from tests.protocol.vectorgen.sizes import BIG

# The reader's clock for snapshot vectors that name none: the generator's NOW + 1 minute.
READER_NOW = NOW + 60_000
FILES = sorted(VECTORS.glob("*.json"))
ACCEPT = {"roster": accept_roster, "keyring": accept_keyring, "manifest": accept_manifest}


KINDS = {
    "roster", "keyring", "manifest", "snapshot", "canonical", "kid", "object-hash", "base64",
    "padme", "unpad", "bucket", "invite", "join", "admission", "request", "merge",
    "checkpoint", "record", "skeleton", "own-chain", "device-invite", "device-join",
    "device-admission", "member-keyring", "private-snapshot", "private-trust",
}  # fmt: skip
TRUSTED_KINDS = {
    "roster", "keyring", "manifest", "snapshot", "checkpoint", "member-keyring", "private-snapshot",
    "private-trust",
}  # fmt: skip


def derive(obj: dict[str, Any]) -> dict[str, Any]:
    """The values a derivation case computes, or ``Rejected`` for a refused parse case."""
    kind = obj["kind"]
    if kind == "canonical":
        try:
            canonical.decode(b64d(obj["data"]))
        except canonical.NonCanonical as exc:
            raise Rejected(reasons.NOT_CANONICAL, str(exc)) from exc
        return {}
    if kind == "kid":
        key = MemberKey(b64d(obj["sign_seed"]), b64d(obj["box_seed"]))
        box_secret = hashlib.sha512(b64d(obj["box_seed"])).digest()[:32]
        return {
            "sign_public": b64e(key.sign_public), "box_secret": b64e(box_secret),
            "box_public": b64e(key.box_public), "kid": key.kid,
            "fingerprint": key.public().fingerprint(),
        }  # fmt: skip
    if kind == "object-hash":
        body = canonical.decode(b64d(obj["body"]))
        return {"hash": object_hash(SUITE, obj["hash_kind"], body)}
    if kind == "base64":
        return {"hex": need_b64(obj["text"], "text").hex()}
    if kind == "padme":
        return {"padded": [padme(n) for n in obj["lengths"]]}
    if kind == "unpad":
        try:
            return {"content": b64e(SUITE.unpad(b64d(obj["data"])))}
        except DecryptionError as exc:
            raise Rejected(reasons.TAMPERED, str(exc)) from exc
    if kind == "bucket":
        return {
            "counts": [bucket_count(n, prev) for n, prev in obj["counts"]],
            "of": [bucket_of(SUITE, obj["id"], b) for b in obj["buckets"]],
        }
    if kind == "invite":
        invite = read_invite(SUITE, b64d(obj["data"]), now_ms=obj["now_ms"])
        return {
            "root_fingerprint": fingerprint_of(invite.root_public, invite.root_box_public),
            "invite_id": invite.invite_id, "expires_at": invite.expires_at,
            "for": invite.for_name,
        }  # fmt: skip
    if kind == "join":
        request = read_join_request(SUITE, b64d(obj["data"]), TEAM, filed_as=obj.get("filed_as"))
        return {
            "kid": request.kid, "invite_id": request.invite_id,
            "fingerprint": fingerprint_of(request.sign_public, request.box_public),
        }  # fmt: skip
    if kind == "admission":
        request = read_join_request(SUITE, b64d(obj["data"]), TEAM)
        registry = {r.invite_id: r for r in map(InviteRecord.from_json, obj["registry"])}
        check_request_against_invite(request, registry.get(request.invite_id), obj["now_ms"])
        return {}
    if kind == "device-invite":
        invite = read_device_invite(SUITE, b64d(obj["data"]), now_ms=obj["now_ms"])
        return {"member": invite.member, "name": invite.name, "invite_id": invite.invite_id}
    if kind in ("device-join", "device-admission"):
        join = read_device_join(SUITE, b64d(obj["data"]), TEAM)
        if kind == "device-admission":
            state = TrustedState.pin(SUITE, TEAM, b64d(obj["root_public"]))
            for data in obj["rosters"]:
                state, _ = accept_roster(SUITE, state, b64d(data))
            assert state.roster is not None
            check_device_admission(join, state.roster, obj["now_ms"])
        return {"kid": join.kid, "member": join.member, "name": join.name}
    if kind == "request":
        return replay_request(obj)
    if kind == "merge":
        return replay_merge(obj)
    if kind == "record":
        try:
            return {"source": Record.from_wire(obj["data"]).written_by}
        except ProtocolError as exc:
            raise Rejected(reasons.MALFORMED, str(exc)) from exc
    if kind == "own-chain":
        return replay_own_chain(obj)
    if kind == "skeleton":
        first, second = obj["names"]
        return {"clash": name_skeleton(first) == name_skeleton(second)}
    raise AssertionError(f"unknown vector kind {kind!r}")


def replay_request(obj: dict[str, Any]) -> dict[str, Any]:
    """The signature over the digest header (the body's digest when a case has none),
    then the body against that digest."""
    body = b64d(obj["body"])
    digest = obj.get("digest", body_digest(body))
    args = (obj["method"], obj["target"], digest, obj["time"], obj["nonce"])
    try:
        verify_request(b64d(obj["sign_public"]), *args, obj["request_kid"], b64d(obj["signature"]))
    except BadSignatureError as exc:
        raise Rejected(reasons.BAD_SIGNATURE, str(exc)) from exc
    if not body_matches(digest, body):
        raise Rejected(hubapi.DIGEST_MISMATCH, "the body does not hash to the digest header")
    headers = {
        "sealmem-kid": obj["request_kid"], "sealmem-time": str(obj["time"]),
        "sealmem-nonce": obj["nonce"], "sealmem-signature": obj["signature"],
    }  # fmt: skip
    if "digest" in obj:
        headers[hubapi.HEADER_DIGEST] = digest
    return {"message": b64e(request_message(*args, obj["request_kid"])), "headers": headers}


def replay_merge(obj: dict[str, Any]) -> dict[str, Any]:
    state = {r.id: r for r in map(Record.from_wire, obj["state"])}
    floors = {k: v / 1000 for k, v in obj["floors"].items()}
    result = merge_many(
        state,
        [Record.from_wire(r) for r in obj["incoming"]],
        now_ms=obj["now_ms"],
        clock=Hlc.from_wire(obj["clock"]),
        floors=floors,
    )
    return {
        "winners": {k: v.to_wire() for k, v in sorted(result.winners.items())},
        "floors": {k: round(v * 1000) for k, v in sorted(result.floors.items())},
        "changed": list(result.changed),
        "skipped": [[s.record.id, s.reason] for s in result.skipped],
        "clock": result.clock.to_wire(),
    }


def object_bytes(obj: dict[str, Any]) -> bytes:
    """A case object's bytes: ``data``, or ``data_zlib`` inflated (an object of megabytes,
    given compressed: SPEC "Test vectors")."""
    if "data_zlib" in obj:
        return zlib.decompress(b64d(obj["data_zlib"]))
    return b64d(obj["data"])


def _offered(bases: list[str]) -> Any:
    """The rebuild a manifest is accepted with: from the first of ``bases`` (envelopes)
    whose body hashes to the delta's ``base.hash`` (one that does not parse is passed over)."""
    offered = [b for b in (parsed_base(SUITE, b64d(text)) for text in bases) if b is not None]
    return lambda m: rebuild(SUITE, m, offered)


def accept_object(state: TrustedState, obj: dict[str, Any]) -> TrustedState:
    """``state`` with a setup step or chain object (roster, keyring, manifest) accepted: a
    manifest in the slot it names, with its ``bases`` offered."""
    data = object_bytes(obj)
    if obj["kind"] != "manifest":
        return ACCEPT[obj["kind"]](SUITE, state, data)[0]  # type: ignore[operator,no-any-return]
    where = {k: obj[k] for k in ("project", "writer") if k in obj}
    offered = _offered(obj.get("bases", []))
    return accept_manifest(SUITE, state, data, **where, rebuild=offered)[0]


def replay(case: dict[str, Any]) -> int | dict[str, Any] | None:
    """Run a case; return the record count for an opened snapshot, or derived values."""
    inputs = case["inputs"]
    if "data_zlib" in inputs["object"]:
        inputs = {
            **inputs,
            "object": {**inputs["object"], "data": b64e(object_bytes(inputs["object"]))},
        }
    if inputs["object"]["kind"] not in TRUSTED_KINDS:
        assert not inputs["setup"]
        return derive(inputs["object"])
    state = TrustedState.pin(SUITE, inputs["team"], b64d(inputs["root_public"]))
    private = PrivateState()
    for i, step in enumerate(inputs["setup"]):
        try:
            if step["kind"] == "member-keyring":
                private, _ = accept_member_keyring(SUITE, state, private, object_bytes(step))
            else:
                state = accept_object(state, step)
        except Rejected as exc:  # a broken setup must not pass as the expected rejection
            pytest.fail(f"setup step {i} ({step['kind']}) was refused: {exc}")
    obj = inputs["object"]
    data = b64d(obj["data"])
    if obj["kind"] == "member-keyring":
        accept_member_keyring(SUITE, state, private, data)
        return None
    if obj["kind"] == "private-trust":
        found = accept_trust(
            SUITE, state, private, data, member=obj["member"], writer=obj["writer"],
            held_seq=obj.get("held_seq", 0),
        )  # fmt: skip
        return {"entries": len(open_trust(found, ContentKey(b64d(obj["content_key"]))))}
    if obj["kind"] == "private-snapshot":
        _, manifest = accept_private_manifest(SUITE, state, private, data, member=obj["member"])
        return _open(case, obj, manifest)
    if obj["kind"] == "checkpoint":
        now = obj["now_ms"]
        previous = obj.get("previous")
        before = (
            None
            if previous is None
            else accept_checkpoint(SUITE, state, b64d(previous), None, now_ms=now)
        )
        accept_checkpoint(SUITE, state, data, before, now_ms=now)
        return None
    if obj["kind"] == "keyring":
        _, keyring = accept_keyring(SUITE, state, data)
        if "reader" in obj:
            seeds = obj["reader"]
            member = MemberKey(b64d(seeds["sign_seed"]), b64d(seeds["box_seed"]))
            if member.kid not in keyring.wraps:  # valid: this reader simply holds no key
                return None
            keyring.open_key(member.kid, lambda wrap: ContentKey.unwrap(wrap, member))
        return None
    if obj["kind"] == "roster":  # derived: the periods a reader applies (team's or default)
        _, roster = accept_roster(SUITE, state, data)
        return {name: roster.settings.effective(name) for name in DEFAULTS}
    where = {k: obj[k] for k in ("project", "writer") if k in obj}
    offered = _offered(obj.get("bases", []))
    state, manifest = accept_manifest(SUITE, state, data, **where, rebuild=offered)
    if obj["kind"] == "manifest":
        return None
    return _open(case, obj, manifest)


def _open(case: dict[str, Any], obj: dict[str, Any], manifest: Any) -> int | dict[str, Any]:
    """Open the chunks of an accepted (team or private) snapshot vector, rebuilt from the
    ``bases`` it offers."""
    manifest = _offered(obj.get("bases", []))(manifest)
    chunks = {cid: b64d(text) for cid, text in obj["chunks"].items()}
    key = ContentKey(b64d(obj["content_key"]))
    now = obj.get("now_ms", READER_NOW)
    if isinstance(case["expected"], dict) and "partial" in case["expected"]:
        read = read_snapshot(SUITE, key, manifest, chunks, now_ms=now)
        holes = [{"bucket": h.ref.bucket, "reason": h.reason} for h in read.holes]
        return {"records": len(read.records), "holes": holes}
    return len(open_snapshot(SUITE, key, manifest, chunks, now_ms=now))


def test_there_are_enough_vectors_and_every_reason_is_covered() -> None:
    assert len(FILES) >= 40
    expected = [json.loads(f.read_text())["expected"] for f in FILES]
    covered = {e["reject"] for e in expected if isinstance(e, dict) and "reject" in e}
    covered |= {  # the reasons a partial read leaves a hole for
        h["reason"]
        for e in expected
        if isinstance(e, dict)
        for h in e.get("partial", {}).get("holes", [])
    }
    assert set(reasons.REASONS) <= covered, set(reasons.REASONS) - covered
    kinds = {json.loads(f.read_text())["inputs"]["object"]["kind"] for f in FILES}
    assert kinds == KINDS


def test_a_request_vector_matches_the_headers_the_client_sends() -> None:
    case = json.loads((VECTORS / "request-digest-accept.json").read_text(encoding="utf-8"))
    obj = case["inputs"]["object"]
    key = MemberKey(b"\x02" * 32, b"\x66" * 32)
    assert b64e(key.sign_public) == obj["sign_public"]
    headers = sign_request(
        key, obj["method"], obj["target"], b64d(obj["body"]), now_ms=obj["time"],
        nonce=b64d(obj["nonce"]),
    )  # fmt: skip
    assert headers == case["output"]["headers"]


def _params(files: list[Path]) -> list[Any]:
    """One parameter per file; the few that take seconds to replay are marked slow."""
    slow = [pytest.mark.slow]
    return [pytest.param(f, id=f.stem, marks=slow if f.stem in BIG else []) for f in files]


@pytest.mark.parametrize("path", _params(FILES))
def test_vector(path: Path) -> None:
    case = json.loads(path.read_text(encoding="utf-8"))
    assert case["description"]
    expected = case["expected"]
    if expected == "accept":
        result = replay(case)
        if "records" in case:
            assert result == case["records"]
        if "output" in case:
            assert isinstance(result, dict)
            assert {k: result[k] for k in case["output"]} == case["output"]
        return
    if "partial" in expected:  # read in part: the chunks that verify, and the holes
        assert replay(case) == {"records": case["records"], **expected["partial"]}
        return
    with pytest.raises(Rejected) as info:
        replay(case)
    assert info.value.reason == expected["reject"], info.value.detail


SNAPSHOT_REFUSALS = [
    f
    for f in FILES
    if json.loads(f.read_text(encoding="utf-8"))["inputs"]["object"]["kind"] == "snapshot"
    and "reject" in json.loads(f.read_text(encoding="utf-8"))["expected"]
]


@pytest.mark.parametrize("path", _params(SNAPSHOT_REFUSALS))
def test_a_partial_read_refuses_what_the_writer_signed(path: Path) -> None:
    """Only a missing chunk or one whose bytes are not its id is a hole: every snapshot the
    vectors refuse is refused as a whole by a reader that reads in part too."""
    case = json.loads(path.read_text(encoding="utf-8"))
    case["expected"] = {"partial": {"holes": []}}  # replay through read_snapshot
    with pytest.raises(Rejected) as info:
        replay(case)
    assert info.value.reason == json.loads(path.read_text())["expected"]["reject"]
