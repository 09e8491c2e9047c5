"""The hub's settings, in one frozen value (the CLI and the tests build it).

Team registration is the operator's choice: an ``operator_token`` (registering
a team sends it in the ``Sealmem-Operator-Token`` header) or an allow-list of
team ids (``allow_teams``), or both.  With neither set, no team can register.
The token is compared in constant time and never logged.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..protocol.errors import InputError
from ..protocol.manifest import MAX_CHUNK_BYTES
from ..protocol.roster import TEAM_RE
from ..protocol.verify import MAX_ROSTER_BYTES
from .storage import Quota

__all__ = [
    "BLOBS_ENV",
    "DB_ENV",
    "HTTP_STACKS",
    "METRICS_TOKEN_ENV",
    "MIN_ORPHAN_AGE_S",
    "TOKEN_ENV",
    "HubConfig",
]

TOKEN_ENV = "SEALMEM_HUB_OPERATOR_TOKEN"  # noqa: S105 - the variable's name, not a token
METRICS_TOKEN_ENV = "SEALMEM_HUB_METRICS_TOKEN"  # noqa: S105 - the variable's name
DB_ENV = "SEALMEM_HUB_DB"
BLOBS_ENV = "SEALMEM_HUB_BLOBS"
#: the least age (s) at which a blob no row names may be collected: a put in flight on
#: another replica (blob written, row not yet committed) must never look like an orphan
MIN_ORPHAN_AGE_S = 60.0
_MIN_TOKEN = 16
#: uvicorn's HTTP stacks: "httptools" (llhttp + uvloop, uvicorn[standard]: about half the
#: CPU per request) or "h11" (pure Python on asyncio's loop: the stack before, to compare)
HTTP_STACKS = ("httptools", "h11")


@dataclass(frozen=True)
class HubConfig:
    #: the embedded layout (hub.db + blobs/); ``db_url``/``blobs_url`` override it
    data_dir: Path | None = None
    #: metadata backend: sqlite:///path/hub.db (or a directory), postgresql://...
    db_url: str | None = field(default=None, repr=False)
    #: blob backend: file:///dir, s3://bucket/prefix?endpoint=...; default beside SQLite
    blobs_url: str | None = field(default=None, repr=False)
    host: str = "127.0.0.1"
    port: int = 8765
    operator_token: str | None = field(default=None, repr=False)
    allow_teams: frozenset[str] = frozenset()
    #: largest request body on any route; each route has its own, lower limit too
    #: (hubapi: a chunk 8 MiB, a roster publish about 6.7 MiB, a manifest or keyring 1 MiB)
    max_body_bytes: int = MAX_ROSTER_BYTES + MAX_CHUNK_BYTES
    #: join requests: small, unauthenticated
    max_join_bytes: int = 16 * 1024
    #: per member: sustained requests per second and burst
    member_rate: float = 50.0
    member_burst: int = 400
    #: join posts (unauthenticated), per client address: per minute and burst
    join_rate_per_min: float = 10.0
    join_burst: int = 10
    #: join posts to one team from all addresses together: per minute and burst
    team_join_rate_per_min: float = 30.0
    team_join_burst: int = 30
    #: pending join requests a team's inbox holds, and how many of them one address may fill
    max_pending_requests: int = 256
    max_pending_per_address: int = 16
    #: a join request no admin handled within this many ms expires (frees its slot)
    request_ttl_ms: int = 7 * 24 * 60 * 60 * 1000
    team_quota_bytes: int = 1024 * 1024 * 1024
    #: of the team quota, kept for rosters and keyrings (so a full team can still revoke);
    #: None: an eighth of the quota, at most 16 MiB
    quota_reserve_bytes: int | None = None
    #: one member's chunks and manifests; None: the team's quota less the reserve
    member_quota_bytes: int | None = None
    #: a chunk no kept manifest names is deleted this long after it was (last) uploaded
    unreferenced_ttl_s: float = 30 * 60.0
    #: how often the storage janitor runs (unreferenced chunks, then orphan blobs)
    janitor_interval_s: float = 60.0
    #: a signed request must be dated within this many ms of the hub clock
    replay_window_ms: int = 5 * 60 * 1000
    long_poll_max_s: float = 30.0
    #: long polls (GET changes that wait) one member holds at once; more get 429
    max_polls_per_member: int = 4
    #: /metrics answers only ``Authorization: Bearer <this>``; None: /metrics is off (404)
    metrics_token: str | None = field(default=None, repr=False)
    manifests_kept: int = 3
    #: orphan blobs (written but never committed) younger than this are left alone
    orphan_min_age_s: float = 3600.0

    # -- the HTTP edge: how patiently request bodies are read (hub/edge.py) --
    #: longest wait for the next piece of a request body (s); then 408
    body_idle_s: float = 15.0
    #: after body_grace_s, a body must come at least body_min_rate bytes/s on average
    body_grace_s: float = 5.0
    body_min_rate: int = 16 * 1024
    #: signed request bodies read at the same time (keys the hub holds); more get 503
    max_body_reads: int = 32
    #: unsigned join requests read at the same time (a pool of their own, so that
    #: strangers cannot take the members' readers); more get 503
    max_join_reads: int = 8
    #: connections uvicorn serves at once; more get 503 from uvicorn itself
    max_connections: int = 1024
    #: uvicorn's HTTP parser and loop, one of HTTP_STACKS
    http_stack: str = "httptools"

    def __post_init__(self) -> None:
        for what, token in (("operator", self.operator_token), ("metrics", self.metrics_token)):
            if token is not None and len(token) < _MIN_TOKEN:
                raise InputError(
                    f"the {what} token is {len(token)} characters; use at least "
                    f"{_MIN_TOKEN} random ones (e.g. 'python -c \"import secrets; "
                    "print(secrets.token_urlsafe(32))\"')"
                )
        positive = {
            "join_rate_per_min": self.join_rate_per_min,
            "join_burst": self.join_burst,
            "team_join_rate_per_min": self.team_join_rate_per_min,
            "team_join_burst": self.team_join_burst,
            "max_pending_requests": self.max_pending_requests,
            "max_pending_per_address": self.max_pending_per_address,
            "request_ttl_ms": self.request_ttl_ms,
            "team_quota_bytes": self.team_quota_bytes,
            "unreferenced_ttl_s": self.unreferenced_ttl_s,
            "janitor_interval_s": self.janitor_interval_s,
            "body_idle_s": self.body_idle_s,
            "body_min_rate": self.body_min_rate,
            "max_body_reads": self.max_body_reads,
            "max_join_reads": self.max_join_reads,
            "max_polls_per_member": self.max_polls_per_member,
            "max_connections": self.max_connections,
        }
        for name, value in positive.items():
            if not value > 0:
                raise InputError(f"hub setting {name} is {value!r}; it must be above 0")
        if self.http_stack not in HTTP_STACKS:
            raise InputError(
                f"--http {self.http_stack!r} is not an HTTP stack; use one of "
                f"{', '.join(HTTP_STACKS)}"
            )
        if self.orphan_min_age_s < MIN_ORPHAN_AGE_S:
            raise InputError(
                f"hub setting orphan_min_age_s is {self.orphan_min_age_s!r}; it must be at "
                f"least {MIN_ORPHAN_AGE_S:.0f} s (a younger blob may be a write in flight)"
            )
        reserve = self.quota_reserve_bytes
        if reserve is not None and not 0 <= reserve < self.team_quota_bytes:
            raise InputError(
                f"hub setting quota_reserve_bytes is {reserve}; it must be "
                f"0 or more and below the team quota ({self.team_quota_bytes})"
            )
        if self.db_url is None and self.data_dir is None:
            raise InputError(
                f"the hub needs a place to keep its data: --data DIR, or --db URL (or {DB_ENV})"
            )
        for team in self.allow_teams:
            if TEAM_RE.fullmatch(team) is None:
                raise InputError(
                    f"--allow-team {team!r} is not a team id (it must match {TEAM_RE.pattern})"
                )

    @property
    def registration_open(self) -> bool:
        return self.operator_token is not None or bool(self.allow_teams)

    @property
    def metadata_url(self) -> str:
        """The metadata backend's URL (the data directory by default)."""
        if self.db_url is not None:
            return self.db_url
        return str(self.data_dir)

    @property
    def quota(self) -> Quota:
        reserve = self.quota_reserve_bytes
        if reserve is None:
            reserve = min(16 * 1024 * 1024, self.team_quota_bytes // 8)
        return Quota(self.team_quota_bytes, reserve, self.member_quota_bytes)

    @classmethod
    def token_from_env(cls) -> str | None:
        value = os.environ.get(TOKEN_ENV, "").strip()
        return value or None
