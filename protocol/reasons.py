"""The named reasons a verifier gives in :class:`~sealmem.protocol.errors.Rejected`.

Each constant is the exact ``Rejected.reason`` string; ``REASONS`` lists them
all (SPEC.md documents what each one means).
"""

from __future__ import annotations

__all__ = [
    "BAD_CHUNK_ID",
    "BAD_SIGNATURE",
    "BEHIND_WITNESS",
    "CLOCK_AHEAD",
    "CROSS_PROJECT",
    "CROSS_TEAM",
    "EDITOR_MISMATCH",
    "EPOCH_UNKNOWN",
    "EQUIVOCATION",
    "FORK",
    "INVITE_EXPIRED",
    "INVITE_NAME_MISMATCH",
    "INVITE_UNKNOWN",
    "INVITE_USED",
    "MALFORMED",
    "MISSING_BASE",
    "MISSING_CHUNK",
    "NOT_ADMIN",
    "NOT_CANONICAL",
    "NO_READ_GRANT",
    "NO_WRITE_GRANT",
    "REASONS",
    "REVOKED",
    "ROLLBACK",
    "ROSTER_NOT_EXTENDING",
    "ROSTER_UNKNOWN",
    "SIGNER_MISMATCH",
    "TAMPERED",
    "TOO_LARGE",
    "UNKNOWN_FORMAT",
    "UNKNOWN_PROJECT",
    "UNKNOWN_WRITER",
    "WRONG_BUCKET",
    "WRONG_CONTEXT",
]

BAD_SIGNATURE = "bad-signature"  # the signature does not verify for its signer
WRONG_CONTEXT = "wrong-context"  # a valid signature, made for another kind of object
NOT_CANONICAL = "not-canonical"  # bytes are not the one canonical JSON spelling
MALFORMED = "malformed"  # canonical JSON, but fields missing, unknown or mistyped
TAMPERED = "tampered"  # authenticated data failed to open, or sizes/counts disagree
UNKNOWN_WRITER = "unknown-writer"  # the signer is not a member of the trusted roster
SIGNER_MISMATCH = "signer-mismatch"  # body names one writer, the envelope another signer
NO_WRITE_GRANT = "no-write-grant"  # the writer holds no write grant for the project
NO_READ_GRANT = "no-read-grant"  # a keyring wraps the key to a member without read grant
REVOKED = "revoked"  # the writer is revoked and this object is past its pin
ROLLBACK = "rollback"  # older than what was already accepted
FORK = "fork"  # same position as an accepted object, different content
EPOCH_UNKNOWN = "epoch-unknown"  # no trusted keyring (or roster epoch) for this epoch
CROSS_TEAM = "cross-team"  # the object belongs to another team
CROSS_PROJECT = "cross-project"  # the object or a record belongs to another project
UNKNOWN_PROJECT = "unknown-project"  # the project is not registered in the roster
EDITOR_MISMATCH = "editor-mismatch"  # a record's editor is not the snapshot writer
TOO_LARGE = "too-large"  # over a size or count limit (including decompression bombs)
UNKNOWN_FORMAT = "unknown-format"  # a format string this version does not speak
MISSING_CHUNK = "missing-chunk"  # a chunk listed in the manifest was not supplied
MISSING_BASE = "missing-base"  # the full manifest a delta manifest is listed against is not there
BAD_CHUNK_ID = "bad-chunk-id"  # a chunk's bytes do not hash to its id
WRONG_BUCKET = "wrong-bucket"  # a record sits in a bucket its id does not hash to
ROSTER_NOT_EXTENDING = "roster-not-extending"  # not the next link of the trusted chain
ROSTER_UNKNOWN = "roster-unknown"  # names a roster version newer than the trusted one
NOT_ADMIN = "not-admin"  # signed by a key that is not an admin where it must be
EQUIVOCATION = "equivocation"  # a witnessed head conflicts with an accepted one
BEHIND_WITNESS = "behind-witness"  # below the seq another writer's manifest witnessed
CLOCK_AHEAD = "clock-ahead"  # a version's clock is too far ahead of the reader's clock
INVITE_UNKNOWN = "invite-unknown"  # a join request names an invite this admin never issued
INVITE_EXPIRED = "invite-expired"  # the invite's expires_at has passed
INVITE_USED = "invite-used"  # a single-use invite was already used by another key
INVITE_NAME_MISMATCH = "invite-name-mismatch"  # a --for NAME invite, requested under another name

REASONS: tuple[str, ...] = tuple(
    value for name, value in list(globals().items()) if name.isupper() and isinstance(value, str)
)
"""Every reason above, in the order defined."""
