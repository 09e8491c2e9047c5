"""Run the hub under uvicorn: in the foreground (``sealmem hub serve``) or in a
background thread on a free port (the demo and the end-to-end tests)."""

from __future__ import annotations

import asyncio
import gc
import logging
import socket
import sys
import threading
import time

import uvicorn

from ...protocol.errors import SealmemError
from ..config import HubConfig
from .app import create_app

__all__ = [
    "HEAD_TIMEOUT_S",
    "MAX_HEAD_BYTES",
    "BackgroundHub",
    "free_port",
    "serve",
]

_GRACEFUL_S = 3
#: an idle kept-alive connection is closed after this many seconds
KEEP_ALIVE_S = 5
#: the request line and headers of one request, at most (both stacks refuse more with 400)
MAX_HEAD_BYTES = 16 * 1024
#: a request head begun must be complete within this many seconds (httptools stack: the
#: connection is closed; a slowloris client cannot hold connections for ever)
HEAD_TIMEOUT_S = 10.0


#: how long a thread may hold the GIL while another waits for it (Python's default: 5 ms)
SWITCH_INTERVAL_S = 0.0005


def free_port() -> int:
    """A TCP port nothing listens on right now (on 127.0.0.1)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stack(name: str) -> tuple[type[asyncio.Protocol] | str, str]:
    """(uvicorn ``http``, ``loop``) for one of ``HTTP_STACKS`` (checked by the config)."""
    if name == "h11":
        return "h11", "asyncio"
    from .http_protocol import BoundedHttpTools  # imports httptools

    return BoundedHttpTools, "auto"  # uvloop where it installs (not on Windows)


def _uvicorn_config(config: HubConfig, access_log: bool) -> uvicorn.Config:
    http, loop = _stack(config.http_stack)
    return uvicorn.Config(
        create_app(config),
        host=config.host,
        port=config.port,
        access_log=False,  # ours (sealmem.hub.access) has route templates, not raw paths
        log_level="info" if access_log else "warning",
        timeout_graceful_shutdown=_GRACEFUL_S,
        server_header=False,
        # the edge (hub/http/edge.py) reads bodies; these bound what comes before them
        http=http,  # with a head-size bound on either stack (http_protocol.py for httptools)
        loop=loop,
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        limit_concurrency=config.max_connections,  # more connections get 503 at once
        timeout_keep_alive=KEEP_ALIVE_S,
    )


def _process_settings() -> None:
    """What the hub process sets for itself (not a hub run inside another program).

    Its log lines never print a process or thread, so no record gathers them (a
    ``getpid`` system call and two lookups per access-log line).  The garbage
    collector: the objects made at start (modules, the app) are frozen out of its
    scans, and the youngest generation is collected every 20,000 allocations rather
    than 700 (a request allocates a few hundred objects, nearly all freed by their
    reference counts; each collection walks the young ones)."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    logging.logProcesses = False
    logging.logMultiprocessing = False
    logging.logThreads = False
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(20_000, older, oldest)


def serve(config: HubConfig) -> None:
    """Serve until interrupted (SIGINT/SIGTERM handled by uvicorn)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    _process_settings()
    server = uvicorn.Server(_uvicorn_config(config, access_log=True))
    gc.collect()
    gc.freeze()
    server.run()


class BackgroundHub:
    """A hub on ``config.host:config.port`` in a daemon thread; a context manager."""

    def __init__(self, config: HubConfig) -> None:
        self.config = config
        self._server = uvicorn.Server(_uvicorn_config(config, access_log=False))
        self._thread = threading.Thread(target=self._server.run, name="sealmem-hub", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.config.host}:{self.config.port}"

    def start(self, timeout_s: float = 10.0) -> BackgroundHub:
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise SealmemError(
                    f"the hub did not start on {self.url} (port taken, or data dir in use?)"
                )
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=_GRACEFUL_S + 5)

    def __enter__(self) -> BackgroundHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
