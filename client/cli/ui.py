"""``sealmem ui``: the local web viewer (see :mod:`sealmem.client.ui`).

The viewer's server and the browser's way in are :mod:`sealmem.client.ui.server`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from . import output

__all__ = ["register", "ui"]


def ui(
    port: Annotated[
        int, typer.Option("--port", help="Port on 127.0.0.1 (0: a free one).", min=0, max=65535)
    ] = 0,
    no_open: Annotated[
        bool, typer.Option("--no-open", help="Print the URL only; do not open a browser.")
    ] = False,
) -> None:
    """Look at your and your team's memory in a browser (127.0.0.1 only; Ctrl-C stops)."""
    # Here, not at the top: every other command would load uvicorn, Starlette and jinja2.
    import threading
    import webbrowser

    from ..paths import ensure_home
    from ..ui import server
    from ..ui.app import allowed_hosts, create_app
    from ..ui.guard import Secrets

    home = ensure_home()
    try:
        sock = server.listen(port)
    except OSError as exc:
        raise typer.BadParameter(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from None
    bound = sock.getsockname()[1]
    secrets = Secrets()
    app = create_app(home, secrets, allowed_hosts(bound))
    url = f"http://127.0.0.1:{bound}/?token={secrets.token}"
    output.say(f"sealmem ui: {url}")
    output.say("the link signs this browser in for this run; Ctrl-C stops the viewer")
    door: Path | None = None
    if not no_open and not server.can_open_browser():
        output.say("no display to open a browser on: open the URL above in yours")
        no_open = True

    def start() -> None:  # under the server's signal handlers: done() follows it
        nonlocal door
        if not no_open:
            door = server.opener(home, bound, url)
            # a BROWSER command may run until its window closes: the viewer serves meanwhile
            uri = door.as_uri()  # the token stays out of every command line
            threading.Thread(target=webbrowser.open, args=(uri,), daemon=True).start()

    def done() -> None:  # the token's file does not outlive the run, SIGTERM included
        sock.close()
        if door is not None:
            door.unlink(missing_ok=True)

    server.serve(app, sock, start, done)


def register(app: typer.Typer) -> None:
    app.command()(ui)
