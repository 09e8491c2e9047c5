"""Member keys, public identities, key files and key bundles."""

from __future__ import annotations

import base64
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import nacl.bindings
import pytest

from sealmem.crypto import (
    KDF_INTERACTIVE,
    KDF_MODERATE,
    KdfLimits,
    KeyFileError,
    MemberKey,
    PublicIdentity,
)
from sealmem.protocol import canonical
from sealmem.protocol.errors import InputError
from tests.crypto.tamper import flip_byte

FAST = KDF_INTERACTIVE  # Argon2id MODERATE costs ~1 s and 256 MiB; one test uses it.


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _document(path: Path) -> dict[str, Any]:
    value = canonical.decode(path.read_bytes().rstrip(b"\n"))
    assert isinstance(value, dict)
    return value


def _write_document(path: Path, document: dict[str, Any]) -> None:
    path.write_bytes(canonical.encode(document) + b"\n")


# -- the keys themselves -------------------------------------------------------


def test_seeds_give_the_same_key(alice: MemberKey) -> None:
    again = MemberKey(bytes(range(32)), bytes(range(32, 64)))
    assert again == alice
    assert hash(again) == hash(alice)
    assert (again.kid, again.sign_public, again.box_public) == (
        alice.kid,
        alice.sign_public,
        alice.box_public,
    )


def test_box_key_is_libsodium_seed_keypair(alice: MemberKey) -> None:
    public, _secret = nacl.bindings.crypto_box_seed_keypair(bytes(range(32, 64)))
    assert alice.box_public == public
    assert alice.box_public != alice.sign_public


def test_generate_gives_distinct_keys() -> None:
    a, b = MemberKey.generate(), MemberKey.generate()
    assert a != b
    assert a.kid != b.kid
    assert len(a.sign_public) == len(a.box_public) == 32


@pytest.mark.parametrize(("sign_len", "box_len"), [(31, 32), (32, 33), (0, 0)])
def test_seed_sizes_are_checked(sign_len: int, box_len: int) -> None:
    with pytest.raises(InputError, match="32 bytes"):
        MemberKey(bytes(sign_len), bytes(box_len))


def test_repr_hides_secrets(alice: MemberKey) -> None:
    text = repr(alice) + str(alice) + f"{alice}"
    assert text.startswith(f"MemberKey(kid={alice.kid!r})")
    for seed in (bytes(range(32)), bytes(range(32, 64))):
        for form in (seed.hex(), repr(seed), base64.b64encode(seed).decode(), seed.hex()[:20]):
            assert form not in text


def test_public_identity(alice: MemberKey, bob: MemberKey) -> None:
    ident = alice.public()
    assert ident == PublicIdentity(alice.kid, alice.sign_public, alice.box_public)
    assert ident == PublicIdentity.from_public_keys(alice.sign_public, alice.box_public)
    assert ident != bob.public()
    fpr = ident.fingerprint()
    assert re.fullmatch(r"[a-z2-7]{4}(-[a-z2-7]{4}){4}", fpr), fpr
    assert fpr == alice.public().fingerprint() != bob.public().fingerprint()
    swapped_box = PublicIdentity.from_public_keys(alice.sign_public, bob.box_public)
    assert swapped_box.fingerprint() != fpr  # the box key is covered too


def test_public_identity_refuses_inconsistent_fields(alice: MemberKey, bob: MemberKey) -> None:
    with pytest.raises(InputError, match="member id"):
        PublicIdentity(bob.kid, alice.sign_public, alice.box_public)
    with pytest.raises(InputError, match="32 bytes"):
        PublicIdentity(alice.kid, alice.sign_public, alice.box_public[:31])


# -- key files -----------------------------------------------------------------


def test_plain_key_file_round_trip(tmp_path: Path, alice: MemberKey) -> None:
    path = tmp_path / "keys" / "member.key"  # the parent is created
    alice.save(path)
    assert _mode(path) == 0o600
    assert _mode(path.parent) == 0o700
    assert MemberKey.load(path) == alice
    document = _document(path)
    assert document["format"] == "sealmem-member-key"
    assert document["version"] == 1
    assert document["kid"] == alice.kid
    assert document["secret"]["type"] == "plain"
    assert os.listdir(path.parent) == ["member.key"]  # no temp file left behind


