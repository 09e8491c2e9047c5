"""``sealmem ui`` stopped by a Ctrl-C that lands before uvicorn serves.

``uvicorn.Server.run`` makes the ``serve()`` coroutine, then the event loop; a
SIGINT in between leaves the coroutine unawaited, and Python printed
"RuntimeWarning: coroutine 'Server.serve' was never awaited" on the user's
terminal.  A person hits that window only by chance; here the SIGINT is
delivered by the real signal machinery at exactly that point: the loop factory
uvicorn asks for (a real ``uvicorn.Config`` method) sends it to its own process.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import Seeded

pytestmark = pytest.mark.slow

_INTERRUPTED = """
import os, signal, sys
import uvicorn

made = uvicorn.Config.get_loop_factory

def ctrl_c_now(self):
    # uvicorn has made the serve() coroutine and not yet the loop that awaits it
    os.kill(os.getpid(), signal.SIGINT)
    return made(self)

uvicorn.Config.get_loop_factory = ctrl_c_now
from sealmem.client.cli import main
sys.exit(main(["ui", "--no-open"]))
"""


def test_a_ctrl_c_before_uvicorn_serves_stops_cleanly(seeded: Seeded) -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "dev", "-c", _INTERRUPTED],  # dev mode: every warning shown
        env={**os.environ, "SEALMEM_HOME": str(seeded.home)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "sealmem ui: http://127.0.0.1:" in proc.stdout  # it got as far as serving
    assert proc.returncode == 130, proc.stderr
    assert "never awaited" not in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip() == ""
    assert not list(seeded.home.glob("ui-*.html"))  # nothing of the run is left behind
