"""``sealmem ui``: the local web viewer (see :mod:`sealmem.client.ui`).

The browser is handed a private file (mode 0600 in ``SEALMEM_HOME``) that
refreshes to the URL with its token, never the URL itself: a browser started
with the URL keeps it in its command line, which every user of the machine
can read (``ps``), and the viewer's port is open to all of them.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from html import escape
from pathlib import Path
from typing import Annotated, Any

import typer

from . import output

__all__ = ["opener", "register", "ui"]


def opener(home: Path, port: int, url: str) -> Path:
    """Write the private file that sends a browser to ``url`` (with its token)."""
    from ..fsutil import atomic_write

    where = escape(url, quote=True)
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="refresh" content="0;url={where}"><title>sealmem ui</title></head>'
        f'<body><p><a href="{where}">Open the sealmem viewer</a></p></body></html>\n'
    )
    path = home / f"ui-{port}.html"
    atomic_write(path, page.encode(), mode=0o600)
    return path


def _display() -> bool:
    """Whether a graphical browser can be opened here.

    Without a display (over ssh, in a container) Python's :mod:`webbrowser`
    runs a console browser (lynx, w3m, www-browser) in this very terminal.
    ``BROWSER`` set by the user is honoured.
    """
    import os
    import sys

    if os.environ.get("BROWSER") or sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def ui(
    port: Annotated[
        int, typer.Option("--port", help="Port on 127.0.0.1 (0: a free one).", min=0, max=65535)
    ] = 0,
    no_open: Annotated[
        bool, typer.Option("--no-open", help="Print the URL only; do not open a browser.")
    ] = False,
) -> None:
    """Look at your and your team's memory in a browser (127.0.0.1 only; Ctrl-C stops)."""
    import socket
    import warnings
    import webbrowser

    import uvicorn

    from ..paths import ensure_home
    from ..ui.app import allowed_hosts, create_app
    from ..ui.guard import Secrets

    home = ensure_home()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise typer.BadParameter(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from None
    bound = sock.getsockname()[1]
    sock.listen(128)  # a browser opened below may connect before the server runs: queue it
    secrets = Secrets()
    app = create_app(home, secrets, allowed_hosts(bound))
    url = f"http://127.0.0.1:{bound}/?token={secrets.token}"
    output.say(f"sealmem ui: {url}")
    output.say("the link signs this browser in for this run; Ctrl-C stops the viewer")
    door = None
    if not no_open and not _display():
        output.say("no display to open a browser on: open the URL above in yours")
    elif not no_open:
        door = opener(home, bound, url)
        webbrowser.open(door.as_uri())  # the token stays out of every command line
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = _quiet_server(uvicorn)(config)
    # A Ctrl-C that lands before uvicorn starts awaiting its server leaves that coroutine
    # unawaited: the stop is clean (exit 130), the warning about it is noise.
    warnings.filterwarnings("ignore", "coroutine 'Server.serve' was never awaited", RuntimeWarning)
    try:
        with _stops(server):
            server.run(sockets=[sock])
    finally:
        sock.close()
        if door is not None:
            door.unlink(missing_ok=True)


def _quiet_server(uvicorn: Any) -> Any:
    """uvicorn's server without signal handlers of its own (:func:`_stops` has them)."""

    class Server(uvicorn.Server):  # type: ignore[misc]
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return Server


@contextlib.contextmanager
def _stops(server: Any) -> Iterator[None]:
    """Ctrl-C (and SIGTERM) stop ``server`` whenever they come, then act as they would.

    uvicorn installs its handlers only once its loop runs, after asyncio's own SIGINT
    handler, so a Ctrl-C meets a different handler depending on when it comes.  Here
    one handler is in place before the server starts and until it stopped; it asks the
    server to exit (a second Ctrl-C: at once).
    Afterwards each signal taken is raised again with the old handlers back, as
    uvicorn does: Ctrl-C ends the command with 130, SIGTERM the process.
    """
    taken: list[int] = []

    def stop(signum: int, frame: object) -> None:
        taken.append(signum)
        if server.should_exit and signum == signal.SIGINT:
            server.force_exit = True
        server.should_exit = True

    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only: nothing to install
        return
    wanted = [signal.SIGINT, signal.SIGTERM]
    before = {sig: signal.signal(sig, stop) for sig in wanted}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    for signum in reversed(taken):
        signal.raise_signal(signum)


def register(app: typer.Typer) -> None:
    """Add ``ui`` to ``app``."""
    app.command()(ui)
