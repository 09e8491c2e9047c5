"""Team features run on Windows too: no module of the package imports ``fcntl``.

``fcntl`` exists only on POSIX; importing it at module level made ``sync`` and
``hub serve`` fail to start on Windows.  File locks go through ``filelock``.
(``lint-imports`` holds the same rule for the import graph; this test also
sees imports the graph tools skip, such as ones under ``if TYPE_CHECKING``.)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("client", "hub", "crypto", "protocol")
POSIX_ONLY = {"fcntl", "termios", "pwd", "grp", "resource"}


def _imported(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.slow
def test_no_module_imports_a_posix_only_module() -> None:
    modules = [p for top in PACKAGES for p in (ROOT / top).rglob("*.py")]
    assert len(modules) > 50  # the walk really sees the package
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imported(ast.parse(path.read_text())) & POSIX_ONLY)
        for path in modules
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_the_journal_opens_a_file_to_fsync_it_read_write_on_windows() -> None:
    # Windows' os.fsync (_commit) refuses a read-only handle: a read-only open there made
    # every sidecar non-durable, and a power cut could then read as damage.  No Windows
    # run here: the choice is checked by name, and the POSIX choice by a real fsync.
    import os

    from sealmem.client.store.journal import sync_flags

    assert sync_flags("nt") & (os.O_RDWR | os.O_WRONLY)
    assert sync_flags("posix") == os.O_RDONLY
    fd = os.open(__file__, sync_flags())
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
