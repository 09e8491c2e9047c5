"""Looking for forgotten text in a store's files (``store.db`` and ``store.db-wal``).

The markers are words no other term of a test store starts like, so that a
full-text segment (whose terms share prefixes) would hold each of them whole.
"""

from __future__ import annotations

from pathlib import Path

CONTENT = "qjxcontentmark"
KEYWORD = "vkwkeywordmark"
LATER = "yzlaterversionmark"
MARKERS = (CONTENT, KEYWORD, LATER)


def store_bytes(path: Path) -> dict[str, bytes]:
    """The raw bytes of the store file and of its WAL (when there is one)."""
    files = {path.name: path.read_bytes()}
    wal = path.with_name(path.name + "-wal")
    if wal.exists():
        files[wal.name] = wal.read_bytes()
    return files


def traces(path: Path, markers: tuple[str, ...] = MARKERS) -> list[tuple[str, str]]:
    """(file, marker) for every marker found in the store's files."""
    return [
        (name, marker)
        for name, data in store_bytes(path).items()
        for marker in markers
        if marker.encode() in data
    ]
