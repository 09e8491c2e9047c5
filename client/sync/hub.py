"""The hub as a transport: :class:`HubTransport` speaks the hub's /v1 API over httpx.

Every request goes through a :class:`~.hub_sender.Sender` (signed afresh at each
attempt, repeated and settled as :mod:`~.retry` says); a refusal is a
:class:`~.hub_answers.HubError` with the hub's reason (:mod:`~.hub_answers`).  A
publication whose answer was lost is settled by reading back (:mod:`~.readback`).
Paths, headers and codes come from :mod:`sealmem.protocol.hubapi`, which the hub routes
on.  Keyrings that name a roster the hub does not hold yet (an admin publishes keyrings
before their roster) are kept and sent with the next :meth:`HubTransport.put_roster`, in
one request the hub accepts or refuses as a whole; those that do not fit one body follow
it one by one, once it is stored, and one that fails is tried again in the same call.

:func:`open_transport` picks the folder or the hub from a location string.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import httpx

from ...crypto import SUITE, MemberKey
from ...protocol import hubapi
from ...protocol.encoding import HEX_HASH_RE, KID_RE, b64d, b64e
from ...protocol.errors import InputError, Rejected, TransportError
from ...protocol.own import own_manifest
from ...protocol.roster import TEAM_RE
from ..clock import now_ms
from .door import door_warnings
from .folder import FolderTransport
from .hub_answers import HubError, blobs, chunk_ids, is_ms, json_object
from .hub_private import PRIVATE_PATHS, PrivateSpaceCalls
from .hub_sender import Sender
from .readback import keyring_outcome, manifest_outcome, roster_outcome
from .retry import Outcome
from .transport import MissingChunks, Transport

__all__ = ["OPERATOR_TOKEN_ENV", "HubTransport", "is_hub_location", "open_transport"]

OPERATOR_TOKEN_ENV = "SEALMEM_HUB_OPERATOR_TOKEN"  # noqa: S105 - a variable name


def is_hub_location(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def open_transport(
    location: str, team: str, key: MemberKey, *, operator_token: str | None = None
) -> Transport:
    """A :class:`HubTransport` for an http(s) URL, else a :class:`FolderTransport` whose
    pushes count only the manifests ``key`` signed (the protocol's check)."""
    if is_hub_location(location):
        return HubTransport(location, team, key, operator_token=operator_token)

    def ours(data: bytes, project: str, writer: str, seq: int) -> bool:
        try:
            own = own_manifest(
                SUITE, data, writer=writer, sign_public=key.sign_public, project=project
            )
        except Rejected:
            return False
        return own.seq == seq

    return FolderTransport(location, team, ours=ours)


class HubTransport(PrivateSpaceCalls, Transport):
    kind = "hub"

    def __init__(
        self,
        url: str,
        team: str,
        key: MemberKey,
        *,
        operator_token: str | None = None,
        client: httpx.Client | None = None,
        timeout_s: float = 30.0,
        clock: Callable[[], int] | None = None,
        retry_budget_s: float = 30.0,
        sync_budget_s: float = 120.0,
    ) -> None:
        """``retry_budget_s`` bounds the time one request spends on repeats, ``sync_budget_s``
        the time from the start of a sync (:meth:`syncing`) after which none is repeated
        (see :mod:`~.retry`)."""
        if client is None and not is_hub_location(url):
            raise InputError(f"hub URL {url!r} must start with http:// or https://")
        self._url = url.rstrip("/")
        if TEAM_RE.fullmatch(team) is None:
            raise InputError(f"team id {team!r} must match {TEAM_RE.pattern}")
        self._team = team
        self._key = key
        self._token = operator_token or os.environ.get(OPERATOR_TOKEN_ENV) or None
        self._clock = clock or now_ms
        self._sender = Sender(
            self._url, key, client or httpx.Client(base_url=self._url, timeout=timeout_s),
            owns_client=client is None, clock=self._clock,
            retry_budget_s=retry_budget_s, sync_budget_s=sync_budget_s,
        )  # fmt: skip
        self._send = self._sender.send
        self._pending_keyrings: list[tuple[str, int, bytes]] = []  # (project, epoch, data)
        self._warnings: list[str] = []
        self._lost: dict[str, frozenset[str]] = {}  # per project: the hub's marks on our slot
        self._member: str | None = None  # set in a private space's view

    @property
    def location(self) -> str:
        return self._url

    def syncing(self) -> contextlib.AbstractContextManager[None]:
        return self._sender.syncing()

    def close(self) -> None:
        self._sender.close()

    # -- one request -----------------------------------------------------------------

    def _path(self, template: str, **values: str | int) -> str:
        if self._member is not None:  # a private space: the chain paths under it
            template = PRIVATE_PATHS[template]
            values["member"] = self._member
        return hubapi.path(template, team=self._team, **values)

    # -- a member's private space ----------------------------------------------------

    def private_space(self, member: str) -> HubTransport:
        if KID_RE.fullmatch(member) is None:
            raise InputError(f"{member!r} is not a member id")
        view = copy.copy(self)
        view._member = member
        view._lost = {}
        return view

    def _json(self, method: str, path: str, what: str, **kw: Any) -> dict[str, Any]:
        response = self._send(method, path, what, **kw)
        return {} if response is None else json_object(response, self._url, what)

    def _blobs(self, value: object, what: str) -> list[bytes]:
        return blobs(value, self._url, what)

    # -- rosters and keyrings --------------------------------------------------------

    def rosters(self, after_version: int) -> list[bytes]:
        doc = self._json(
            "GET", self._path(hubapi.ROSTERS), "read rosters",
            query={hubapi.QUERY_AFTER: after_version},
        )  # fmt: skip
        return self._blobs(doc.get("rosters"), "rosters")

    def put_roster(self, version: int, data: bytes) -> None:
        # kept keyrings belong to this roster only, published or refused
        kept, self._pending_keyrings = self._pending_keyrings, []
        bundled, later = _fitting(data, kept)
        try:
            self._publish_roster(version, data, bundled)
        except HubError as exc:  # a hub whose own body limit is lower: the roster alone
            if exc.code != hubapi.TOO_LARGE or not bundled:
                raise
            self._publish_roster(version, data, [])
            later = kept
        self._follow(version, later)

    def _follow(self, version: int, keyrings: list[tuple[str, int, bytes]]) -> None:
        """Send each keyring that did not go with roster ``version``, now stored.  One that
        fails does not stop the others; each that failed is tried once more, after reading
        the project's keyrings back (what landed despite the failure is not sent again);
        what still fails is raised, naming each keyring."""
        failed = []
        for project, epoch, keyring in keyrings:  # each finds its roster now
            try:
                self._put_keyring(project, epoch, keyring)
            except TransportError:
                failed.append((project, epoch, keyring))
        missing = []
        for project, epoch, keyring in failed:
            try:
                if keyring_outcome(self.keyrings(project), keyring) is not Outcome.LANDED:
                    self._put_keyring(project, epoch, keyring)
            except TransportError as exc:
                missing.append(f"{project} epoch {epoch} ({exc})")
        if missing:
            raise TransportError(
                f"roster v{version} is on the hub at {self._url}, but not its keyrings of "
                f"{'; '.join(missing)}; their readers get no key: once the hub answers, run "
                "'sealmem admin rotate PROJECT' for each"
            )

    def _publish_roster(
        self, version: int, data: bytes, keyrings: list[tuple[str, int, bytes]]
    ) -> None:
        body = json.dumps({"roster": b64e(data), "keyrings": [b64e(k) for *_, k in keyrings]})
        token = self._token if version == 1 else None
        headers = {hubapi.HEADER_OPERATOR_TOKEN: token} if token else None
        what = f"publish roster v{version}"
        path = self._path(hubapi.ROSTER, version=version)

        def read_back() -> Outcome:
            try:
                above = self.rosters(version - 1)
            except HubError as exc:
                if exc.code != hubapi.UNKNOWN_TEAM:  # v1 not landed: the team is unknown
                    raise
                above = []
            return roster_outcome(above, data)

        self._send("PUT", path, what, body=body.encode(), headers=headers, read_back=read_back)

    def keyrings(self, project: str) -> list[bytes]:
        path = self._path(hubapi.KEYRINGS, project=project)
        doc = self._json("GET", path, f"read keyrings of {project}")
        return self._blobs(doc.get("keyrings"), "keyrings")

    def put_keyring(self, project: str, epoch: int, data: bytes) -> None:
        try:
            self._put_keyring(project, epoch, data)
        except HubError as exc:
            if exc.code not in {hubapi.ROSTER_UNKNOWN, hubapi.UNKNOWN_TEAM}:
                raise
            self._pending_keyrings.append((project, epoch, data))  # goes with its roster

    def _put_keyring(self, project: str, epoch: int, data: bytes) -> None:
        path = self._path(hubapi.KEYRING, project=project, epoch=epoch)
        what = f"publish keyring {project}/{epoch}"
        self._send(
            "PUT", path, what, body=data,
            read_back=lambda: keyring_outcome(self.keyrings(project), data),
        )  # fmt: skip

    def checkpoint(self) -> bytes | None:
        doc = self._json("GET", self._path(hubapi.CHECKPOINTS), "read the team checkpoint")
        found = doc.get("checkpoint")
        if found is not None and not isinstance(found, str):
            raise TransportError(f"the hub at {self._url} answered a checkpoint that is no text")
        return None if found is None else self._blobs([found], "checkpoint")[0]

    def put_checkpoint(self, seq: int, data: bytes) -> None:
        path = self._path(hubapi.CHECKPOINT, seq=seq)
        self._send("PUT", path, f"publish checkpoint {seq}", body=data)

    # -- snapshots -------------------------------------------------------------------

    def manifests(self, project: str) -> dict[str, list[bytes]]:
        path = self._path(hubapi.MANIFESTS, project=project)
        doc = self._json("GET", path, f"read manifests of {project}")
        writers = doc.get("writers")
        if not isinstance(writers, dict):
            raise TransportError(f"the hub at {self._url} answered manifests without writers")
        return {
            str(w): self._blobs(v, "manifests")
            for w, v in writers.items()
            if KID_RE.fullmatch(str(w))
        }

    def newest_seqs(self, project: str) -> dict[str, int] | None:
        path = self._path(hubapi.SEQS, project=project)
        doc = self._json("GET", path, f"read seqs of {project}")
        seqs = doc.get("seqs")
        if not isinstance(seqs, dict):
            raise TransportError(f"the hub at {self._url} answered seqs without a map")
        self._lost[project] = chunk_ids(doc.get(hubapi.FIELD_LOST))
        return {
            str(w): s
            for w, s in seqs.items()
            if KID_RE.fullmatch(str(w)) and isinstance(s, int) and not isinstance(s, bool)
        }

    def writer_manifests(self, project: str, writer: str) -> list[bytes]:
        path = self._path(hubapi.WRITER_MANIFESTS, project=project, writer=writer)
        doc = self._json("GET", path, f"read manifests of {writer}/{project}")
        return self._blobs(doc.get("manifests"), "manifests")

    def newest_manifest(self, project: str, writer: str) -> bytes | None:
        path = self._path(hubapi.WRITER_MANIFESTS, project=project, writer=writer)
        doc = self._json(
            "GET", path, f"read the newest manifest of {writer}/{project}",
            query={hubapi.QUERY_LIMIT: 1},
        )  # fmt: skip
        found = self._blobs(doc.get("manifests"), "manifests")
        return found[0] if found else None

    def chunk(self, project: str, writer: str, chunk_id: str) -> bytes | None:
        if HEX_HASH_RE.fullmatch(chunk_id) is None:
            return None
        path = self._path(hubapi.CHUNK, project=project, writer=writer, chunk=chunk_id)
        response = self._send("GET", path, f"read a chunk of {writer}/{project}", missing_ok=True)
        return None if response is None else response.content

    def damaged_chunks(self, project: str, writer: str, ids: Iterable[str]) -> set[str]:
        """The hub's marks on our slot: of ``ids``, those it lost (a read or its scrub
        found the blob gone or damaged), from the seqs answer this sync already read."""
        lost = self._lost.pop(project, None)
        if lost is None:
            self.newest_seqs(project)
            lost = self._lost.pop(project, frozenset())
        return set(lost.intersection(ids)) if writer == self._key.kid else set()

    def push(
        self, project: str, writer: str, seq: int, manifest: bytes, chunks: Mapping[str, bytes]
    ) -> None:
        path = self._path(hubapi.MANIFEST, project=project, writer=writer, seq=seq)
        for chunk_id, data in chunks.items():
            chunk = self._path(hubapi.CHUNK, project=project, writer=writer, chunk=chunk_id)
            self._send("PUT", chunk, "upload a chunk", body=data, repeatable=True)
        try:
            self._send(
                "PUT", path, f"publish manifest seq {seq}", body=manifest,
                read_back=lambda: manifest_outcome(
                    self.newest_manifest(project, writer), manifest, seq
                ),
            )  # fmt: skip
        except HubError as exc:
            if exc.code == hubapi.MISSING_CHUNK and exc.listed:
                raise MissingChunks(str(exc), exc.listed) from exc
            raise

    def collect(self, project: str, writer: str, keep: set[str], grace_ms: int) -> int:
        path = self._path(hubapi.COLLECT, project=project, writer=writer)
        body = json.dumps({"keep": sorted(keep), "grace_ms": grace_ms}).encode()
        # repeatable: a repeat deletes nothing the first would have kept (see :mod:`~.retry`)
        doc = self._json("POST", path, "collect old chunks", body=body, repeatable=True)
        removed = doc.get("removed", 0)
        return removed if isinstance(removed, int) else 0

    # -- join requests ---------------------------------------------------------------

    def post_request(self, kid: str, data: bytes) -> None:
        path = self._path(hubapi.REQUEST, kid=kid)

        def read_back() -> Outcome:  # a live request (or its outcome) under our key: ours
            found = self.join_status(kid)
            return Outcome.ABSENT if found in (None, hubapi.REQUEST_UNKNOWN) else Outcome.LANDED

        mine = kid == self._key.kid  # only the joiner's key may ask for its request's state
        self._send(
            "POST", path, "post the join request", body=data, signed=False,
            read_back=read_back if mine else None,
        )  # fmt: skip

    def requests(self) -> dict[str, bytes]:
        doc = self._json("GET", self._path(hubapi.REQUESTS), "read join requests")
        found = doc.get("requests")
        if not isinstance(found, dict):
            raise TransportError(f"the hub at {self._url} answered requests without a map")
        try:
            out = {str(k): b64d(v) for k, v in found.items() if KID_RE.fullmatch(str(k))}
        except ValueError as exc:
            raise TransportError(f"the hub at {self._url} sent a bad join request") from exc
        door = doc.get("door")
        if isinstance(door, dict):
            self._warnings += door_warnings(door, self._clock())
        return out

    def join_status(self, kid: str) -> str | None:
        """Ask the hub about our own join request; reads no roster (see the interface)."""
        path = self._path(hubapi.REQUEST, kid=kid)
        try:
            doc = self._json("GET", path, "read the state of the join request")
        except HubError as exc:
            if exc.code in (hubapi.NO_REQUEST, hubapi.UNKNOWN_KEY):
                return hubapi.REQUEST_UNKNOWN
            if exc.status in (404, 405):  # a hub (or proxy) without this endpoint
                return None
            raise
        status = doc.get("status")
        if not isinstance(status, str) or status not in hubapi.REQUEST_STATES:
            raise TransportError(
                f"the hub at {self._url} answered the join request state with a value that "
                f"is none of {', '.join(sorted(hubapi.REQUEST_STATES))}"
            )
        return str(status)

    def reference_time(self) -> tuple[int, float] | None:
        return self._sender.hub_time

    def take_warnings(self) -> list[str]:
        out, self._warnings = self._warnings, []
        return out

    def remove_request(self, kid: str) -> None:
        if KID_RE.fullmatch(kid):
            self._send("DELETE", self._path(hubapi.REQUEST, kid=kid), "remove a join request")

    # -- change feed (for sync --watch) ------------------------------------------------

    def feed(self, since: int, wait_s: float = 25.0) -> tuple[int, list[dict[str, Any]]]:
        """Block up to ``wait_s`` for changes after cursor ``since``; (new cursor, changes)."""
        doc = self._json(
            "GET", self._path(hubapi.CHANGES), "read the change feed",
            query={hubapi.QUERY_SINCE: since, hubapi.QUERY_WAIT: wait_s},
            timeout_s=wait_s + 15.0,
        )  # fmt: skip
        cursor, changes = doc.get("cursor"), doc.get("changes")
        if not isinstance(cursor, int) or isinstance(cursor, bool) or not isinstance(changes, list):
            raise TransportError(f"the hub at {self._url} answered the change feed badly")
        return cursor, [c for c in changes if isinstance(c, dict)]

    def wait_for_change(
        self,
        since: str | None,
        timeout_s: float,
        *,
        ignore_writer: str | None = None,
        stop: threading.Event | None = None,
    ) -> tuple[str, bool]:
        """Long-poll the hub's change feed (``stop`` is seen between polls only)."""
        cursor = int(since) if since is not None and is_ms(since) else 0
        if since is None:
            cursor, _ = self.feed(cursor, wait_s=0)
            return str(cursor), False
        deadline = time.monotonic() + timeout_s
        while True:
            cursor, changes = self.feed(cursor, wait_s=max(0.0, deadline - time.monotonic()))
            if any(c.get("writer") != ignore_writer for c in changes):
                return str(cursor), True
            if not changes or time.monotonic() >= deadline or (stop and stop.is_set()):
                return str(cursor), False


def _fitting(
    roster: bytes, keyrings: list[tuple[str, int, bytes]]
) -> tuple[list[tuple[str, int, bytes]], list[tuple[str, int, bytes]]]:
    """``keyrings`` split into those that fit one roster publication beside ``roster``
    (:data:`~sealmem.protocol.hubapi.MAX_ROSTER_PUBLISH_BYTES`, in order: the current
    epochs come first) and the rest, sent one by one once the roster is stored."""
    size = len(json.dumps({"roster": b64e(roster), "keyrings": []}))
    for i, (*_, data) in enumerate(keyrings):
        size += len(b64e(data)) + 4  # the quotes and the separator
        if size > hubapi.MAX_ROSTER_PUBLISH_BYTES:
            return keyrings[:i], keyrings[i:]
    return keyrings, []
