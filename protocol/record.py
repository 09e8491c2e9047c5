"""The memory record (DESIGN §2): one version of one memory, and its validation.

A :class:`Record` is immutable.  ``to_wire``/``from_wire`` convert to the
canonical-JSON form that snapshots carry; importance travels as an integer in
thousandths (canonical JSON holds no floats).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from .errors import ProtocolError
from .hlc import MAX_COUNTER, MAX_WALL_MS, Hlc

__all__ = [
    "KIND_RE",
    "MAX_CONTENT_CHARS",
    "MAX_KEYWORDS",
    "MAX_KEYWORD_CHARS",
    "MAX_REASON_CHARS",
    "MAX_SUPERSEDES",
    "PROJECT_RE",
    "SOURCES",
    "Record",
    "Source",
    "Visibility",
    "is_memory_id",
    "legacy_source",
    "new_memory_id",
]

Visibility = Literal["team", "private"]

Source = Literal["person", "agent", "hook", "import"]
"""Who wrote a version's text (SPEC.md "Who wrote the text"): a person (the CLI, the
viewer), an agent through a tool (MCP ``remember``), a hook capturing a transcript, an
importer of another tool's notes."""
SOURCES: tuple[Source, ...] = ("person", "agent", "hook", "import")

#: The tool part of an ``origin`` that, on a record stating no ``source`` (written before
#: the field existed), says who wrote it: what those writers put there.  Anything else
#: was a person (SPEC.md "Who wrote the text").
_LEGACY_SOURCES: dict[str, Source] = {"mcp": "agent", "claude-code": "hook", "import": "import"}

MAX_CONTENT_CHARS = 10_000
MAX_KEYWORDS = 32
MAX_KEYWORD_CHARS = 64
MAX_REASON_CHARS = 500
MAX_SUPERSEDES = 16
MAX_ORIGIN_CHARS = 64

KIND_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
PROJECT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MEMBER_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
_ID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")

_WIRE_KEYS = frozenset(
    {
        "id", "project", "kind", "content", "keywords", "importance", "author", "editor",
        "created_at", "hlc", "supersedes", "deleted", "delete_reason", "origin", "visibility",
    }
)  # fmt: skip


_STATED_KEYS = _WIRE_KEYS | {"source"}  # ``source`` may be absent: a record of before it
_STATED_COUNT = len(_STATED_KEYS)

_ONLY_STR = frozenset({str})
_STR_KEYS = ("id", "project", "kind", "content", "author", "editor", "origin")


