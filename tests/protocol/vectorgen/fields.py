"""Vectors for the field rules the other vectors left uncaught (SPEC.md names them beside
each MUST): record fields, lengths in code points outside the BMP, names with an emoji's
selector before a joiner, an invite's ``location``, a join request filed under another id.
"""

from __future__ import annotations

from typing import Any

from sealmem.protocol.encoding import b64e
from sealmem.protocol.envelope import seal
from sealmem.protocol.hlc import MAX_COUNTER, MAX_WALL_MS
from sealmem.protocol.record import MAX_CONTENT_CHARS

from .basics import Vector
from .invites import _invite_body, _join_body, _key
from .writers import _wire

__all__ = ["silence_vectors"]

EMOJI = "\U0001f600"  # one code point, two UTF-16 units, four UTF-8 bytes


def _record(name: str, description: str, expected: str, **changes: Any) -> Vector:
    data = _wire(**changes)
    source = {"source": "person"} if expected == "accept" else None
    if expected == "accept":
        data = {**data, "source": "person"}
    return Vector(f"record-{name}", description, {"kind": "record", "data": data}, expected,
                  source)  # fmt: skip


def record_silences() -> list[Vector]:
    over = MAX_WALL_MS + 1
    return [
        _record("kind-uppercase", "a kind outside ^[a-z][a-z0-9_-]{0,31}$", "malformed",
                kind="Warning"),
        _record("kind-too-long", "a kind of 33 characters", "malformed", kind="k" * 33),
        _record("tombstone", "a tombstone: deleted, content empty", "accept", deleted=True,
                content=""),
        _record("tombstone-with-content", "deleted with its content kept", "malformed",
                deleted=True),
        _record("author-pattern", "an author outside ^[a-z0-9][a-z0-9_.-]{0,63}$", "malformed",
                author="Alice"),
        _record("created-at-negative", "created_at below 0", "malformed", created_at=-1),
        _record("created-at-over", "created_at of 2^47 ms", "malformed", created_at=over),
        _record("counter-at-limit", "an hlc counter of 2^16 - 1", "accept",
                hlc=[1_760_000_000_000, MAX_COUNTER]),
        _record("counter-over", "an hlc counter of 2^16", "malformed",
                hlc=[1_760_000_000_000, MAX_COUNTER + 1]),
        _record("content-non-bmp-at-limit",
                "10 000 code points above U+FFFF (20 000 UTF-16 units): within the limit",
                "accept", content=EMOJI * MAX_CONTENT_CHARS),
        _record("content-non-bmp-over", "10 001 code points above U+FFFF", "malformed",
                content=EMOJI * (MAX_CONTENT_CHARS + 1)),
        _record("keyword-non-bmp-at-limit", "a keyword of 64 code points above U+FFFF",
                "accept", keywords=[EMOJI * 64]),
        _record("keyword-non-bmp-over", "a keyword of 65 code points above U+FFFF",
                "malformed", keywords=[EMOJI * 65]),
        _record("origin-non-bmp-at-limit", "an origin of 64 code points above U+FFFF",
                "accept", origin=EMOJI * 64),
        _record("origin-non-bmp-over", "an origin of 65 code points above U+FFFF",
                "malformed", origin=EMOJI * 65),
    ]  # fmt: skip


def name_silences() -> list[Vector]:
    from .invites import INVITE_ID, JOINER_NOW

    carol, mallory = _key(5), _key(4)

    def join(name: str, description: str, expected: str, **kw: Any) -> Vector:
        data = seal(_join_body(carol, name=name), "join", carol)
        output = None
        if expected == "accept":
            output = {"kid": carol.kid, "fingerprint": carol.public().fingerprint(),
                      "invite_id": INVITE_ID}  # fmt: skip
        return Vector(f"join-{description}", _NAMES[description],
                      {"kind": "join", "data": b64e(data), **kw}, expected, output)  # fmt: skip

    root = _key(1)

    def invite(name: str, location: str) -> Vector:
        data = seal(_invite_body(root, location=location), "invite", root)
        return Vector(
            f"invite-{name}",
            _NAMES[name],
            {"kind": "invite", "data": b64e(data), "now_ms": JOINER_NOW},
            "malformed",
        )

    return [
        join("\u2764\ufe0f\u200d\U0001f525 sam", "name-emoji-selector-joiner", "accept"),
        join("sam\ufe0f\u200db", "name-selector-joiner-after-ascii", "malformed"),
        join(EMOJI * 64, "name-non-bmp-at-limit", "accept"),
        join(EMOJI * 65, "name-non-bmp-over", "malformed"),
        join("carol", "filed-under-other-kid", "signer-mismatch", filed_as=mallory.kid),
        invite("location-bidi", "/mnt/nas/\u202eteam"),
        invite("location-newline", "/mnt/nas/team\nrm -rf ~"),
    ]


_NAMES = {
    "name-emoji-selector-joiner": (
        "a name with an emoji sequence whose joiner follows a variation selector "
        "(U+2764 U+FE0F U+200D U+1F525)"
    ),
    "name-selector-joiner-after-ascii": "a selector and a joiner after an ASCII letter",
    "name-non-bmp-at-limit": "a name of 64 code points above U+FFFF (128 UTF-16 units)",
    "name-non-bmp-over": "a name of 65 code points above U+FFFF",
    "filed-under-other-kid": "carol's valid request filed under mallory's id",
    "location-bidi": "an invite whose location holds a right-to-left override",
    "location-newline": "an invite whose location holds a line feed",
}


def silence_vectors() -> list[Vector]:
    return [*record_silences(), *name_silences()]
