"""The viewer's access control: one ASGI middleware in front of every route.

In order, for every HTTP request:

1. **Host** must be the address the viewer is bound to (``127.0.0.1:PORT`` or
   ``localhost:PORT``): a page on another site that rebinds its DNS name to
   127.0.0.1 sends its own name and is refused (421).
2. **Token**: a ``?token=`` equal to the per-run token sets an HttpOnly,
   SameSite=Strict cookie holding a separate per-run session secret and
   answers a page that refreshes to the same path without the token (it
   leaves the address bar).  Not a 303: a browser sends no SameSite=Strict
   cookie along a redirect chain that another site started, and ``sealmem ui``
   opens the URL from a local file (so that the token is in no command line
   another user can read), which is another site.  Without the cookie every
   route but ``/static`` answers 401 with how to get in.  Cookies are not
   isolated by port, so every server on 127.0.0.1 shares them: the cookie is
   named after the viewer's port (two viewers keep their own sign-in), and
   the ``Cookie`` header is read leniently (a JSON cookie another local server
   set must not sign the user out); any copy of the cookie may hold the session.
3. **Fetch metadata**: a request a browser says another site started
   (``Sec-Fetch-Site`` ``same-site`` or ``cross-site``) is refused (403), the
   token exchange aside.  Every server on 127.0.0.1 is the same *site* as the
   viewer, so the SameSite cookie rides along with its fetches and frames:
   they could time searches (XS-search) though they cannot read the answers.
4. **Writes** (every method but GET/HEAD) need an ``Origin`` equal to the
   viewer's own (a cross-site form post carries the attacker's origin) and a
   ``csrf`` form field equal to the per-run CSRF token that the pages embed;
   bodies are URL-encoded forms (415 otherwise: no ``text/plain`` trick) of at
   most :data:`MAX_FORM_BYTES`, read within :data:`BODY_TIMEOUT_S` (408
   otherwise: a client that sends the headers and then trickles or withholds
   the body does not hold the request open); a form cut off by a disconnect is
   dropped, never handed to the app in part.
5. Every response carries a strict Content-Security-Policy (no inline
   script or style, no framing, forms only to this origin), ``nosniff``,
   ``same-origin`` referrers (nothing leaves for another site) and ``no-store``.

WebSocket handshakes pass the same Host, Fetch-metadata, Origin and cookie
checks (a page on another site may open a WebSocket to 127.0.0.1: browsers
apply no same-origin rule to them) and are refused before the app sees them
(the viewer serves none).

Secrets are compared in constant time and never logged.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass, field
from html import escape
from urllib.parse import parse_qsl, quote, urlencode

import anyio
from starlette.responses import HTMLResponse, PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "BODY_TIMEOUT_S",
    "COOKIE",
    "CSP",
    "MAX_FORM_BYTES",
    "Guard",
    "Secrets",
    "cookie_name",
    "refresh_page",
]

COOKIE = "sealmem_ui"
MAX_FORM_BYTES = 256 * 1024
#: the longest a form post's body may take to arrive, from its headers (s); then 408
BODY_TIMEOUT_S = 10.0
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; connect-src 'self'"
)
_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make Chromium send Origin: null
    (b"cache-control", b"no-store"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
_SAFE = {"GET", "HEAD"}
_FORM = "application/x-www-form-urlencoded"
_OWN = {"same-origin", "none"}  # Sec-Fetch-Site of the viewer's own pages and the address bar
_ANOTHER_SITE = (
    "request from another site refused: type the viewer's address in the address bar "
    "or open the URL that 'sealmem ui' printed"
)


@dataclass(frozen=True)
class Secrets:
    """The per-run secrets: the URL token, the cookie's session value, the CSRF token."""

    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    session: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24))


def _same(a: str | None, b: str) -> bool:
    return a is not None and hmac.compare_digest(a.encode(), b.encode())


def cookie_name(hosts: frozenset[str]) -> str:
    """The session cookie's name for a viewer answering to ``hosts`` (``HOST:PORT``)."""
    ports = sorted({host.rpartition(":")[2] for host in hosts if ":" in host})
    return f"{COOKIE}_{'_'.join(ports)}"


def _cookie_values(headers: list[tuple[bytes, bytes]], name: str) -> list[str]:
    """Every value of cookie ``name`` in every ``Cookie`` header, read as browsers write them.

    Not :class:`http.cookies.SimpleCookie`: it stops at the first cookie it finds
    malformed (a JSON value, a space), and keeps only the last of several copies.
    """
    values = []
    for key, raw in headers:
        if key.lower() != b"cookie":
            continue
        for part in raw.decode("latin-1").split(";"):
            key_text, sep, value = part.partition("=")
            if sep and key_text.strip() == name:
                values.append(value.strip())
    return values


