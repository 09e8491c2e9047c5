"""``sealmem watch``: follow Claude Code transcripts with watchfiles and capture as they grow.

Transcripts that exist when the watch starts are followed from their current
end (``sealmem scan`` is for the past); a new transcript is read from its
start.  With ``save`` the read offsets are kept in ``<home>/capture`` (shared
with the Stop hook, so the two never capture a turn twice); without it they
live only as long as the watch, and proposals are reported, not stored.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import watchfiles

from ...protocol.errors import InputError
from .. import paths
from ..project import current_project
from ..recall.api import MemoryStore
from . import capture
from .transcripts import find_transcripts, read_turns

__all__ = ["Follower", "watch"]

Report = Callable[[Path, list[str]], None]
_TAIL = 65_536


def _whole_lines_end(path: Path) -> int:
    """Offset just after the last complete line of ``path``."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        start = max(0, size - _TAIL)
        handle.seek(start)
        tail = handle.read()
    cut = tail.rfind(b"\n")
    return start + cut + 1 if cut >= 0 else start


def _transcripts_in(changed: set[Path]) -> set[Path]:
    """Transcripts among the changed paths and inside changed directories.

    A file written right after its directory was created can beat the watch on
    the new directory, so a new directory is listed rather than trusted.
    """
    found = {p for p in changed if p.suffix == ".jsonl"}
    for path in changed:
        if path.is_dir():
            found.update(path.glob("*.jsonl"))
    return found


class Follower:
    """Reads the new part of each transcript and captures from it."""

    def __init__(self, home: Path, *, save: bool, report: Report) -> None:
        self.home = home
        self.save = save
        self.report = report
        self._offsets: dict[Path, int] = {}

    def prime(self, root: Path) -> None:
        """Skip what the transcripts already under ``root`` hold."""
        for path in find_transcripts(root):
            if self.save:
                if not capture.was_read(self.home, path):
                    capture.mark_read(self.home, path, _whole_lines_end(path))
            else:
                self._offsets[path] = _whole_lines_end(path)

    def process(self, store: MemoryStore, path: Path) -> capture.CaptureResult | None:
        if not path.is_file() or path.suffix != ".jsonl":
            return None
        if self.save:
            turns, offset = capture.unread_turns(self.home, path)
        else:
            turns, offset = read_turns(path, self._offsets.get(path, 0))
        result = None
        if turns:
            cwd = next((t.cwd for t in turns if t.cwd), None)
            project = current_project(Path(cwd) if cwd else None)
            result = capture.capture(store, turns, project=project, save=self.save)
            if result.proposed:
                self.report(path, [c.text for c in result.proposed])
        if self.save:
            capture.mark_read(self.home, path, offset)
        else:
            self._offsets[path] = offset
        return result


def watch(
    root: Path,
    *,
    save: bool,
    report: Report,
    stop: threading.Event,
    ready: threading.Event | None = None,
) -> None:
    """Follow the directory ``root`` until ``stop`` is set; ``ready`` is set once changes
    are seen.  ``InputError`` if ``root`` is not a directory (nothing would ever arrive)."""
    if not root.is_dir():
        raise InputError(f"{root} is not a directory: cannot follow transcripts there")
    home = paths.home()
    follower = Follower(home, save=save, report=report)
    follower.prime(root)
    for changes in watchfiles.watch(
        root, stop_event=stop, debounce=400, rust_timeout=300, yield_on_timeout=True
    ):
        if ready is not None:
            ready.set()  # the first (possibly empty) batch: the watcher is running
        touched = sorted(_transcripts_in({Path(p) for _, p in changes}))
        if not touched:
            continue
        with MemoryStore.open() as store:
            for path in touched:
                follower.process(store, path)
