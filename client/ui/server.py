"""The viewer's server: a loopback socket, uvicorn on it, and the browser's way in.

The browser is handed a private file (mode 0600 in ``SEALMEM_HOME``) that
refreshes to the URL with its token, never the URL itself: a browser started
with the URL keeps it in its command line, which every user of the machine
can read (``ps``), and the viewer's port is open to all of them.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import uvicorn

from ..fsutil import atomic_write
from .guard import refresh_page

__all__ = ["can_open_browser", "listen", "opener", "serve"]


def listen(port: int) -> socket.socket:
    """A socket listening on 127.0.0.1:``port`` (0: a free one); ``OSError`` if taken.

    Bound by hand: ``socket.create_server`` would append the address to the reason
    ``sealmem ui`` prints after it.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)  # a browser opened before the server runs may connect: queue it
    return sock


def opener(home: Path, port: int, url: str) -> Path:
    """Write the private file that sends a browser to ``url`` (with its token)."""
    page = refresh_page(url, "sealmem ui", "Open the sealmem viewer")
    path = home / f"ui-{port}.html"
    atomic_write(path, page.encode(), mode=0o600)
    return path


def can_open_browser() -> bool:
    """Whether a graphical browser can be opened here.

    Without a display (over ssh, in a container) Python's :mod:`webbrowser`
    runs a console browser (lynx, w3m, www-browser) in this very terminal.
    ``BROWSER`` set by the user is honoured.
    """
    if os.environ.get("BROWSER") or sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def serve(
    app: Any, sock: socket.socket, start: Callable[[], None], done: Callable[[], None]
) -> None:
    """Run ``app`` on ``sock`` until Ctrl-C or SIGTERM (then act as they would).

    ``start`` runs first and ``done`` once the server has stopped, both inside its signal
    handlers: a signal taken meanwhile stops the run, and is raised again only after
    ``done`` (a SIGTERM then ends the process, past any ``finally`` of the caller)."""
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = _EarlySignals(config)
    # A Ctrl-C that lands before uvicorn starts awaiting its server leaves that coroutine
    # unawaited: the stop is clean (exit 130), the warning about it is noise.
    warnings.filterwarnings("ignore", "coroutine 'Server.serve' was never awaited", RuntimeWarning)
    with uvicorn.Server.capture_signals(server):
        try:
            start()
            server.run(sockets=[sock])
        finally:
            done()


class _EarlySignals(uvicorn.Server):
    """uvicorn's server with its signal handlers in place before its loop starts.

    uvicorn installs them once its loop runs, after asyncio's own SIGINT handler, so a
    Ctrl-C would meet a different handler depending on when it comes; :func:`serve`
    enters uvicorn's ``capture_signals`` around the whole run instead (a second Ctrl-C
    stops at once; afterwards each signal taken is raised again: Ctrl-C ends the
    command with 130, SIGTERM the process).
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