def new_memory_id(now_ms: int, rand: bytes) -> str:
    """A UUIDv7 (RFC 9562) from a millisecond timestamp and 10 random bytes."""
    if len(rand) < 10:
        raise ValueError("new_memory_id needs 10 random bytes")
    value = (now_ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= (int.from_bytes(rand[:2], "big") & 0x0FFF) << 64
    value |= 0b10 << 62
    value |= int.from_bytes(rand[2:10], "big") & ((1 << 62) - 1)
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def is_memory_id(value: object) -> bool:
    return isinstance(value, str) and _ID_RE.fullmatch(value) is not None


_VALID_PROJECTS: set[str] = set()
_VALID_KINDS: set[str] = set()
_VALID_MEMBERS: set[str] = set()
_VALID = {PROJECT_RE: _VALID_PROJECTS, KIND_RE: _VALID_KINDS, MEMBER_RE: _VALID_MEMBERS}
_VALID_KEPT = 4096


def _valid(pattern: re.Pattern[str], value: str) -> bool:
    """Whether ``value`` matches ``pattern``; a match is remembered (in :data:`_VALID`):
    the same few project, kind and member names come back record after record."""
    if pattern.fullmatch(value) is None:
        return False
    seen = _VALID[pattern]
    if len(seen) >= _VALID_KEPT:
        seen.clear()
    seen.add(value)
    return True


def _fail(what: str) -> ProtocolError:
    return ProtocolError(f"invalid record: {what}")


def legacy_source(origin: str) -> Source:
    """Who wrote a record that states no ``source``, read from its ``origin`` (the tool
    before any ``:<session>``): ``mcp`` an agent, ``claude-code`` a hook, ``import`` an
    importer, anything else a person."""
    return _LEGACY_SOURCES.get(origin.partition(":")[0], "person")


@dataclass(frozen=True, slots=True)
class Record:
    id: str
    project: str
    kind: str
    content: str
    keywords: tuple[str, ...]
    importance: float
    author: str
    editor: str
    created_at: int
    hlc: Hlc
    supersedes: tuple[str, ...] = ()
    deleted: bool = False
    delete_reason: str | None = None
    origin: str = "cli"
    visibility: Visibility = "team"
    source: Source | None = None
    """Who wrote the text; None: not stated (a record of before the field), read as
    :attr:`written_by` says."""

    def validate(self) -> Record:
        """Raise :class:`ProtocolError` naming the first broken rule; return self."""
        if not is_memory_id(self.id):
            raise _fail(f"id {self.id!r} is not a UUIDv7")
        if self.project not in _VALID_PROJECTS and not _valid(PROJECT_RE, self.project):
            raise _fail(f"project {self.project!r} must match {PROJECT_RE.pattern}")
        if self.kind not in _VALID_KINDS and not _valid(KIND_RE, self.kind):
            raise _fail(f"kind {self.kind!r} must match {KIND_RE.pattern}")
        if len(self.content) > MAX_CONTENT_CHARS:
            raise _fail(
                f"content is {len(self.content)} characters; the limit is {MAX_CONTENT_CHARS}"
            )
        if self.deleted and self.content:
            raise _fail("a tombstone carries no content")
        if len(self.keywords) > MAX_KEYWORDS:
            raise _fail(f"{len(self.keywords)} keywords; the limit is {MAX_KEYWORDS}")
        for kw in self.keywords:
            if not kw or len(kw) > MAX_KEYWORD_CHARS:
                raise _fail(f"keyword {kw!r} must be 1..{MAX_KEYWORD_CHARS} characters")
        if not 0.0 <= self.importance <= 1.0:
            raise _fail(f"importance {self.importance} must be between 0 and 1")
        for name, member in (("author", self.author), ("editor", self.editor)):
            if member not in _VALID_MEMBERS and not _valid(MEMBER_RE, member):
                raise _fail(f"{name} {member!r} is not a member id")
        if not 0 <= self.created_at <= MAX_WALL_MS:
            raise _fail(f"created_at must be 0..{MAX_WALL_MS} ms")
        if not (0 <= self.hlc.wall <= MAX_WALL_MS and 0 <= self.hlc.counter <= MAX_COUNTER):
            raise _fail(f"hlc must be within [0..{MAX_WALL_MS}, 0..{MAX_COUNTER}]")
        if len(self.supersedes) > MAX_SUPERSEDES:
            raise _fail(f"supersedes {len(self.supersedes)} ids; the limit is {MAX_SUPERSEDES}")
        for old in self.supersedes:
            if not is_memory_id(old) or old == self.id:
                raise _fail(f"supersedes entry {old!r} is not another memory id")
        if self.delete_reason is not None and len(self.delete_reason) > MAX_REASON_CHARS:
            raise _fail(f"delete_reason is longer than {MAX_REASON_CHARS} characters")
        if not self.origin or len(self.origin) > MAX_ORIGIN_CHARS:
            raise _fail(f"origin must be 1..{MAX_ORIGIN_CHARS} characters")
        if self.visibility not in ("team", "private"):
            raise _fail(f"visibility {self.visibility!r} must be 'team' or 'private'")
        if self.source is not None and self.source not in SOURCES:
            raise _fail(f"source {self.source!r} must be one of {', '.join(SOURCES)}")
        return self

    @property
    def written_by(self) -> Source:
        """Who wrote the text: the stated ``source``, else :func:`legacy_source`."""
        return self.source if self.source is not None else legacy_source(self.origin)

    @property
    def order_key(self) -> tuple[int, int, str]:
        """The last-write-wins order (DESIGN §3): greatest wins."""
        return (self.hlc.wall, self.hlc.counter, self.editor)

    def evolve(self, **changes: Any) -> Record:
        return replace(self, **changes)

    def to_wire(self) -> dict[str, Any]:
        """The wire object; ``source`` only when stated (a record of before the field
        keeps its exact bytes)."""
        wire: dict[str, Any] = {
            "id": self.id,
            "project": self.project,
            "kind": self.kind,
            "content": self.content,
            "keywords": list(self.keywords),
            "importance": round(self.importance * 1000),
            "author": self.author,
            "editor": self.editor,
            "created_at": self.created_at,
            "hlc": self.hlc.to_wire(),
            "supersedes": list(self.supersedes),
            "deleted": self.deleted,
            "delete_reason": self.delete_reason,
            "origin": self.origin,
            "visibility": self.visibility,
        }
        if self.source is not None:
            wire["source"] = self.source
        return wire

    @classmethod
    def from_wire(cls, data: object) -> Record:
        """Build and validate a record from its wire form; unknown keys are refused.

        A record whose fields all hold their exact JSON types (what a canonical
        decode gives) takes a short path; anything else goes through the field by
        field checks that name what is wrong.  Both end in :meth:`validate`.
        """
        if type(data) is dict and (
            data.keys() == _STATED_KEYS if len(data) == _STATED_COUNT else data.keys() == _WIRE_KEYS
        ):
            d = data
            importance, created_at, stamp = d["importance"], d["created_at"], d["hlc"]
            keywords, supersedes, reason = d["keywords"], d["supersedes"], d["delete_reason"]
            if (
                type(d["id"]) is str
                and type(d["project"]) is str
                and type(d["kind"]) is str
                and type(d["content"]) is str
                and type(d["author"]) is str
                and type(d["editor"]) is str
                and type(d["origin"]) is str
                and type(d.get("source", "")) is str
                and type(d["deleted"]) is bool
                and type(importance) is int
                and type(created_at) is int
                and (reason is None or type(reason) is str)
                and type(keywords) is list
                and set(map(type, keywords)) <= _ONLY_STR
                and type(supersedes) is list
                and (not supersedes or set(map(type, supersedes)) <= _ONLY_STR)
                and type(stamp) is list
                and len(stamp) == 2
                and type(stamp[0]) is int
                and type(stamp[1]) is int
                and 0 <= stamp[0] <= MAX_WALL_MS
                and 0 <= stamp[1] <= MAX_COUNTER
            ):
                return cls(
                    d["id"], d["project"], d["kind"], d["content"], tuple(keywords),
                    importance / 1000, d["author"], d["editor"], created_at,
                    Hlc(stamp[0], stamp[1]), tuple(supersedes), d["deleted"], reason,
                    d["origin"], d["visibility"], d.get("source"),
                ).validate()  # fmt: skip
        return cls._from_wire_checked(data)

    @classmethod
    def _from_wire_checked(cls, data: object) -> Record:
        """:meth:`from_wire` field by field, naming the first field of the wrong type."""
        if not isinstance(data, dict):
            raise _fail("a record must be a JSON object")
        missing = _WIRE_KEYS - data.keys()
        unknown = data.keys() - _STATED_KEYS
        if missing or unknown:
            raise _fail(f"missing fields {sorted(missing)}, unknown fields {sorted(unknown)}")
        for key, what, ok in _CHECKS:
            if key in data and not ok(data[key]):
                raise _fail(f"{key} must be {what}")
        wire = {
            **data,
            "hlc": Hlc.from_wire(data["hlc"]),
            "keywords": tuple(data["keywords"]),
            "supersedes": tuple(data["supersedes"]),
            "importance": data["importance"] / 1000,
        }
        return cls(**wire).validate()


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


_CHECKS: tuple[tuple[str, str, Callable[[object], bool]], ...] = (
    ("importance", "an integer in thousandths", _is_int),
    *((key, "a string", lambda v: isinstance(v, str)) for key in _STR_KEYS),
    ("keywords", "a list of strings", _is_str_list),
    ("created_at", "an integer", _is_int),
    ("supersedes", "a list of strings", _is_str_list),
    ("deleted", "true or false", lambda v: isinstance(v, bool)),
    ("delete_reason", "a string or null", lambda v: v is None or isinstance(v, str)),
    ("source", f"one of {', '.join(SOURCES)} (a string)", lambda v: isinstance(v, str)),
)
