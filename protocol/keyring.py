"""The keyring (DESIGN §4): one project epoch's content key, wrapped per reader.

Fields and update rules: SPEC.md "Keyring".  A reader checks ``key_id`` against the
key it unwraps (:meth:`Keyring.check_key`); unwrapping needs a member's secret key, so
it lives in ``sealmem.crypto`` (``ContentKey.unwrap(keyring.wraps[kid], member_key)``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from . import reasons
from .encoding import (
    HEX_HASH_RE,
    KID_RE,
    b64e,
    exact_keys,
    need_b64,
    need_dict,
    need_int,
    need_str,
)
from .envelope import seal, unpack
from .errors import DecryptionError, InputError, Rejected
from .record import PROJECT_RE
from .roster import MAX_MEMBERS, TEAM_RE, Roster
from .suite import Signer, Wrapper

_Key = TypeVar("_Key", bound=Wrapper)

__all__ = [
    "KEYRING_FORMAT",
    "MAX_KEYRING_BYTES",
    "MAX_WRAP_BYTES",
    "Keyring",
    "build_keyring",
    "extend_keyring",
    "open_wrap",
    "parse_wraps",
    "peek",
]

KEYRING_FORMAT = "sealmem/keyring/v1"
MAX_KEYRING_BYTES = 1024 * 1024  # one signed keyring envelope
MAX_WRAP_BYTES = 256  # a SealedBox of a 32-byte key is 80 bytes
_BODY_KEYS = frozenset({"format", "team", "project", "epoch", "roster_version", "key_id", "wraps"})


@dataclass(frozen=True, slots=True)
class Keyring:
    team: str
    project: str
    epoch: int
    roster_version: int
    wraps: Mapping[str, bytes]
    key_id: str

    def to_body(self) -> dict[str, Any]:
        return {
            "format": KEYRING_FORMAT,
            "team": self.team,
            "project": self.project,
            "epoch": self.epoch,
            "roster_version": self.roster_version,
            "key_id": self.key_id,
            "wraps": {kid: b64e(w) for kid, w in self.wraps.items()},
        }

    def sign(self, signer: Signer) -> bytes:
        return seal(self.to_body(), "keyring", signer)

    def open_key(self, kid: str, unwrap: Callable[[bytes], _Key]) -> _Key:
        """``kid``'s key, opened from its wrap with ``unwrap`` and checked against ``key_id``;
        ``tampered`` when the wrap does not open (:class:`DecryptionError`) or holds
        another key (SPEC "Keyring")."""
        key = open_wrap(
            self.wraps[kid], unwrap,
            f"keyring {self.project!r} epoch {self.epoch}: the wrap for {kid} does not "
            "open with its key; tell an admin, who should rotate the project "
            "('sealmem admin rotate')",
        )  # fmt: skip
        self.check_key(key)
        return key

    def check_key(self, key: Wrapper) -> None:
        """Refuse (``tampered``) an unwrapped key that is not the one ``key_id`` commits to."""
        if key.commitment() != self.key_id:
            raise Rejected(
                reasons.TAMPERED,
                f"keyring {self.project!r} epoch {self.epoch}: the key wrapped to this member "
                "does not match the keyring's key_id; an admin key wrapped a different key. "
                "Tell an admin, who should rotate the project ('sealmem admin rotate')",
            )

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Keyring:
        if body.get("format") != KEYRING_FORMAT:
            raise Rejected(
                reasons.UNKNOWN_FORMAT,
                f"keyring format {body.get('format')!r} is not {KEYRING_FORMAT!r}",
            )
        obj = exact_keys(body, _BODY_KEYS, "keyring")
        wraps = parse_wraps(obj["wraps"], "keyring")
        return cls(
            team=need_str(obj["team"], "keyring.team", pattern=TEAM_RE),
            project=need_str(obj["project"], "keyring.project", pattern=PROJECT_RE),
            epoch=need_int(obj["epoch"], "keyring.epoch", minimum=1),
            roster_version=need_int(obj["roster_version"], "keyring.roster_version", minimum=1),
            wraps=wraps,
            key_id=need_str(obj["key_id"], "keyring.key_id", pattern=HEX_HASH_RE),
        )


def parse_wraps(value: object, what: str) -> dict[str, bytes]:
    """The ``wraps`` of a keyring (or member keyring): kid -> one wrapped key, each
    within :data:`MAX_WRAP_BYTES`, at most :data:`MAX_MEMBERS` of them."""
    raw = need_dict(value, f"{what}.wraps")
    if len(raw) > MAX_MEMBERS:
        raise Rejected(reasons.TOO_LARGE, f"{what} wraps {len(raw)} keys")
    wraps: dict[str, bytes] = {}
    for kid, text in raw.items():
        need_str(kid, f"{what}.wraps key", pattern=KID_RE)
        wrap = need_b64(text, f"{what}.wraps.{kid}")
        if len(wrap) > MAX_WRAP_BYTES:
            raise Rejected(reasons.TOO_LARGE, f"{what} wrap for {kid} is {len(wrap)} bytes")
        wraps[kid] = wrap
    return wraps


def open_wrap(wrap: bytes, unwrap: Callable[[bytes], _Key], refusal: str) -> _Key:
    """``unwrap(wrap)``; ``tampered`` (saying ``refusal``) when it does not open."""
    try:
        return unwrap(wrap)
    except DecryptionError as exc:
        raise Rejected(reasons.TAMPERED, refusal) from exc


def build_keyring(key: Wrapper, roster: Roster, project: str, epoch: int | None = None) -> Keyring:
    """Wrap ``key`` to every current reader of ``project`` in ``roster`` (at its current
    epoch unless ``epoch`` says otherwise)."""
    if project not in roster.projects:
        raise InputError(
            f"project {project!r} is not registered in roster v{roster.version}; "
            "add it to the roster first"
        )
    return Keyring(
        team=roster.team,
        project=project,
        epoch=roster.projects[project] if epoch is None else epoch,
        roster_version=roster.version,
        wraps={m.kid: key.wrap_to(m.box_public) for m in roster.readers(project)},
        key_id=key.commitment(),
    )


def extend_keyring(
    keyring: Keyring, key: Wrapper, roster: Roster, readers: Iterable[str]
) -> Keyring:
    """``keyring`` (of any epoch the project had) re-published citing ``roster``, with
    ``key`` also wrapped to ``readers``; the wraps of members who may no longer read go."""
    where = f"keyring {keyring.project!r} epoch {keyring.epoch}"
    if key.commitment() != keyring.key_id:
        raise InputError(f"{where}: the key given is not the one its key_id commits to")
    if roster.version <= keyring.roster_version:
        raise InputError(
            f"{where} already cites roster v{keyring.roster_version}; "
            f"an update must cite a newer one than v{roster.version}"
        )
    wraps = {k: w for k, w in keyring.wraps.items() if roster.can_read(k, keyring.project)}
    for kid in readers:
        member = roster.member(kid)
        if member is None or not roster.can_read(kid, keyring.project):
            raise InputError(
                f"{where}: member {kid} may not read {keyring.project!r} in roster "
                f"v{roster.version}; grant it read access first"
            )
        if kid not in wraps:
            wraps[kid] = key.wrap_to(member.box_public)
    return Keyring(
        team=keyring.team,
        project=keyring.project,
        epoch=keyring.epoch,
        roster_version=roster.version,
        wraps=wraps,
        key_id=keyring.key_id,
    )


def peek(data: bytes) -> Keyring:
    """The keyring in the envelope ``data``, parsed but not trusted: its form is checked
    (``Rejected`` names the first problem), its signature and its place are not; a
    keyring is trusted only through :func:`~sealmem.protocol.verify.accept_keyring`."""
    return Keyring.from_body(unpack(data, what="keyring", max_bytes=MAX_KEYRING_BYTES).body)
