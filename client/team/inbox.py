"""The admin's view of the join-request inbox: what ``admin requests`` showed, names, choices.

Anyone who can reach the folder or the hub can post a join request, at any
moment.  So an approval is bound to what the admin looked at:

- ``admin requests`` records the admissible requests it showed (:class:`Shown`:
  each kid with the hash of the exact bytes filed under it, and the time) in
  ``<home>/requests-shown.json``;
- ``admin approve`` with no argument approves only those, and only while the
  bytes are unchanged and the record is younger than :data:`SHOWN_MAX_AGE_MS`;
  a request that arrived or changed since is left waiting and reported;
  ``admin approve NAME|KID`` approves a request only if it is one of those too;
- ``admin reject`` takes the requests it removes out of that record and notes
  them (kid, request hash, time) in ``<home>/requests-rejected.json``
  (:class:`RejectedLog`): the same bytes posted again are not approved on the
  strength of an earlier listing, and the next ``admin requests`` flags them as
  rejected before.

Names are shown to the admin, who tells members apart by them: a request whose
name looks like a member's or another waiting request's (the same skeleton,
``protocol.names.name_skeleton``: "Alice", a full-width "ａｌｉｃｅ" and a Cyrillic
"аlice" are all "alice") is flagged, and approving it needs a new name (``--as``).
Requests are chosen by kid, kid prefix (8+ characters) or a name unique among those
waiting.
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
from ...protocol.names import id_like, name_skeleton, select
from ...protocol.roster import Roster
from ..fsutil import atomic_write

__all__ = [
    "REJECTED_FILE",
    "SHOWN_FILE",
    "SHOWN_MAX_AGE_MS",
    "Inbox",
    "RejectedLog",
    "Shown",
    "check_name_free",
    "forget_shown",
    "load_rejected",
    "load_shown",
    "record_rejected",
    "resolve",
    "save_shown",
    "waiting_requests",
]

SHOWN_FILE = "requests-shown.json"
SHOWN_MAX_AGE_MS = 60 * 60 * 1000
"""How long what ``admin requests`` showed may be approved without looking again."""

_FORMAT = "sealmem/requests-shown/v1"
REJECTED_FILE = "requests-rejected.json"
_REJECTED_FORMAT = "sealmem/requests-rejected/v1"
_MAX_REJECTED = 4096


def _request_hash(data: bytes) -> str:
    """The hash that binds an approval to the exact bytes of one join request."""
    return blake2b(b"sealmem/v1/hash/request\x00" + data, size=32).hex()


def waiting_requests(views: Iterable[RequestView]) -> list[RequestView]:
    """Admissible requests of keys that are not members (a member's is a replay): a
    refused one (no valid invite, say) can never be approved, so it blocks no name."""
    return [v for v in views if v.name is not None and v.refused is None and not v.member]


def _looks_like(
    name: str, kid: str, roster: Roster | None, waiting: Sequence[RequestView], request: str
) -> list[str]:
    """What the name of ``kid``'s request looks like (by skeleton: ``protocol.names``), for
    people: a member's name, a member's device as provenance names it ("alice (laptop)"),
    another waiting request's, or a member id."""
    key = name_skeleton(name)
    members = roster.members if roster is not None else []
    others = [v for v in waiting if v.kid != kid]
    found = [f"member {m.name!r} ({m.kid[:8]})" for m in members if name_skeleton(m.name) == key]
    devices = roster.listed_keys() if roster is not None else ()  # provenance: "alice (laptop)"
    found += [
        f"device {d.device_name!r} of {d.name!r} ({d.kid[:8]})"
        for d in devices
        if d.device_name and name_skeleton(f"{d.name} ({d.device_name})") == key
    ]
    found += [
        f"{request} {v.name!r} ({v.kid[:8]})" for v in others if name_skeleton(str(v.name)) == key
    ]
    if looks := id_like(name, [kid, *(m.kid for m in members), *(v.kid for v in others)]):
        found.append(f"the member id {looks}")
    return found


def _name_clashes(views: Sequence[RequestView], roster: Roster | None) -> dict[str, str]:
    """Per kid of a waiting request, what its name clashes with, for people."""
    waiting = waiting_requests(views)
    found = {
        v.kid: _looks_like(str(v.name), v.kid, roster, waiting, "the request of") for v in waiting
    }
    return {kid: ", ".join(clash) for kid, clash in found.items() if clash}


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
        hashes = {kid: _request_hash(data) for kid, data in waiting.items()}
        return cls(views, hashes, _name_clashes(views, roster))

    def to_dicts(self, now: int, rejected: RejectedLog) -> list[dict[str, Any]]:
        """For people and ``--json``; ``rejected_before`` is when this admin last rejected
        a request of that key (ms), or None."""
        out = []
        for view in self.views:
            doc = view.to_dict()
            created = view.created_at
            doc["age_ms"] = None if created is None else max(0, now - created)
            doc["clash"] = self.clashes.get(view.kid)
            before = rejected.entries.get(view.kid)
            doc["rejected_before"] = None if before is None else before[1]
            out.append(doc)
        return out


@dataclass(frozen=True)
class Shown:
    """The admissible requests ``admin requests`` showed: kid -> request hash, and when."""

    team: str
    shown_at: int
    requests: Mapping[str, str]

    @classmethod
    def of(cls, doc: Any) -> Shown:
        """The record in ``doc``; KeyError, TypeError, ValueError or AttributeError if damaged."""
        requests = {str(k): str(v) for k, v in doc["requests"].items()}
        return cls(str(doc["team"]), int(doc["shown_at"]), requests)

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


def _write(path: Path, doc: Mapping[str, Any]) -> None:
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    atomic_write(path, text.encode("utf-8"), mode=0o600)


def save_shown(home: Path, shown: Shown) -> None:
    _write(Path(home) / SHOWN_FILE, shown.to_json())


def forget_shown(home: Path, kids: Iterable[str]) -> None:
    """Take ``kids`` out of the shown record (a rejected request is no longer "shown")."""
    path = Path(home) / SHOWN_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        shown = Shown.of(doc)
    except FileNotFoundError:
        return
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        path.unlink(missing_ok=True)  # unreadable: approving needs a new listing anyway
        return
    drop = set(kids)
    if drop & set(shown.requests):
        kept = {k: h for k, h in shown.requests.items() if k not in drop}
        save_shown(home, Shown(shown.team, shown.shown_at, kept))


@dataclass(frozen=True)
class RejectedLog:
    """The join requests this admin rejected: kid -> (request hash, when), per team."""

    team: str
    entries: Mapping[str, tuple[str, int]]

    def after(self, kid: str, since: int | None) -> bool:
        """Whether a request of ``kid`` was rejected at or after ``since`` (None: ever)."""
        entry = self.entries.get(kid)
        return entry is not None and (since is None or entry[1] >= since)


def load_rejected(home: Path, *, team: str) -> RejectedLog:
    """What ``admin reject`` noted for ``team`` in this home (empty when nothing was)."""
    path = Path(home) / REJECTED_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return RejectedLog(team, {})
    except (OSError, ValueError) as exc:
        raise InputError(
            f"{path} is unreadable ({exc}): it lists the join requests you rejected; "
            "restore it, or remove it and check 'sealmem admin requests' before approving"
        ) from exc
    try:
        if doc.get("format") != _REJECTED_FORMAT:
            raise ValueError(f"format {doc.get('format')!r}")
        found = doc["teams"].get(team, {})
        entries = {str(k): (str(v["hash"]), int(v["at"])) for k, v in found.items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(
            f"{path} is damaged ({exc}): it lists the join requests you rejected; "
            "restore it, or remove it and check 'sealmem admin requests' before approving"
        ) from exc
    return RejectedLog(team, entries)


def record_rejected(home: Path, *, team: str, requests: Mapping[str, str], now: int) -> None:
    """Note the rejected ``requests`` (kid -> request hash) at ``now``; the oldest notes
    beyond :data:`_MAX_REJECTED` per team are dropped."""
    if not requests:
        return
    path = Path(home) / REJECTED_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        teams = {str(t): dict(e) for t, e in doc["teams"].items()}
    except FileNotFoundError:
        teams = {}
    else:
        load_rejected(home, team=team)  # refuses a damaged file rather than overwrite it
    entries = {**teams.get(team, {})}
    entries.update({kid: {"hash": h, "at": now} for kid, h in requests.items()})
    newest = sorted(entries.items(), key=lambda item: -int(item[1]["at"]))[:_MAX_REJECTED]
    teams[team] = dict(sorted(newest))
    _write(path, {"format": _REJECTED_FORMAT, "teams": teams})


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
        shown = Shown.of(doc)
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
    """Refuse a new member name that looks like a member's, another admissible waiting
    request's or one approved in the same change, or that reads as a member id."""
    clash = _looks_like(name, kid, roster, waiting_requests(views), "the waiting request of")
    clash += [f"{t!r}, approved with it" for t in taken if name_skeleton(t) == name_skeleton(name)]
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


def resolve(
    views: Sequence[RequestView], selector: str, *, admissible: bool = False
) -> RequestView:
    """The one waiting request ``selector`` names: a kid, a kid prefix of 8+ characters, or
    a display name that is unique (by skeleton) among the waiting requests; a
    selector that is one request's name and the start of another's id is refused
    (``protocol.names.select``, the precedence of ``find_member`` too).

    With ``admissible``, a name is looked up among the admissible requests only (a
    refused request can be named by its id), so a refused look-alike blocks nothing.
    """
    named = waiting_requests(views) if admissible else [v for v in views if v.name is not None]
    by_id, _ = select(selector, [(v.kid, None) for v in views])
    _, by_name = select(selector, [(v.kid, v.name) for v in named])
    if selector in by_id:
        by_name = []
    found = [v for v in views if v.kid in {*by_id, *by_name}]
    if len(found) == 1:
        return found[0]
    if by_id and by_name:
        both = ", ".join(f"{v.name!r} {v.kid}" for v in found)
        raise InputError(
            f"{selector!r} is both the name of a join request and the start of another's id "
            f"({both}); give the full id ('sealmem admin requests' lists them)"
        )
    if by_id:
        raise InputError(
            f"{selector!r} is the start of several request ids; give more of it "
            "('sealmem admin requests' lists them)"
        )
    if found:
        kids = ", ".join(f"{v.name!r} {v.kid}" for v in found)
        raise InputError(
            f"{len(found)} waiting join requests are named like {selector!r} ({kids}); "
            "compare fingerprints ('sealmem admin requests') and choose one by its id"
        )
    raise InputError(
        f"no waiting join request has the id or name {selector!r}; "
        "'sealmem admin requests' lists them"
    )