def test_save_replaces_with_mode_0600(tmp_path: Path, alice: MemberKey, bob: MemberKey) -> None:
    path = tmp_path / "member.key"
    path.write_text("old")
    path.chmod(0o644)
    bob.save(path)
    alice.save(path)
    assert _mode(path) == 0o600
    assert MemberKey.load(path) == alice
    assert sorted(os.listdir(tmp_path)) == ["member.key"]


def test_sealed_key_file_round_trip(tmp_path: Path, alice: MemberKey) -> None:
    path = tmp_path / "member.key"
    alice.save(path, passphrase="correct horse", kdf=FAST)
    assert _mode(path) == 0o600
    raw = path.read_bytes()
    for seed in (bytes(range(32)), bytes(range(32, 64))):
        assert base64.b64encode(seed) not in raw
    secret = _document(path)["secret"]
    assert secret["type"] == "argon2id-secretbox"
    assert (secret["opslimit"], secret["memlimit"]) == tuple(FAST)
    assert MemberKey.load(path, passphrase="correct horse") == alice


@pytest.mark.slow
def test_default_kdf_is_moderate(tmp_path: Path, alice: MemberKey) -> None:
    path = tmp_path / "member.key"
    alice.save(path, passphrase="pw")
    secret = _document(path)["secret"]
    assert (secret["opslimit"], secret["memlimit"]) == tuple(KDF_MODERATE)
    assert MemberKey.load(path, passphrase="pw") == alice


def test_passphrase_is_nfc_normalised(tmp_path: Path, alice: MemberKey) -> None:
    path = tmp_path / "member.key"
    alice.save(path, passphrase="caf\u00e9", kdf=FAST)  # precomposed é
    assert MemberKey.load(path, passphrase="cafe\u0301") == alice  # e + combining accent


def test_wrong_passphrase(tmp_path: Path, alice: MemberKey) -> None:
    path = tmp_path / "member.key"
    alice.save(path, passphrase="right", kdf=FAST)
    with pytest.raises(KeyFileError, match=re.escape(f"wrong passphrase for key file {path}")):
        MemberKey.load(path, passphrase="wrong")


@pytest.mark.parametrize("passphrase", [None, ""])
def test_sealed_without_passphrase(
    tmp_path: Path, alice: MemberKey, passphrase: str | None
) -> None:
    path = tmp_path / "member.key"
    alice.save(path, passphrase="right", kdf=FAST)
    with pytest.raises(KeyFileError, match="passphrase-sealed; pass --passphrase"):
        MemberKey.load(path, passphrase=passphrase)


def test_empty_passphrase_is_refused_when_saving(tmp_path: Path, alice: MemberKey) -> None:
    with pytest.raises(InputError, match="empty passphrase"):
        alice.save(tmp_path / "member.key", passphrase="")
    assert not (tmp_path / "member.key").exists()


@pytest.mark.parametrize(
    "limits",
    [KdfLimits(1, KDF_INTERACTIVE.memlimit), KdfLimits(2, 1024), KdfLimits(2**40, 2**40)],
)
def test_out_of_range_limits_are_refused_when_saving(
    tmp_path: Path, alice: MemberKey, limits: KdfLimits
) -> None:
    with pytest.raises(InputError, match="Argon2id limits"):
        alice.save(tmp_path / "member.key", passphrase="pw", kdf=limits)


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(KeyFileError, match=r"no key file at .*sealmem init"):
        MemberKey.load(tmp_path / "absent.key")
    with pytest.raises(KeyFileError, match="cannot be read"):
        MemberKey.load(tmp_path)  # a directory


