"""The commands Claude Code runs as hooks: session start, prompt submit, stop.

A hook must never fail or slow the host.  :func:`run` therefore does the work
in a daemon thread and waits at most :data:`HOOK_BUDGET_S`; a busy or locked
store, a missing store, bad input or any exception ends in *no output* and
exit status 0.  What happened is appended to ``<home>/logs/hooks.log``: the
event, the outcome, the exception's type and where it was raised, the
duration and a note of ours (a store used or skipped unmigrated:
:func:`_open_existing`), never a prompt, a memory or an exception message
(those may hold what the user typed).  A hook never migrates the store.

``session-start`` prints the budgeted startup context (Claude Code adds a
SessionStart hook's stdout to the context).  ``prompt`` recalls on the
submitted prompt and prints matching memories only (never one recall marks
``related``: :mod:`sealmem.client.recall.matching`) that share enough of its words (at
least :data:`PROMPT_MIN_SHARED` content or keyword stems, and either
:data:`PROMPT_MIN_OVERLAP` of the memory's content stems or one of its
keywords), judged on the version that would be shown (the author's, when a
teammate's change to it is only a proposal); a memory a newer one corrects is
replaced by that newer one, marked ``replaces an older memory``, never shown
beside it.
Both mark a memory this machine did not write with its verified signer
(:meth:`sealmem.client.store.memory.Memory.authorship`), never its claimed author.
``stop`` captures from the part of the transcript not read before
(:mod:`sealmem.client.hosts.capture`, private until accepted) with the origin
``claude-code:<session_id>``, so recall links what one session wrote; it prints nothing.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...protocol.errors import InputError
from .. import paths
from ..project import current_project
from ..textsafe import visible

__all__ = [
    "BUDGET_ENV",
    "HOOK_BUDGET_S",
    "HOOK_NAMES",
    "PROMPT_MIN_OVERLAP",
    "PROMPT_MIN_SHARED",
    "emit_hook_output",
    "run",
    "run_hook",
]

HOOK_BUDGET_S = 2.0
BUDGET_ENV = "SEALMEM_HOOK_BUDGET_S"  # seconds, 0.1..120: a slow disk or machine may need more
PROMPT_K = 3
PROMPT_POOL = 12  # hits read before trust and budgets choose at most PROMPT_K memories
PROMPT_BUDGET_CHARS = 2400
PROMPT_MIN_OVERLAP = 0.5  # share of a memory's content stems that the prompt holds
PROMPT_MIN_SHARED = 2
STARTUP_BUDGET_TOKENS = 1200
NOTE_WAIT_MS = 100  # the prompt hook's wait for the store's write lock to note a recall
MAX_LOG_BYTES = 1_000_000
_PROMPT_HEADER = "Possibly relevant memories from sealmem (notes from past sessions and teammates):"
_LEFT = (
    "a hook never migrates, the next 'sealmem init' (or other command that writes), "
    "MCP call or viewer does"
)
_running = threading.local()  # ``note``: what the worker thread says in the log line


def _log(
    event: str, outcome: str, started: float, exc: BaseException | None = None, note: str = ""
) -> None:
    """One line per hook run (``note``: our own words after it, never the user's); never
    raises."""
    try:
        path = paths.home() / "logs" / "hooks.log"
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > MAX_LOG_BYTES:
            path.replace(path.with_name(path.name + ".1"))
        where = ""
        if exc is not None:
            frames = traceback.extract_tb(exc.__traceback__)
            if frames:
                where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}"
            where = f" {type(exc).__name__}{where}"
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        ms = int((time.monotonic() - started) * 1000)
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(f"{stamp} {event} {outcome}{where} {ms}ms{note and '; ' + note}\n")
    except Exception:  # noqa: S110 - a hook's log must not be the thing that fails it
        pass


def _payload(stdin_text: str) -> dict[str, Any]:
    if not stdin_text.strip():
        return {}
    data = json.loads(stdin_text)
    if not isinstance(data, dict):
        raise InputError("the hook input must be a JSON object")
    return data


def _project(payload: dict[str, Any]) -> str:
    cwd = payload.get("cwd")
    return current_project(Path(cwd) if isinstance(cwd, str) and cwd else None)


def _open_existing() -> Any:
    """The store, or None when there is none yet (a hook never creates one).

    A hook never migrates: a migration may take longer than its budget (then it is cut
    off, rolled back, and started again at the next prompt, holding the write lock each
    time).  A store lacking only data-only migrations is used as it is, which the log
    line says; one that needs a schema step first raises
    :class:`~sealmem.client.store.migrations.MigrationNeededError`: the hook is skipped
    (:func:`run`).  The next open that migrates (a command that writes, the MCP server,
    the viewer) applies them."""
    db = paths.store_path(paths.home())
    if not db.is_file():
        return None
    from ..recall.api import MemoryStore
    from ..store.migrations import schema_version
    from ..store.schema import latest_version

    store = MemoryStore.open(db, migrating=False)
    version, known = schema_version(store.connection), latest_version()
    if version < known:
        _running.note = f"store at schema {version} of {known}, used as it is: {_LEFT}"
    return store


def _session_start(payload: dict[str, Any]) -> str:
    store = _open_existing()
    if store is None:
        return ""
    with store:
        return str(
            store.startup_context(project=_project(payload), budget_tokens=STARTUP_BUDGET_TOKENS)
        )


def _prompt(payload: dict[str, Any]) -> str:
    import contextlib
    import sqlite3

    from ...protocol.errors import SealmemError
    from ..recall import framing
    from ..recall.context import choose_shown
    from ..recall.standing import Shown
    from ..recall.trust import Budget
    from .gate import content_stems

    text = payload.get("prompt")
    if not isinstance(text, str) or not text.strip():
        return ""
    store = _open_existing()
    if store is None:
        return ""
    asked = content_stems(text)
    chosen: list[tuple[Shown, list[str]]] = []
    with store:
        reader = store.reader()
        hits = store.recall(text, k=PROMPT_POOL, project=_project(payload))
        resolved = reader.resolve_all(hit.memory for hit in hits)
        for hit in hits:
            shown = resolved.get(hit.memory.id)
            if shown is None or hit.related:  # matches only: nothing related is injected
                continue
            record = shown.memory.record  # what would be injected, not a proposal beside it
            own = content_stems(record.content)
            by_keyword = content_stems(" ".join(record.keywords)) & asked
            shared = len((own & asked) | by_keyword)
            # a keyword the memory was given for this topic vouches for it
            close = by_keyword or shared / max(len(own), 1) >= PROMPT_MIN_OVERLAP
            if shared < PROMPT_MIN_SHARED or not close:
                continue
            if shown.superseded:  # a correction that applies stands in for it, alone
                newer = [s for s in reader.resolve_all(shown.superseded_by).values() if s]
                if newer:
                    chosen.append((newer[0], ["replaces an older memory"]))
                continue
            chosen.append((shown, []))
        budget = Budget(
            PROMPT_BUDGET_CHARS, max_lines=PROMPT_K + 2, writer_lines=1, writer_share=0.5
        )
        lines, shown_ids = choose_shown(chosen, reader, budget)
        due = store.recall_due(shown_ids)  # what it injects counts as recalled (freshness)
        if due:  # not waiting on another writer's lock: the injection must not time out
            with contextlib.suppress(SealmemError, sqlite3.Error):
                store.connection.execute(f"PRAGMA busy_timeout = {NOTE_WAIT_MS}")
                store.note_recalled(due)
    return framing.frame(_PROMPT_HEADER, lines) if lines else ""


def _session(payload: dict[str, Any], transcript: Path) -> str:
    """``claude-code:<session_id>`` from the hook's input, else from the transcript's
    name (Claude Code names it ``<session_id>.jsonl``)."""
    from ..recall.sessions import host_origin
    from .capture import ORIGIN

    session = payload.get("session_id")
    if not (isinstance(session, str) and session.strip()):
        session = transcript.stem
    return host_origin(ORIGIN, session)


def _stop(payload: dict[str, Any]) -> str:
    from . import capture

    transcript = payload.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        return ""
    path = Path(transcript).expanduser()
    store = _open_existing()
    if store is None or not path.is_file():
        return ""
    home = paths.home()
    with store:
        turns, offset = capture.unread_turns(home, path)
        if turns:
            capture.capture(
                store, turns, project=_project(payload), save=True, origin=_session(payload, path)
            )
        capture.mark_read(home, path, offset)
    return ""


HOOK_NAMES: dict[str, Callable[[dict[str, Any]], str]] = {
    "session-start": _session_start,
    "prompt": _prompt,
    "stop": _stop,
}


def _budget() -> float:
    """:data:`HOOK_BUDGET_S`, or ``SEALMEM_HOOK_BUDGET_S`` when it holds seconds in 0.1..120."""
    text = os.environ.get(BUDGET_ENV, "").strip()
    try:
        value = float(text) if text.isascii() else HOOK_BUDGET_S
    except ValueError:
        return HOOK_BUDGET_S
    return value if 0.1 <= value <= 120 else HOOK_BUDGET_S


def run(name: str, read_input: Callable[[], str], *, budget_s: float | None = None) -> str:
    """The text hook ``name`` prints; never raises, never blocks for long.

    ``read_input`` returns the hook's JSON (stdin); it is called inside the
    time bound too (``budget_s``, else :func:`_budget`), so a host that never
    closes stdin cannot hang the hook.
    """
    budget_s = _budget() if budget_s is None else budget_s
    started = time.monotonic()
    box: dict[str, Any] = {}

    def work() -> None:
        _running.note = ""
        try:
            box["out"] = HOOK_NAMES[name](_payload(read_input()))
        except BaseException as exc:  # everything, on purpose: see the module docstring
            box["exc"] = exc
        box["note"] = _running.note

    worker = threading.Thread(target=work, name=f"sealmem-hook-{name}", daemon=True)
    worker.start()
    worker.join(budget_s)
    if worker.is_alive():
        _log(name, "timeout", started)
        return ""
    if "exc" in box:
        _log_failure(name, started, box["exc"])
        return ""
    out = str(box.get("out") or "")
    _log(name, "ok" if out else "ok-silent", started, note=box.get("note", ""))
    return out


def _log_failure(name: str, started: float, exc: BaseException) -> None:
    """``skipped`` for a store that needs migrating first (:func:`_open_existing`): the
    hook shows and captures nothing until it is migrated, and the stop hook's transcript
    is read then; ``error`` for anything else."""
    from ..store.migrations import MigrationNeededError

    if isinstance(exc, MigrationNeededError):
        note = f"store at schema {exc.version} needs migration {exc.needed} first: {_LEFT}"
        _log(name, "skipped", started, note=note)
    else:
        _log(name, "error", started, exc)


def run_hook(name: str, home: Path | None) -> str:
    """What hook ``name`` prints (escaped for a terminal), reading its JSON from stdin."""
    if home is not None:
        os.environ[paths.HOME_ENV] = str(home)

    def read_input() -> str:
        stream = sys.stdin
        return "" if stream is None or stream.isatty() else stream.read()

    # Teammates' text, on its way to a host that may show it in a terminal: escaped
    # like everything else the CLI prints (newlines kept).
    return visible(run(name, read_input))


def emit_hook_output(text: str) -> None:
    """Print a hook's text for the host, as UTF-8 whatever the locale; never raises.

    Hosts read a hook's stdout as UTF-8, while Python writes a pipe in the locale's
    encoding (on Windows the ANSI code page, where a teammate's emoji or CJK text does
    not exist: a ``UnicodeEncodeError`` failed the hook).  A host that stopped reading
    (a closed pipe) loses the text, and the hook still ends with status 0.
    """
    data = (text + "\n").encode("utf-8", "replace")
    try:
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is not None:
            sys.stdout.flush()
            buffer.write(data)
            buffer.flush()
        else:  # a text stream with no bytes underneath (an in-process test's capture)
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
    except (OSError, ValueError, UnicodeError):
        # Nobody reads any more: point stdout at the null device so that the flush at
        # exit does not fail the hook a second time (the Python docs' BrokenPipe recipe).
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, sys.stdout.fileno())
        except (OSError, ValueError):
            return
