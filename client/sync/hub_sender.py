"""One request to the hub, as :class:`~.hub.HubTransport` sends it: :class:`Sender`.

Every attempt is signed afresh with the member key (:mod:`sealmem.crypto.request`: a new
time and nonce, so a repeat is never refused as a replay of the first); a skewed clock is
corrected once from the hub's ``Sealmem-Hub-Time``; repeats, waits and the settling of a
lost answer follow :mod:`~.retry`; a refusal is a :class:`~.hub_answers.HubError`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping

import httpx

from ...crypto import MemberKey
from ...crypto.request import sign_request
from ...protocol import hubapi
from .hub_answers import HubConflictError, error, is_ms, retry_after, unreadable
from .retry import UNKNOWN_STATUSES, Backoff, Outcome, never_sent, repeats, settle
from .transport import Unreachable

__all__ = ["Sender"]


class Sender:
    """Signs, sends and repeats requests to one hub over ``client``."""

    def __init__(
        self,
        url: str,
        key: MemberKey,
        client: httpx.Client,
        *,
        owns_client: bool,
        clock: Callable[[], int],
        retry_budget_s: float,
        sync_budget_s: float,
    ) -> None:
        self._url = url
        self._key = key
        self._client = client
        self._owns_client = owns_client
        self._clock = clock
        self._retry_budget_s = retry_budget_s
        self._sync_budget_s = sync_budget_s
        self._sync_deadline: float | None = None
        self._skew_ms = 0
        #: the newest hub time told (ms), with the ``time.monotonic()`` it came at
        self.hub_time: tuple[int, float] | None = None

    @contextlib.contextmanager
    def syncing(self) -> Iterator[None]:
        """While a sync runs, no request repeats past ``sync_budget_s`` from its start;
        after it (a watcher's long poll, an admin command), each request has its own."""
        self._sync_deadline = time.monotonic() + self._sync_budget_s
        try:
            yield
        finally:
            self._sync_deadline = None

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def send(
        self,
        method: str,
        path: str,
        what: str,
        *,
        body: bytes = b"",
        query: Mapping[str, str | int | float] | None = None,
        signed: bool = True,
        headers: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        missing_ok: bool = False,
        repeatable: bool = False,
        read_back: Callable[[], Outcome] | None = None,
    ) -> httpx.Response | None:
        """One request, signed afresh at every attempt; repeated as :mod:`~.retry` says
        (``repeatable``: a repeat is harmless, as a GET's is).  ``read_back`` reads the
        state back when the answer was lost after sending; None returned: it had landed."""
        repeatable = repeatable or method == "GET"
        backoff = Backoff(self._retry_budget_s, self._sync_deadline)
        skew_retried = resent = False
        while True:
            request = self._signed_request(method, path, body, query, signed, headers, timeout_s)
            try:
                response = self._client.send(request)
            except httpx.HTTPError as exc:
                if not isinstance(exc, httpx.TransportError) or repeatable or never_sent(exc):
                    again = isinstance(exc, httpx.TransportError)
                    if again and backoff.pause():
                        continue
                    raise self._unreachable(what, exc, backoff.attempts, repeatable) from exc
                lost: Exception = self._unreachable(what, exc, backoff.attempts, False, resent)
            else:
                if is_ms(told := response.headers.get(hubapi.HEADER_HUB_TIME, "")):
                    self.hub_time = (int(told), time.monotonic())
                if response.status_code < 300:  # a redirect is not followed: not done
                    return response
                refused = error(response, self._url, what, backoff.attempts)
                if refused.status == 404 and missing_ok and refused.code == hubapi.NOT_FOUND:
                    return None
                stale = refused.status == 401 and refused.code == hubapi.STALE_TIME
                if stale and not skew_retried and is_ms(told):
                    self._skew_ms = int(told) - self._clock()
                    skew_retried = True
                    continue
                if repeats(refused.status, refused.code, repeatable):
                    asked = hubapi.HEADER_RETRY_AFTER in response.headers or refused.status == 429
                    if backoff.pause(retry_after(response) if asked else None):
                        continue
                if read_back is None or refused.status not in UNKNOWN_STATUSES:
                    raise refused
                lost = refused
            if read_back is None:  # the effect is unknown and cannot be read back
                raise lost
            settled = settle(read_back(), resent)
            if settled == "done":
                return None
            if settled == "conflict":
                raise HubConflictError(
                    f"the hub at {self._url} holds another object where this member's {what} "
                    "was to go (its answer was lost, and reading back found the other)",
                    status=hubapi.CONFLICT_STATUS, code=hubapi.STALE_SEQ,
                )  # fmt: skip
            if settled == "lost" or not backoff.pause(0.0):  # a resend is an attempt too
                raise lost
            resent = True  # "again": it did not land; once more, signed afresh

    def _signed_request(
        self,
        method: str,
        path: str,
        body: bytes,
        query: Mapping[str, str | int | float] | None,
        signed: bool,
        headers: Mapping[str, str] | None,
        timeout_s: float | None,
    ) -> httpx.Request:
        request = self._client.build_request(
            method, path, params=query, content=body, headers=headers,
            timeout=httpx.USE_CLIENT_DEFAULT if timeout_s is None else timeout_s,
        )  # fmt: skip
        if signed:
            target = request.url.raw_path.decode("ascii")
            now = self._clock() + self._skew_ms
            request.headers.update(sign_request(self._key, method, target, body, now_ms=now))
        return request

    def _unreachable(
        self, what: str, exc: httpx.HTTPError, attempts: int, repeatable: bool, resent: bool = False
    ) -> Unreachable:
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        if resent:
            return Unreachable(
                f"lost the hub's answer at {self._url} to {what} twice (the hub's state, read "
                f"back between, did not hold it): {unreadable(exc)}; sync again (it reads the "
                "state back)"
            )
        if repeatable or never_sent(exc):
            return Unreachable(
                f"cannot reach the hub at {self._url} to {what}{tries}: {unreadable(exc)}; "
                "check the URL and that the hub is running"
            )
        return Unreachable(
            f"lost the hub's answer at {self._url} to {what}: {unreadable(exc)}; it may have "
            "been applied, and is not sent again blindly: sync again (it reads the hub's "
            "state back)"
        )