def _plain(alice: MemberKey, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    path = tmp_path / "member.key"
    alice.save(path)
    return path, _document(path)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


CORRUPTIONS: dict[str, Any] = {
    "wrong-format": lambda d, o: d.update(format="ssh-key"),
    "future-version": lambda d, o: d.update(version=2),
    "no-kid": lambda d, o: d.pop("kid"),
    "kid-of-other-key": lambda d, o: d.update(kid=o.kid),
    "sign-public-of-other-key": lambda d, o: d.update(sign_public=_b64(o.sign_public)),
    "box-public-of-other-key": lambda d, o: d.update(box_public=_b64(o.box_public)),
    "short-public": lambda d, o: d.update(sign_public=_b64(bytes(31))),
    "bad-base64": lambda d, o: d["secret"].update(sign_seed="!!not base64!!"),
    "short-seed": lambda d, o: d["secret"].update(box_seed=_b64(bytes(31))),
    "unknown-secret-type": lambda d, o: d["secret"].update(type="rot13"),
    "secret-not-object": lambda d, o: d.update(secret="plain"),
    "int-as-string": lambda d, o: d["secret"].update(sign_seed=5),
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_corrupt_plain_key_file(
    tmp_path: Path, alice: MemberKey, bob: MemberKey, name: str
) -> None:
    path, document = _plain(alice, tmp_path)
    CORRUPTIONS[name](document, bob)
    _write_document(path, document)
    with pytest.raises(KeyFileError, match=re.escape(f"key file {path}")):
        MemberKey.load(path)


@pytest.mark.parametrize(
    "data",
    [b"", b"not json", b"[1,2]", b'{"a": 1}', b"\xff\xfe", b"{" * 70_000],
    ids=["empty", "text", "array", "non-canonical", "not-utf8", "huge"],
)
def test_garbage_key_file(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "member.key"
    path.write_bytes(data)
    with pytest.raises(KeyFileError, match=r"corrupt|not a sealmem member key"):
        MemberKey.load(path)


def test_reformatted_key_file_is_refused(tmp_path: Path, alice: MemberKey) -> None:
    path, document = _plain(alice, tmp_path)
    path.write_text(json.dumps(document, indent=2))
    with pytest.raises(KeyFileError, match="canonical"):
        MemberKey.load(path)


def test_tampered_sealed_box_reads_as_wrong_passphrase(tmp_path: Path, alice: MemberKey) -> None:
    path = tmp_path / "member.key"
    alice.save(path, passphrase="pw", kdf=FAST)
    document = _document(path)
    box = base64.b64decode(document["secret"]["box"])
    document["secret"]["box"] = _b64(flip_byte(box, -1))
    _write_document(path, document)
    with pytest.raises(KeyFileError, match="wrong passphrase"):
        MemberKey.load(path, passphrase="pw")


def test_sealed_file_with_swapped_public_keys_is_refused(
    tmp_path: Path, alice: MemberKey, bob: MemberKey
) -> None:
    path = tmp_path / "member.key"
    alice.save(path, passphrase="pw", kdf=FAST)
    document = _document(path)
    document.update(kid=bob.kid, sign_public=_b64(bob.sign_public))
    _write_document(path, document)
    with pytest.raises(KeyFileError, match="do not match its secret seeds"):
        MemberKey.load(path, passphrase="pw")


@pytest.mark.slow
@pytest.mark.parametrize(("opslimit", "memlimit"), [(2**40, 2**26), (2, 2**50), (1, 2**26)])
def test_sealed_file_with_absurd_limits_is_refused(
    tmp_path: Path, alice: MemberKey, opslimit: int, memlimit: int
) -> None:
    path = tmp_path / "member.key"
    alice.save(path, passphrase="pw", kdf=FAST)
    document = _document(path)
    document["secret"].update(opslimit=opslimit, memlimit=memlimit)
    _write_document(path, document)
    with pytest.raises(KeyFileError, match="Argon2id limits"):
        MemberKey.load(path, passphrase="pw")


# -- bundles -------------------------------------------------------------------


def test_bundle_round_trip(alice: MemberKey) -> None:
    bundle = alice.export_bundle("hand-over phrase", kdf=FAST)
    assert base64.b64encode(bytes(range(32))) not in bundle
    assert MemberKey.import_bundle(bundle, "hand-over phrase") == alice


def test_bundle_wrong_passphrase_and_corruption(alice: MemberKey) -> None:
    bundle = alice.export_bundle("right", kdf=FAST)
    with pytest.raises(KeyFileError, match="wrong passphrase for key bundle"):
        MemberKey.import_bundle(bundle, "wrong")
    with pytest.raises(KeyFileError, match="key bundle is corrupt"):
        MemberKey.import_bundle(bundle[:-20], "right")


@pytest.mark.slow
def test_bundle_is_a_key_file(tmp_path: Path, alice: MemberKey) -> None:
    path = tmp_path / "issued.key"
    path.write_bytes(alice.export_bundle("pw", kdf=FAST))
    assert MemberKey.load(path, passphrase="pw") == alice


def test_bundle_refuses_empty_passphrase(alice: MemberKey) -> None:
    with pytest.raises(InputError):
        alice.export_bundle("")
