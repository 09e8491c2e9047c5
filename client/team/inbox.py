"""The admin's view of the join-request inbox: what ``admin requests`` showed, names, choices.

Anyone who can reach the folder or the hub can post a join request, at any
moment.  So an approval is bound to what the admin looked at:

- ``admin requests`` records the admissible requests it showed (:class:`Shown`:
  each kid with the hash of the exact bytes filed under it, and the time) in
  ``<home>/requests-shown.json``;
- ``admin approve`` with no argument approves only those, and only while the
  bytes are unchanged and the record is younger than :data:`SHOWN_MAX_AGE_MS`;
  a request that arrived or changed since is left waiting and reported.

Names are shown to the admin, who tells members apart by them: a request whose
name looks like (:func:`name_key`) a member's or another waiting request's is
flagged, and approving it needs a new name (``--as``).  Requests are chosen by
kid, kid prefix (8+ characters) or a name unique among those waiting.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...crypto import blake2b
from ...protocol.admission import RequestView
from ...protocol.errors import InputError
from ...protocol.names import name_skeleton
from ...protocol.roster import Roster
from ..fsutil import atomic_write

__all__ = [
    "SHOWN_FILE",
    "SHOWN_MAX_AGE_MS",
    "Inbox",
    "Shown",
    "check_name_free",
    "load_shown",
    "name_clashes",
    "name_key",
    "request_hash",
    "resolve",
    "save_shown",
]

SHOWN_FILE = "requests-shown.json"
SHOWN_MAX_AGE_MS = 60 * 60 * 1000
"""How long what ``admin requests`` showed may be approved without looking again."""

_FORMAT = "sealmem/requests-shown/v1"
_MIN_PREFIX = 8


def request_hash(data: bytes) -> str:
    """The hash that binds an approval to the exact bytes of one join request."""
    return blake2b(b"sealmem/v1/hash/request\x00" + data, size=32).hex()


def name_key(name: str) -> str:
    """What two display names are compared by: their skeleton (``protocol.names``: NFKC,
    case folded, invisible characters removed, common look-alike letters folded), so
    "Alice", a full-width "ａｌｉｃｅ" and a Cyrillic "аlice" are all "alice"."""
    return name_skeleton(name)


def _waiting(views: Iterable[RequestView]) -> list[RequestView]:
    """Readable requests of keys that are not members (a member's is a replay)."""
    return [v for v in views if v.name is not None and not v.member]


def name_clashes(views: Sequence[RequestView], roster: Roster | None) -> dict[str, str]:
    """Per kid of a waiting request, what its name clashes with (a member or another
    waiting request), for people."""
    members: dict[str, list[str]] = {}
    for m in roster.members if roster is not None else ():
        members.setdefault(name_key(m.name), []).append(f"member {m.name!r} ({m.kid[:8]})")
    waiting = _waiting(views)
    out: dict[str, str] = {}
    for view in waiting:
        key = name_key(str(view.name))
        others = [
            f"the request of {o.name!r} ({o.kid[:8]})"
            for o in waiting
            if o.kid != view.kid and name_key(str(o.name)) == key
        ]
        found = [*members.get(key, []), *others]
        if found:
            out[view.kid] = ", ".join(found)
    return out


@dataclass(frozen=True)
class Inbox:
    """The waiting requests as checked now, the hash of each one's bytes and name clashes."""

    views: list[RequestView]
    hashes: dict[str, str]
    clashes: dict[str, str]

    @classmethod
    def of(
        cls, waiting: Mapping[str, bytes], views: list[RequestView], roster: Roster | None
    ) -> Inbox:
        hashes = {kid: request_hash(data) for kid, data in waiting.items()}
        return cls(views, hashes, name_clashes(views, roster))

    def admissible(self) -> list[RequestView]:
        return [v for v in self.views if v.refused is None and not v.member]

    def to_dicts(self, now: int) -> list[dict[str, Any]]:
        out = []
        for view in self.views:
            doc = view.to_dict()
            created = view.created_at
            doc["age_ms"] = None if created is None else max(0, now - created)
            doc["clash"] = self.clashes.get(view.kid)
            out.append(doc)
        return out


@dataclass(frozen=True)
class Shown:
    """The admissible requests ``admin requests`` showed: kid -> request hash, and when."""

    team: str
    shown_at: int
    requests: Mapping[str, str]

    @property
    def digest(self) -> str:
        pairs = "".join(f"{kid}:{h}\n" for kid, h in sorted(self.requests.items()))
        return blake2b(f"{self.team}\n{pairs}".encode(), size=32).hex()

    def to_json(self) -> dict[str, Any]:
        return {
            "format": _FORMAT,
            "team": self.team,
            "shown_at": self.shown_at,
            "requests": dict(sorted(self.requests.items())),
            "digest": self.digest,
        }


def save_shown(home: Path, shown: Shown) -> None:
    text = json.dumps(shown.to_json(), indent=2, sort_keys=True) + "\n"
    atomic_write(Path(home) / SHOWN_FILE, text.encode("utf-8"), mode=0o600)


_RUN_REQUESTS = "run 'sealmem admin requests', compare the fingerprints, then approve"


def load_shown(home: Path, *, team: str, now: int) -> Shown:
    """What the last ``admin requests`` of this home showed for ``team``, if it is recent."""
    path = Path(home) / SHOWN_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"no join requests were shown yet: {_RUN_REQUESTS}") from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{path} is unreadable ({exc}): {_RUN_REQUESTS}") from exc
    try:
        items = doc["requests"]
        shown = Shown(
            team=str(doc["team"]),
            shown_at=int(doc["shown_at"]),
            requests={str(k): str(v) for k, v in items.items()},
        )
        if doc.get("format") != _FORMAT or doc.get("digest") != shown.digest:
            raise ValueError("its digest does not match its requests")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"{path} is damaged ({exc}): {_RUN_REQUESTS}") from exc
    if shown.team != team:
        raise InputError(f"the requests last shown were of another team: {_RUN_REQUESTS}")
    age = now - shown.shown_at
    if not 0 <= age <= SHOWN_MAX_AGE_MS:
        minutes = SHOWN_MAX_AGE_MS // 60_000
        raise InputError(
            f"the join requests were last shown {max(age, 0) // 60_000} minutes ago, more than "
            f"{minutes} minutes (or the clock moved back): {_RUN_REQUESTS}"
        )
    return shown