class Guard:
    """ASGI middleware enforcing the rules of the module docstring."""

    def __init__(self, app: ASGIApp, *, secrets: Secrets, hosts: frozenset[str]) -> None:
        self.app = app
        self.secrets = secrets
        self.hosts = hosts
        self.origins = frozenset(f"http://{host}" for host in hosts)
        self.cookie = cookie_name(hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_HEADERS]}
            await send(message)

        async def refuse(status: int, text: str) -> None:
            await PlainTextResponse(text + "\n", status)(scope, receive, secured)

        host = headers.get("host", "")
        if host not in self.hosts:
            await refuse(421, "unknown host: open the URL that 'sealmem ui' printed")
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        path = scope["path"]
        tokens = [value for key, value in query if key == "token"]
        if tokens:
            if not all(_same(token, self.secrets.token) for token in tokens):
                await refuse(401, "wrong token: open the URL that 'sealmem ui' printed")
                return
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            here = "/" + quote(path.lstrip("/"), safe="/")  # never "//host": no open redirect
            target = here + (f"?{rest}" if rest else "")
            page = refresh_page(target, "sealmem", "Continue", before="Signed in. ", after=".")
            cookie = f"{self.cookie}={self.secrets.session}; HttpOnly; SameSite=Strict; Path=/"
            await HTMLResponse(page, headers={"set-cookie": cookie})(scope, receive, secured)
            return
        if headers.get("sec-fetch-site", "same-origin") not in _OWN:
            await refuse(403, _ANOTHER_SITE)
            return
        if path.startswith("/static/"):
            await self.app(scope, receive, secured)
            return
        sessions = _cookie_values(scope["headers"], self.cookie)
        if not any(_same(value, self.secrets.session) for value in sessions):
            await refuse(
                401, "not signed in: open the URL (with its token) that 'sealmem ui' printed"
            )
            return
        if scope["method"] not in _SAFE:
            origin = headers.get("origin")
            if origin not in self.origins:
                await refuse(403, "cross-site request refused (Origin is not this viewer)")
                return
            kind = headers.get("content-type", "").partition(";")[0].strip().lower()
            if kind != _FORM:
                await refuse(415, f"writes are HTML form posts ({_FORM}) only")
                return
            body: bytes | None = b""
            too_big = False
            with anyio.move_on_after(BODY_TIMEOUT_S) as timer:
                body, too_big = await _body(receive)
            if body is None:  # the client left mid-body: part of a form is not acted on
                return
            if timer.cancelled_caught:
                await refuse(
                    408, f"the form did not arrive within {BODY_TIMEOUT_S:g} s; send it again"
                )
                return
            if too_big:
                await refuse(413, f"form larger than {MAX_FORM_BYTES} bytes refused")
                return
            form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
            if not _same(form.get("csrf"), self.secrets.csrf):
                await refuse(403, "missing or wrong CSRF token: reload the page")
                return
            scope = {**scope, "sealmem.form": form}
            receive = _replay(body)
        await self.app(scope, receive, secured)

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket handshake: the HTTP rules that apply to it, then the app (which
        serves none and closes it).  A refusal closes it before it is accepted (the
        server answers the handshake 403); no app code runs for it."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        sessions = _cookie_values(scope["headers"], self.cookie)
        allowed = (
            headers.get("host", "") in self.hosts
            and headers.get("origin") in self.origins
            and headers.get("sec-fetch-site", "same-origin") in _OWN
            and any(_same(value, self.secrets.session) for value in sessions)
        )
        if not allowed:
            await send({"type": "websocket.close", "code": 1008})
            return
        await self.app(scope, receive, send)


async def _body(receive: Receive) -> tuple[bytes | None, bool]:
    """The whole body and whether it is over the limit; None when the client
    disconnected before the last of it came."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None, False
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_FORM_BYTES:
            return b"", True
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks), False


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


def refresh_page(url: str, title: str, link: str, before: str = "", after: str = "") -> str:
    """A page that sends the browser on to ``url`` by a meta refresh (the CSP allows no
    script), with the same address as a link for a browser that does not follow it."""
    where = escape(url, quote=True)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="refresh" content="0;url={where}"><title>{title}</title></head>'
        f'<body><p>{before}<a href="{where}">{link}</a>{after}</p></body></html>\n'
    )
