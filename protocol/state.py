"""What a reader trusts, as one immutable value (``verify`` returns new ones).

``TrustedState`` holds the pinned team root key, every accepted roster
version, the accepted keyrings per (project, epoch), the accepted chain head
per (writer, project), and the highest head per (writer, project) that other
writers' manifests have witnessed.  Nothing here is ever mutated: the verifier
returns a new state on accept and leaves the old one untouched on reject.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TypeVar

from sealmem.protocol.keyring import Keyring
from sealmem.protocol.roster import Roster
from sealmem.protocol.suite import Suite

__all__ = ["ChainHead", "TrustedState", "Witness"]

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


def _frozen(value: Mapping[K, V]) -> Mapping[K, V]:
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
            rosters=self.rosters if rosters is None else _frozen(rosters),
            keyrings=self.keyrings if keyrings is None else _frozen(keyrings),
            heads=self.heads if heads is None else _frozen(heads),
            witnessed=self.witnessed if witnessed is None else _frozen(witnessed),
        )
