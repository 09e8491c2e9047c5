"""The on-disk form of a member key, plain or sealed with a passphrase.

A key file is canonical JSON (``sealmem.protocol.canonical``) plus one newline::

    {"box_public": B64, "format": "sealmem-member-key", "kid": KID,
     "secret": SECRET, "sign_public": B64, "version": 1}

where ``SECRET`` is either ``{"box_seed": B64, "sign_seed": B64, "type": "plain"}``
or, sealed, ``{"box": B64, "memlimit": N, "opslimit": N, "salt": B64,
"type": "argon2id-secretbox"}``: ``box`` is a SecretBox (XSalsa20-Poly1305,
nonce prefixed) of ``sign_seed || box_seed`` under the key Argon2id derives from
the NFC-normalised UTF-8 passphrase with ``salt``, ``opslimit``, ``memlimit``.
The reader re-derives the public keys and kid from the seeds and refuses a file
whose public fields disagree.  Admin-issued key bundles use the same format.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import tempfile
import unicodedata
from pathlib import Path
from typing import Any, NamedTuple

import nacl.exceptions
import nacl.pwhash.argon2id as argon2id
import nacl.secret

from ..protocol import canonical
from ..protocol.errors import InputError, KeyFileError
from .hashing import random_bytes

__all__ = [
    "KDF_INTERACTIVE",
    "KDF_MODERATE",
    "KDF_SENSITIVE",
    "KEY_FILE_FORMAT",
    "KEY_FILE_VERSION",
    "MAX_KEY_FILE_SIZE",
    "KdfLimits",
    "KeyFileContent",
    "decode_key_file",
    "encode_key_file",
    "read_key_file",
    "write_private_file",
]

KEY_FILE_FORMAT = "sealmem-member-key"
KEY_FILE_VERSION = 1
MAX_KEY_FILE_SIZE = 64 * 1024
_SEED_SIZE = 32
_PLAIN = "plain"
_SEALED = "argon2id-secretbox"


class KdfLimits(NamedTuple):
    """Argon2id cost: ``opslimit`` passes over ``memlimit`` bytes of memory."""

    opslimit: int
    memlimit: int


KDF_INTERACTIVE = KdfLimits(argon2id.OPSLIMIT_INTERACTIVE, argon2id.MEMLIMIT_INTERACTIVE)
KDF_MODERATE = KdfLimits(argon2id.OPSLIMIT_MODERATE, argon2id.MEMLIMIT_MODERATE)
KDF_SENSITIVE = KdfLimits(argon2id.OPSLIMIT_SENSITIVE, argon2id.MEMLIMIT_SENSITIVE)


class KeyFileContent(NamedTuple):
    """What a key file declares: the public part, and the two secret seeds."""

    kid: str
    sign_public: bytes
    box_public: bytes
    sign_seed: bytes
    box_seed: bytes


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _passphrase_bytes(passphrase: str) -> bytes:
    if not passphrase:
        raise InputError("an empty passphrase was refused: choose a non-empty passphrase")
    return unicodedata.normalize("NFC", passphrase).encode("utf-8")


def _derive(passphrase: str, salt: bytes, limits: KdfLimits) -> bytes:
    return argon2id.kdf(
        nacl.secret.SecretBox.KEY_SIZE,
        _passphrase_bytes(passphrase),
        salt,
        opslimit=limits.opslimit,
        memlimit=limits.memlimit,
    )


def encode_key_file(
    content: KeyFileContent,
    *,
    passphrase: str | None,
    kdf: KdfLimits = KDF_MODERATE,
    salt: bytes | None = None,
) -> bytes:
    """The key file bytes for ``content``; sealed when a ``passphrase`` is given."""
    secret: dict[str, Any]
    if passphrase is None:
        secret = {
            "type": _PLAIN,
            "sign_seed": _b64(content.sign_seed),
            "box_seed": _b64(content.box_seed),
        }
    else:
        if problem := _limits_problem(kdf):
            raise InputError(problem)
        salt = random_bytes(argon2id.SALTBYTES) if salt is None else salt
        box = nacl.secret.SecretBox(_derive(passphrase, salt, kdf))
        sealed = box.encrypt(content.sign_seed + content.box_seed)
        secret = {
            "type": _SEALED,
            "opslimit": kdf.opslimit,
            "memlimit": kdf.memlimit,
            "salt": _b64(salt),
            "box": _b64(bytes(sealed)),
        }
    document = {
        "format": KEY_FILE_FORMAT,
        "version": KEY_FILE_VERSION,
        "kid": content.kid,
        "sign_public": _b64(content.sign_public),
        "box_public": _b64(content.box_public),
        "secret": secret,
    }
    return canonical.encode(document) + b"\n"


def _limits_problem(limits: KdfLimits) -> str | None:
    low, high = KDF_INTERACTIVE, KDF_SENSITIVE
    ops, mem = limits
    if low.opslimit <= ops <= high.opslimit and low.memlimit <= mem <= high.memlimit:
        return None
    return (
        f"Argon2id limits (opslimit={limits.opslimit}, memlimit={limits.memlimit}) refused: "
        "they must lie between the INTERACTIVE and SENSITIVE presets"
    )


def _field(obj: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise KeyFileError(f"{where} is corrupt: field {key!r} is missing or not a {kind.__name__}")
    return value


def _bytes_field(obj: dict[str, Any], key: str, size: int | None, where: str) -> bytes:
    text = _field(obj, key, str, where)
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise KeyFileError(f"{where} is corrupt: field {key!r} is not base64") from exc
    if size is not None and len(raw) != size:
        raise KeyFileError(f"{where} is corrupt: field {key!r} is {len(raw)} bytes, not {size}")
    return raw


def decode_key_file(data: bytes, *, passphrase: str | None, where: str) -> KeyFileContent:
    """Parse (and, if sealed, open) key file bytes; ``where`` (``"key file PATH"``) names them."""
    body = data[:-1] if data.endswith(b"\n") else data
    try:
        document = canonical.decode(body)
    except canonical.NonCanonical as exc:
        raise KeyFileError(f"{where} is corrupt: {exc}") from exc
    if not isinstance(document, dict):
        raise KeyFileError(f"{where} is corrupt: it is not a JSON object")
    if document.get("format") != KEY_FILE_FORMAT:
        raise KeyFileError(f"{where} is not a sealmem member key (format {KEY_FILE_FORMAT!r})")
    if document.get("version") != KEY_FILE_VERSION:
        raise KeyFileError(
            f"{where} has key file version {document.get('version')!r}; this sealmem reads "
            f"version {KEY_FILE_VERSION} only (upgrade sealmem)"
        )
    kid = _field(document, "kid", str, where)
    sign_public = _bytes_field(document, "sign_public", 32, where)
    box_public = _bytes_field(document, "box_public", 32, where)
    secret = _field(document, "secret", dict, where)
    kind = secret.get("type")
    if kind == _PLAIN:
        sign_seed = _bytes_field(secret, "sign_seed", _SEED_SIZE, where)
        box_seed = _bytes_field(secret, "box_seed", _SEED_SIZE, where)
    elif kind == _SEALED:
        if not passphrase:
            raise KeyFileError(f"{where} is passphrase-sealed; pass --passphrase")
        limits = KdfLimits(
            _field(secret, "opslimit", int, where), _field(secret, "memlimit", int, where)
        )
        if problem := _limits_problem(limits):
            raise KeyFileError(f"{where} is corrupt: {problem}")
        salt = _bytes_field(secret, "salt", argon2id.SALTBYTES, where)
        sealed = _bytes_field(secret, "box", None, where)
        try:
            seeds = nacl.secret.SecretBox(_derive(passphrase, salt, limits)).decrypt(sealed)
        except (nacl.exceptions.CryptoError, ValueError) as exc:
            raise KeyFileError(f"wrong passphrase for {where}") from exc
        if len(seeds) != 2 * _SEED_SIZE:
            raise KeyFileError(f"{where} is corrupt: the sealed secret has the wrong size")
        sign_seed, box_seed = seeds[:_SEED_SIZE], seeds[_SEED_SIZE:]
    else:
        raise KeyFileError(f"{where} is corrupt: unknown secret type {kind!r}")
    return KeyFileContent(kid, sign_public, box_public, sign_seed, box_seed)


def read_key_file(path: Path) -> bytes:
    """The bytes of the key file at ``path``, refusing missing, unreadable or huge files."""
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_KEY_FILE_SIZE + 1)
    except FileNotFoundError as exc:
        raise KeyFileError(
            f"no key file at {path}; run 'sealmem init' or 'sealmem team join' to create one"
        ) from exc
    except OSError as exc:
        raise KeyFileError(f"key file {path} cannot be read: {exc.strerror}") from exc
    if len(data) > MAX_KEY_FILE_SIZE:
        raise KeyFileError(f"key file {path} is corrupt: larger than {MAX_KEY_FILE_SIZE} bytes")
    return data


def write_private_file(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically with mode 0600 (temp file, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    with contextlib.suppress(OSError):  # directory fsync is not possible on every platform
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
