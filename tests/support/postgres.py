"""A real PostgreSQL for the tests: Debian's binaries, a cluster in a temp directory.

``initdb`` refuses to run as root and CI runs as root, so the cluster is made and
served by user ``nobody`` (the data directory is handed to that user); as any other
user it runs as that user.  The server listens on a free port of 127.0.0.1 with
``trust`` authentication and its unix socket inside the temp directory; it is
tuned for tests (no fsync) and stopped at the end of the session.

Each test gets its own database, copied from an empty template
(``CREATE DATABASE ... TEMPLATE``), so tests never see each other's rows.

When the binaries are missing the tests that need PostgreSQL are skipped, with
the command that installs them; with ``CI`` set, a missing PostgreSQL fails them.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .nobody import NOBODY

__all__ = ["PostgresServer", "find_bin_dir", "pg_dsn", "pg_server", "start_postgres"]

_TEMPLATE = "sealmem_template"
_USER = "postgres"


def find_bin_dir() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` holding initdb, or one on PATH."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: (
            int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0
        ),
    )
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_server_user() -> dict[str, int]:
    """subprocess arguments that drop to ``nobody`` when we are root."""
    return {"user": NOBODY, "group": NOBODY} if os.geteuid() == 0 else {}


class PostgresServer:
    """A running cluster; :meth:`new_database` gives each test its own database."""

    def __init__(self, root: Path, bin_dir: Path, port: int, proc: subprocess.Popen[bytes]):
        self.root = root
        self.bin_dir = bin_dir
        self.port = port
        self._proc = proc
        self._names = itertools.count(1)

    def dsn(self, dbname: str = "postgres") -> str:
        return f"postgresql://{_USER}@127.0.0.1:{self.port}/{dbname}"

    def execute(self, sql: str) -> None:
        """One statement in autocommit on the maintenance database."""
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(sql)  # type: ignore[arg-type]

    def new_database(self) -> str:
        """A fresh, empty database; its DSN."""
        name = f"t{os.getpid()}_{next(self._names)}"
        self.execute(f"CREATE DATABASE {name} TEMPLATE {_TEMPLATE}")
        return self.dsn(name)

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def start_postgres(bin_dir: Path) -> PostgresServer:
    """initdb + postgres in a new temp directory, as ``nobody`` when root; ready to use."""
    root = Path(tempfile.mkdtemp(prefix="sealmem-pg-"))
    data, sockets, log = root / "data", root / "sock", root / "postgres.log"
    if os.geteuid() == 0:
        os.chown(root, NOBODY, NOBODY)
    user = _as_server_user()
    init = subprocess.run(
        [str(bin_dir / "initdb"), "-D", str(data), "-U", _USER, "--auth=trust", "--no-sync",
         "-E", "UTF8", "--locale=C"],
        capture_output=True, cwd=root, check=False, **user,
    )  # fmt: skip
    if init.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {init.stderr.decode(errors='replace')}")
    sockets.mkdir()
    if os.geteuid() == 0:
        os.chown(sockets, NOBODY, NOBODY)
    port = _free_port()
    with open(log, "wb") as log_fh:
        if os.geteuid() == 0:
            os.chown(log, NOBODY, NOBODY)
        proc = subprocess.Popen(
            [str(bin_dir / "postgres"), "-D", str(data), "-h", "127.0.0.1", "-p", str(port),
             "-k", str(sockets), "-c", "fsync=off", "-c", "synchronous_commit=off",
             "-c", "full_page_writes=off", "-c", "max_connections=300"],
            stdout=log_fh, stderr=subprocess.STDOUT, cwd=root, **user,
        )  # fmt: skip
    server = PostgresServer(root, bin_dir, port, proc)
    deadline = time.monotonic() + 60
    import psycopg

    while True:
        if proc.poll() is not None:
            text = log.read_text(errors="replace")
            shutil.rmtree(root, ignore_errors=True)
            raise RuntimeError(f"postgres exited at start: {text}")
        try:
            with psycopg.connect(server.dsn(), autocommit=True, connect_timeout=2) as conn:
                conn.execute(f"CREATE DATABASE {_TEMPLATE}")  # type: ignore[arg-type]
            return server
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                server.stop()
                raise
            time.sleep(0.1)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """One PostgreSQL cluster for the test session (import this fixture in a conftest)."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        message = (
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb); "
            "install it with 'apt-get install -y postgresql'"
        )
        if os.environ.get("CI"):
            pytest.fail(message + " (CI is set: PostgreSQL is required)")
        pytest.skip(message)
    server = start_postgres(bin_dir)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_dsn(pg_server: PostgresServer) -> str:
    """A fresh, empty database of the session's cluster, as a ``postgresql://`` DSN."""
    return pg_server.new_database()
