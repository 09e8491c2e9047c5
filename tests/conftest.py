"""Suite-wide isolation: no test reads or writes the real user's state.

Every test starts with ``SEALMEM_HOME`` and ``HOME`` pointing into a fresh
temporary directory, so a code path that falls back to the default home (or
to ``~/.claude``, ``~/.codex``, ...) lands there. Tests that need their own
homes set them explicitly, as the multi-member tests do.

A test of the PostgreSQL + S3 backend is marked ``slow`` here, wherever it is: it
needs the session's PostgreSQL cluster and S3 server (seconds to start).
"""

from __future__ import annotations

import re
import signal

import pytest

# Real servers for the scale-out hub backend, started only by tests that ask for them.
from tests.support.postgres import pg_dsn, pg_server
from tests.support.s3 import s3_server, s3_url

# A run started as a background job of a non-interactive shell (``cmd &`` in a CI script,
# ``nohup``) inherits SIGINT ignored, and so would every process a test starts: the tests
# that stop a viewer or a watch with Ctrl-C would wait for ever.  A handled signal is
# reset to its default in a new program, so handling it here gives the children theirs.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

__all__ = ["pg_dsn", "pg_server", "s3_server", "s3_url"]


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = tmp_path_factory.mktemp("isolated")
    monkeypatch.setenv("SEALMEM_HOME", str(base / "sealmem-home"))
    monkeypatch.setenv("HOME", str(base / "user-home"))
    (base / "user-home").mkdir()
    # A hook gives up after 2 s by default; a loaded CI machine creating a store in a fresh
    # process can take longer, and a test of what a hook prints must not depend on that.
    # The tests of the time bound itself set it back to 2 s.
    monkeypatch.setenv("SEALMEM_HOOK_BUDGET_S", "30")
    # What the CLI prints must not depend on the runner's terminal: pytest-xdist's workers
    # inherit COLUMNS=80, and a table wraps to COLUMNS. The tests of wrapping set it.
    monkeypatch.delenv("COLUMNS", raising=False)
    # The semantic extra (installed with the test extra) loads a model in every server
    # and viewer: off unless a test turns it on (tests/recall/test_semantic.py).
    monkeypatch.setenv("SEALMEM_SEMANTIC", "0")
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)


_ENGINE_FIXTURES = frozenset({"pg_server", "pg_dsn", "s3_server", "s3_url"})
_ENGINE_PARAM = re.compile(r"postgresql(\+\w+)*")  # a backend's name, not a URL


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        params = getattr(item, "callspec", None)
        values = params.params.values() if params is not None else ()
        if _ENGINE_FIXTURES & set(getattr(item, "fixturenames", ())) or any(
            isinstance(v, str) and _ENGINE_PARAM.fullmatch(v) for v in values
        ):
            item.add_marker(pytest.mark.slow)
