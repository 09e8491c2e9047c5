"""Suite-wide isolation: no test reads or writes the real user's state.

Every test starts with ``SEALMEM_HOME`` and ``HOME`` pointing into a fresh
temporary directory, so a code path that falls back to the default home (or
to ``~/.claude``, ``~/.codex``, ...) lands there. Tests that need their own
homes set them explicitly, as the multi-member tests do.
"""

from __future__ import annotations

import pytest

# Real servers for the scale-out hub backend, started only by tests that ask for them.
from tests.support.postgres import pg_dsn, pg_server
from tests.support.s3 import s3_server, s3_url

__all__ = ["pg_dsn", "pg_server", "s3_server", "s3_url"]


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = tmp_path_factory.mktemp("isolated")
    monkeypatch.setenv("SEALMEM_HOME", str(base / "sealmem-home"))
    monkeypatch.setenv("HOME", str(base / "user-home"))
    (base / "user-home").mkdir()
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
