"""What a reader trusts, as one immutable value (SPEC.md "Trusted state").

``verify`` returns a new state on accept and leaves the old one untouched on reject.
:meth:`TrustedState.to_wire` / :meth:`TrustedState.from_wire` give a canonical JSON
form for the client to keep locally (the reader's own record of what it verified, so
it carries bodies without signatures).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, TypeVar

from .encoding import (
    HEX_HASH_RE,
    b64e,
    exact_keys,
    need_b64,
    need_int,
    need_kid,
    need_list,
    need_str,
)
from .errors import Rejected, StoreError
from .keyring import Keyring
from .record import PROJECT_RE
from .roster import TEAM_RE, Roster
from .suite import Suite

__all__ = ["STATE_FORMAT", "ChainHead", "TrustedState", "Witness", "frozen_map"]

STATE_FORMAT = "sealmem/trusted-state/v1"
_MAX_ITEMS = 1_000_000

K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class ChainHead:
    """The last accepted manifest of one (writer, project)."""

    seq: int
    hash: str
    reset_at: int = 0  # roster version of the last admin reset this chain started from


@dataclass(frozen=True, slots=True)
class Witness:
    """The highest head of a (writer, project) that another writer said it accepted."""

    seq: int
    hash: str
    by: str


def frozen_map(value: Mapping[K, V]) -> Mapping[K, V]:
    """A read-only copy of ``value`` (what a state's mappings hold)."""
    return MappingProxyType(dict(value))


@dataclass(frozen=True, slots=True)
class TrustedState:
    team: str
    root_kid: str
    root_public: bytes
    rosters: Mapping[int, Roster] = field(default_factory=dict)
    keyrings: Mapping[tuple[str, int], Keyring] = field(default_factory=dict)
    heads: Mapping[tuple[str, str], ChainHead] = field(default_factory=dict)
    witnessed: Mapping[tuple[str, str], Witness] = field(default_factory=dict)

    @classmethod
    def pin(cls, suite: Suite, team: str, root_public: bytes) -> TrustedState:
        """The state at join time: only the team id and its root signing key."""
        return cls(team=team, root_kid=suite.kid_from_public(root_public), root_public=root_public)

    @property
    def roster(self) -> Roster | None:
        """The newest accepted roster, or ``None`` before the first one."""
        return self.rosters[max(self.rosters)] if self.rosters else None

    def keyring(self, project: str, epoch: int) -> Keyring | None:
        return self.keyrings.get((project, epoch))

    def head(self, writer: str, project: str) -> ChainHead | None:
        return self.heads.get((writer, project))

    def evolve(
        self,
        *,
        rosters: Mapping[int, Roster] | None = None,
        keyrings: Mapping[tuple[str, int], Keyring] | None = None,
        heads: Mapping[tuple[str, str], ChainHead] | None = None,
        witnessed: Mapping[tuple[str, str], Witness] | None = None,
    ) -> TrustedState:
        """A copy with some mappings replaced (each copied into a read-only view)."""
        return replace(
            self,
            rosters=self.rosters if rosters is None else frozen_map(rosters),
            keyrings=self.keyrings if keyrings is None else frozen_map(keyrings),
            heads=self.heads if heads is None else frozen_map(heads),
            witnessed=self.witnessed if witnessed is None else frozen_map(witnessed),
        )

    def to_wire(self) -> dict[str, Any]:
        """A canonical-JSON-ready form of the whole state (for local storage)."""
        return {
            "format": STATE_FORMAT,
            "team": self.team,
            "root_public": b64e(self.root_public),
            "rosters": [self.rosters[v].to_body() for v in sorted(self.rosters)],
            "keyrings": [self.keyrings[k].to_body() for k in sorted(self.keyrings)],
            "heads": [
                {"writer": w, "project": p, "seq": h.seq, "hash": h.hash, "reset_at": h.reset_at}
                for (w, p), h in sorted(self.heads.items())
            ],
            "witnessed": [
                {"writer": w, "project": p, "seq": x.seq, "hash": x.hash, "by": x.by}
                for (w, p), x in sorted(self.witnessed.items())
            ],
        }

    @classmethod
    def from_wire(cls, value: object, suite: Suite) -> TrustedState:
        """Rebuild a state saved with :meth:`to_wire`; ``StoreError`` if it is damaged."""
        try:
            return cls._from_wire(value, suite)
        except Rejected as exc:
            raise StoreError(
                f"the saved trusted state is damaged ({exc}); remove it and run "
                "'sealmem sync' to verify the team's objects again from the pinned root"
            ) from exc

    @classmethod
    def _from_wire(cls, value: object, suite: Suite) -> TrustedState:
        keys = {"format", "team", "root_public", "rosters", "keyrings", "heads", "witnessed"}
        obj = exact_keys(value, keys, "state")
        if obj["format"] != STATE_FORMAT:
            raise Rejected("unknown-format", f"state format {obj['format']!r}")
        root_public = need_b64(obj["root_public"], "state.root_public", size=32)
        rosters = [
            Roster.from_body(b, suite)
            for b in need_list(obj["rosters"], "rosters", max_len=_MAX_ITEMS)
        ]
        keyrings = [
            Keyring.from_body(b) for b in need_list(obj["keyrings"], "keyrings", max_len=_MAX_ITEMS)
        ]
        heads: dict[tuple[str, str], ChainHead] = {}
        for i, raw in enumerate(need_list(obj["heads"], "heads", max_len=_MAX_ITEMS)):
            h = exact_keys(raw, {"writer", "project", "seq", "hash", "reset_at"}, f"heads[{i}]")
            heads[_slot(h, f"heads[{i}]")] = ChainHead(
                need_int(h["seq"], "seq", minimum=1),
                need_str(h["hash"], "hash", pattern=HEX_HASH_RE),
                need_int(h["reset_at"], "reset_at"),
            )
        witnessed: dict[tuple[str, str], Witness] = {}
        for i, raw in enumerate(need_list(obj["witnessed"], "witnessed", max_len=_MAX_ITEMS)):
            w = exact_keys(raw, {"writer", "project", "seq", "hash", "by"}, f"witnessed[{i}]")
            witnessed[_slot(w, f"witnessed[{i}]")] = Witness(
                need_int(w["seq"], "seq", minimum=1),
                need_str(w["hash"], "hash", pattern=HEX_HASH_RE),
                need_kid(w["by"], "by"),
            )
        state = cls.pin(suite, need_str(obj["team"], "state.team", pattern=TEAM_RE), root_public)
        return state.evolve(
            rosters={r.version: r for r in rosters},
            keyrings={(k.project, k.epoch): k for k in keyrings},
            heads=heads,
            witnessed=witnessed,
        )


def _slot(obj: dict[str, Any], path: str) -> tuple[str, str]:
    return (
        need_kid(obj["writer"], f"{path}.writer"),
        need_str(obj["project"], f"{path}.project", pattern=PROJECT_RE),
    )
