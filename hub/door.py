"""The team's door: why join posts were refused, counted per team for its admins.

A stranger who knows a team id can post join requests without signing them.
The limits (per address, per team, inbox size, expiry) keep that from growing
without bound; these counters make sure it never goes unseen: an admin's
``GET /requests`` answer says how many posts the hub refused, by code, and
when the last one was.  They live in the hub process (as the rate limiters
do) and start again at zero when it restarts; ``since`` says from when.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from ..protocol import hubapi
from ..protocol.errors import Rejected
from .config import HubConfig
from .errors import Refusal
from .inbox import MAX_JOIN_BYTES, join_request_key
from .limits import RateLimiter
from .storage import QuotaExceeded, Storage
from .teams import Teams

__all__ = ["Door", "DoorLog", "Refusals"]

_DAY_MS = 24 * 60 * 60 * 1000
_FIX = (
    "ask a team admin to approve or reject the waiting requests ('sealmem admin requests', "
    "then 'sealmem admin approve KID' or 'sealmem admin reject KID'), then post yours again"
)


@dataclass
class Refusals:
    """Join posts refused for one team, by code, and the time (ms) of the last one."""

    by_code: dict[str, int] = field(default_factory=dict)
    last_at: int | None = None

    def to_wire(self) -> dict[str, object]:
        return {"by_code": dict(sorted(self.by_code.items())), "last_at": self.last_at}


class DoorLog:
    """Refused join posts per known team (a refusal for an unknown team is not kept)."""

    def __init__(self, started_ms: int) -> None:
        self.since = started_ms
        self._teams: dict[str, Refusals] = {}
        self._lock = threading.Lock()

    def refused(self, team: str, code: str, now_ms: int) -> None:
        with self._lock:
            found = self._teams.setdefault(team, Refusals())
            found.by_code[code] = found.by_code.get(code, 0) + 1
            found.last_at = now_ms

    def of(self, team: str) -> Refusals:
        with self._lock:
            found = self._teams.get(team)
            return Refusals() if found is None else Refusals(dict(found.by_code), found.last_at)


class Door:
    """Join posts: who may knock how often, how many may wait, and for how long."""

    def __init__(
        self, config: HubConfig, storage: Storage, teams: Teams, clock: Callable[[], int]
    ) -> None:
        self.config = config
        self.storage = storage
        self.teams = teams
        self.clock = clock
        self.log = DoorLog(clock())
        self.per_address = RateLimiter(
            storage, config.join_rate_per_min / 60.0, config.join_burst, "address"
        )
        self.per_team = RateLimiter(
            storage, config.team_join_rate_per_min / 60.0, config.team_join_burst, "team"
        )

    def live_after(self) -> int:
        """Requests posted at or before this hub time (ms) have expired."""
        return self.clock() - self.config.request_ttl_ms

    def _refuse(self, team: str, refusal: Refusal) -> Refusal:
        self.log.refused(team, refusal.code, self.clock())
        return refusal

    def admit(self, team: str, kid: str, body: bytes, address: str) -> None:
        """Store a join request, or raise the refusal that says why and what to do."""
        try:
            self.per_address.take(address, self.clock())
        except Refusal as exc:
            if self.teams.known(team):
                raise self._refuse(team, exc) from None
            raise
        state = self.teams.state(team)  # 404 for an unknown team
        try:
            self.per_team.take(team, self.clock())
        except Refusal as exc:
            raise self._refuse(
                team,
                Refusal(
                    429,
                    hubapi.TEAM_RATE_LIMITED,
                    f"team {team} receives too many join requests right now; retry in "
                    f"{exc.retry_after} s (if this lasts, tell a team admin: "
                    "'sealmem admin requests' shows the refused posts)",
                    retry_after=exc.retry_after,
                ),
            ) from None
        if len(body) > MAX_JOIN_BYTES:
            raise self._refuse(
                team,
                Refusal(413, hubapi.TOO_LARGE, f"a join request is at most {MAX_JOIN_BYTES} bytes"),
            )
        try:
            join_request_key(team, kid, body, state.roster)
        except Rejected as exc:
            refusal = Refusal(422, exc.reason, f"join request refused: {exc.detail}")
            raise self._refuse(team, refusal) from exc
        cap, per_address = self.config.max_pending_requests, self.config.max_pending_per_address
        try:
            seen = self.storage.offer_request(
                team, kid, body, address, self.clock(),
                live_after_ms=self.live_after(), max_pending=cap, max_per_address=per_address,
            )  # fmt: skip
        except QuotaExceeded:  # a stranger learns that, not the team's usage
            raise self._refuse(
                team,
                Refusal(
                    507,
                    hubapi.QUOTA_EXCEEDED,
                    f"team {team} has no room left on this hub for join requests; nothing "
                    "was stored: ask a team admin to free space or the hub operator for a "
                    "larger quota, then post it again",
                ),
            ) from None
        if seen.stored:
            return
        days = self.config.request_ttl_ms / _DAY_MS
        if seen.pending >= cap:
            raise self._refuse(
                team,
                Refusal(
                    507,
                    hubapi.INBOX_FULL,
                    f"team {team}'s join inbox is full ({cap} requests wait for an admin; "
                    f"unhandled ones expire after {days:g} days); nothing was stored: {_FIX}",
                ),
            )
        raise self._refuse(
            team,
            Refusal(
                507,
                hubapi.INBOX_FULL_FOR_ADDRESS,
                f"{per_address} join requests to team {team} from your network address already "
                f"wait for an admin (unhandled ones expire after {days:g} days); nothing was "
                f"stored: {_FIX}",
            ),
        )

    def report(self, team: str, live: int, oldest_at: int | None) -> dict[str, object]:
        """What an admin is told about the door, beside the waiting requests."""
        return {
            "pending": live,
            "capacity": self.config.max_pending_requests,
            "per_address": self.config.max_pending_per_address,
            "expires_after_ms": self.config.request_ttl_ms,
            "oldest_posted_at": oldest_at,
            "refused": self.log.of(team).to_wire(),
            "counted_since": self.log.since,
        }
