"""``sealmem mcp --http``: the same MCP server over streamable HTTP on the loopback.

One tool set, two transports: :func:`.server.create_server` builds the server that
stdio serves too, and the SDK's streamable-HTTP app serves it here.  In front of it:

1. **Bearer token** (:class:`BearerToken`): every HTTP request must carry
   ``Authorization: Bearer <token>``, else 401 with ``WWW-Authenticate: Bearer``.
   The token is ``SEALMEM_MCP_TOKEN`` or, without it, generated at start and
   printed once to stderr (never logged, compared in constant time).  Any local
   process or web page can reach a loopback port; only a holder of the token
   reaches the store.
2. **Host and Origin** (the SDK's DNS-rebinding protection, given this port
   exactly): ``Host`` must be ``127.0.0.1:PORT`` or ``localhost:PORT`` (421
   otherwise) and an ``Origin``, when sent, ``http://127.0.0.1:PORT`` or
   ``http://localhost:PORT`` (403 otherwise).  No CORS headers are ever sent, so
   no page of another origin can read an answer.

The server listens on 127.0.0.1 only.  Uvicorn's access log is off: request
lines are no one's business, and headers (the token) never reach a log.
"""

from __future__ import annotations

import hmac
import os
import secrets
import socket
import sys
from typing import TYPE_CHECKING

from ...protocol.errors import InputError

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = [
    "DEFAULT_PORT",
    "MIN_TOKEN_CHARS",
    "PATH",
    "TOKEN_ENV",
    "BearerToken",
    "http_app",
    "run_http",
    "token_from_env",
]

TOKEN_ENV = "SEALMEM_MCP_TOKEN"  # noqa: S105 (the variable's name, not a token)
DEFAULT_PORT = 8765
PATH = "/mcp"
MIN_TOKEN_CHARS = 32
"""A shorter ``SEALMEM_MCP_TOKEN`` is refused: a generated one has 43 characters."""


class BearerToken:
    """ASGI middleware: HTTP requests without ``Authorization: Bearer <token>`` get 401.

    Lifespan events pass; any other connection (a WebSocket) is refused: the server
    serves none.
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = b"Bearer " + token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        given = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
        if hmac.compare_digest(given, self._expected):
            await self.app(scope, receive, send)
            return
        body = (
            b'{"error": "unauthorized: this MCP server needs the header '
            b"'Authorization: Bearer <token>'; the token is the one 'sealmem mcp --http' "
            b'printed at start, or SEALMEM_MCP_TOKEN"}'
        )
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", b'Bearer realm="sealmem"'),
        ]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def token_from_env() -> str | None:
    """``SEALMEM_MCP_TOKEN`` if set (refused when too short to be a secret)."""
    token = os.environ.get(TOKEN_ENV)
    if token is None:
        return None
    token = token.strip()
    if len(token) < MIN_TOKEN_CHARS or not token.isprintable() or " " in token:
        raise InputError(
            f"{TOKEN_ENV} is refused: a token must be at least {MIN_TOKEN_CHARS} printable "
            "characters without spaces; unset it to have one generated, or set one made by "
            "\"python3 -c 'import secrets; print(secrets.token_urlsafe(32))'\""
        )
    return token


def http_app(port: int, token: str, *, project: str | None = None) -> ASGIApp:
    """The MCP server as an ASGI app for 127.0.0.1:``port``, behind :class:`BearerToken`."""
    from mcp.server.transport_security import TransportSecuritySettings

    from .server import create_server

    local = [f"127.0.0.1:{port}", f"localhost:{port}"]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=local,
        allowed_origins=[f"http://{h}" for h in local],
    )
    app = create_server(project=project).streamable_http_app(
        streamable_http_path=PATH, transport_security=security, host="127.0.0.1"
    )
    return BearerToken(app, token)


def listen(port: int) -> socket.socket:
    """A socket listening on 127.0.0.1:``port`` (0: a free one)."""
    try:
        return socket.create_server(("127.0.0.1", port), backlog=128)
    except OSError as exc:
        raise InputError(
            f"port {port} on 127.0.0.1 is refused: {exc.strerror or exc}; "
            "choose another with --port"
        ) from exc


def run_http(port: int = DEFAULT_PORT, project: str | None = None) -> None:
    """Serve streamable HTTP on 127.0.0.1:``port`` until Ctrl-C or SIGTERM."""
    import uvicorn

    given = token_from_env()
    token = given or secrets.token_urlsafe(32)
    sock = listen(port)
    bound = sock.getsockname()[1]
    url = f"http://127.0.0.1:{bound}{PATH}"
    print(f"sealmem: MCP over streamable HTTP at {url}", file=sys.stderr)
    if given is None:
        print(f"sealmem: send 'Authorization: Bearer {token}'", file=sys.stderr)
    else:
        print(f"sealmem: send 'Authorization: Bearer ${TOKEN_ENV}'", file=sys.stderr)
    sys.stderr.flush()
    app = http_app(bound, token, project=project)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])