def check_name_free(
    name: str,
    kid: str,
    roster: Roster,
    views: Sequence[RequestView],
    taken: Sequence[str],
    *,
    renamed: bool,
) -> None:
    """Refuse a new member name that looks like a member's, another waiting request's or
    one approved in the same change."""
    key = name_key(name)
    clash = [f"member {m.name!r} ({m.kid[:8]})" for m in roster.members if name_key(m.name) == key]
    clash += [
        f"the waiting request of {v.name!r} ({v.kid[:8]})"
        for v in views
        if v.kid != kid and v.name is not None and not v.member and name_key(v.name) == key
    ]
    clash += [f"{t!r}, approved with it" for t in taken if name_key(t) == key]
    if not clash:
        return
    fix = (
        "choose another with --as NEWNAME"
        if renamed
        else f"approve it alone by id with --as NEWNAME ('sealmem admin approve {kid} --as "
        "NEWNAME'), or reject the other request ('sealmem admin reject KID')"
    )
    raise InputError(
        f"the name {name!r} of join request {kid} looks like {', '.join(clash)}: "
        f"the admin could not tell them apart; {fix}"
    )


def resolve(views: Sequence[RequestView], selector: str) -> RequestView:
    """The one waiting request ``selector`` names: a kid, a kid prefix of 8+ characters, or
    a display name that is unique (:func:`name_key`) among the waiting requests."""
    by_kid = [v for v in views if v.kid == selector]
    if not by_kid and len(selector) >= _MIN_PREFIX:
        by_kid = [v for v in views if v.kid.startswith(selector)]
    if len(by_kid) == 1:
        return by_kid[0]
    if by_kid:
        raise InputError(
            f"{selector!r} is the start of several request ids; give more of it "
            "('sealmem admin requests' lists them)"
        )
    key = name_key(selector)
    by_name = [v for v in views if v.name is not None and name_key(v.name) == key]
    if len(by_name) == 1:
        return by_name[0]
    if by_name:
        kids = ", ".join(f"{v.name!r} {v.kid}" for v in by_name)
        raise InputError(
            f"{len(by_name)} waiting join requests are named like {selector!r} ({kids}); "
            "compare fingerprints ('sealmem admin requests') and choose one by its id"
        )
    raise InputError(
        f"no waiting join request has the id or name {selector!r}; "
        "'sealmem admin requests' lists them"
    )
