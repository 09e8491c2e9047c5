"""Commands that look after the store: init, export, import, stats, doctor, reindex, status."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO, TextIO

import typer

from ...protocol.errors import InputError, StoreError
from ..clock import now_ms
from ..fsutil import atomic_write
from ..store import health
from ..store.memory import Check
from . import output, recover
from .memory import JsonOpt, open_store

if TYPE_CHECKING:
    from .. import MemoryStore

__all__ = ["DoctorFailed", "register", "register_init"]

#: Imports with at least this many memories show a progress bar on stderr.
PROGRESS_THRESHOLD = 200


class DoctorFailed(StoreError):
    """At least one ``doctor`` check failed (the CLI exits 1)."""


def init(as_json: JsonOpt = False) -> None:
    """Create the sealmem home and the local store; print where they are."""
    from ..paths import ensure_home

    home = ensure_home()
    with open_store() as store:
        doc = {"home": str(home), "store": str(store.path), "author": store.author}
    if as_json:
        output.emit_json(doc)
        return
    output.say(f"sealmem home: {doc['home']}\nstore:        {doc['store']}")
    output.say(f"member id:    {doc['author']}")
    output.say("next: sealmem remember 'TEXT'  or  sealmem install <host>")


def _exists(path: Path) -> InputError:
    return InputError(
        f"{path} already exists (an earlier export or backup?); nothing was written. "
        "Choose a new path with --output, or add --force to replace it"
    )


def export(
    output_file: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write to this file (mode 0600) instead of stdout."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace the --output file if it already exists.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Export every memory (with history and provenance) as one JSON document."""
    if output_file is not None and output_file.exists() and not force:
        raise _exists(output_file)
    with open_store(readonly=True) as store:
        # streamed, one entry per line: memory stays bounded whatever the store's size
        if output_file is None:
            _export_to(store, sys.stdout)
            return
        count: list[int] = []

        def write(fh: BinaryIO) -> None:
            text = io.TextIOWrapper(fh, encoding="ascii", newline="\n", write_through=False)
            count.append(_export_to(store, text))
            text.flush()
            text.detach()

        try:
            if not atomic_write(output_file, write, mode=0o600, exclusive=not force):
                raise _exists(output_file)
        except OSError as exc:
            raise InputError(
                f"cannot write the export to {output_file}: {exc.strerror}; "
                "choose a writable path with --output"
            ) from exc
    summary = {
        "path": str(output_file),
        "bytes": output_file.stat().st_size,
        "memories": count[0] if count else None,
    }
    if as_json:
        output.emit_json(summary)
    else:
        output.say(
            f"exported {summary['memories']} memories to {summary['path']} "
            f"({summary['bytes']} bytes, mode 0600)"
        )


def _export_to(store: MemoryStore, out: TextIO) -> int:
    try:
        return store.export_to(out)
    except StoreError as exc:
        done = "what was printed is incomplete" if out is sys.stdout else "nothing was written"
        raise StoreError(
            f"export stopped: it could not read every memory of {store.path} ({exc}); {done}"
        ) from exc


def import_(
    source: Annotated[
        str, typer.Argument(metavar="FILE", help="An export file, or '-' for stdin.")
    ],
    as_json: JsonOpt = False,
) -> None:
    """Import an export document; importing the same file twice changes nothing."""
    try:  # read one entry at a time: memory stays bounded whatever the file's size
        with ExitStack() as stack:
            stream: TextIO = sys.stdin
            if source != "-":
                stream = stack.enter_context(Path(source).open(encoding="utf-8"))
            store = stack.enter_context(open_store())
            progress = _stderr_progress(stack, "importing", "versions", minimum=PROGRESS_THRESHOLD)
            result = store.import_stream(stream, name=source, progress=progress)
    except OSError as exc:
        raise InputError(f"cannot read {source}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{source} is not UTF-8 text; pass a file made by 'sealmem export'"
        ) from exc
    for message in result.warnings:
        output.warn(message)
    if as_json:
        output.emit_json(result.to_dict())
    else:
        output.say(
            f"imported {source}: {result.added} added, {result.updated} updated, "
            f"{result.unchanged} unchanged, {result.skipped} skipped"
        )


def _stderr_progress(
    stack: ExitStack, label: str, unit: str, *, minimum: int = 0
) -> Callable[..., None] | None:
    """A rich progress bar on stderr for a long command, only when stderr is a terminal.

    Elsewhere (a pipe, a log file, a test) nothing is drawn: the summary line on stdout
    says what happened.  The callback takes ``(done, total)`` and, optionally, the name
    of the step under way.
    """
    if sys.stderr is None or not sys.stderr.isatty():
        return None
    task: list[Any] = []

    def progress(done: int, total: int, step: str = "") -> None:
        if total < minimum:
            return
        if not task:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                unit,
                TimeElapsedColumn(),
                console=Console(file=sys.stderr),
            )
            stack.enter_context(bar)
            task.extend([bar, bar.add_task(label, total=total)])
        task[0].update(task[1], completed=done, description=f"{label} {step}".rstrip())

    return progress


def _flatten(data: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _flatten(value, f"{name}.")
        else:
            yield name, str(value)


def _print_mapping(data: Mapping[str, Any]) -> None:
    pairs = list(_flatten(data))
    width = max((len(k) for k, _ in pairs), default=0)
    for key, value in pairs:
        output.say(f"{key.ljust(width)}  {value}")


def stats(as_json: JsonOpt = False) -> None:
    """Counts per kind and project, the schema version and the store size."""
    with open_store(readonly=True) as store:
        data = store.stats()
    if as_json:
        output.emit_json(data)
    else:
        _print_mapping(data)


def _trusted_roster(conn: Any) -> Any:
    """The roster this store trusts when a team is configured (None: no team, or a team
    state that no longer verifies; then only the clock rule applies)."""
    from ...crypto import SUITE
    from ...protocol.errors import SealmemError
    from ..paths import home
    from ..sync.replica import load_state
    from ..sync.session import TeamConfig

    try:
        config = TeamConfig.load(home())
        return load_state(conn, SUITE, config.team, config.root_public).roster
    except SealmemError:
        return None


def doctor(as_json: JsonOpt = False) -> None:
    """Check the store (integrity, schema, search index, permissions, clock); exit 1 on a failure.

    Versions dated more than 2 days ahead, and a store clock that far ahead, are mended.
    """
    from ..paths import ensure_home, store_path

    path = store_path(ensure_home())
    if path.exists():
        checks = health.doctor_file(path)
    else:
        with open_store(readonly=True) as store:
            checks = store.doctor()
    checks.append(_clock(path, usable=all(c.ok for c in checks if c.name in _READABLE)))
    failed = [c for c in checks if not c.ok]
    if as_json:
        output.emit_json(
            {
                "ok": not failed,
                "checks": [c.to_dict() for c in checks],
            }
        )
    else:
        rows = [["ok" if c.ok else "FAIL", c.name, c.detail] for c in checks]
        output.say(output.table(rows, ["", "CHECK", "DETAIL"]))
        output.say(
            "\n" + (f"{len(failed)} of {len(checks)} checks failed" if failed else "all good")
        )
    if failed:
        names = ", ".join(c.name for c in failed)
        raise DoctorFailed(
            f"doctor: {len(failed)} of {len(checks)} checks failed ({names}); "
            "the details say how to fix each"
        )


#: Checks that must pass before doctor opens the store to mend far-ahead clocks.
_READABLE = ("open", "integrity", "journal", "schema", "writable")


def _clock(path: Path, *, usable: bool) -> Check:
    """Find and mend versions dated far ahead; only in a sound, writable store."""
    from ..sync.dropping import clock_check

    if not usable:
        return Check(
            "clock",
            True,
            "not checked: the store is damaged, read-only or needs a migration (see above)",
        )
    with open_store() as store:
        roster = _trusted_roster(store.connection)
        return clock_check(store.connection, now_ms(), me=store.author, roster=roster)


def status(as_json: JsonOpt = False) -> None:
    """Where the state lives, the current project, what the store holds, sync health."""
    from ..paths import home
    from ..project import current_project
    from ..sync.session import sync_health

    with open_store(readonly=True) as store:
        doc: dict[str, Any] = {
            "home": str(home()),
            "store": str(store.path),
            "author": store.author,
            "project": current_project(),
            "stats": store.stats(),
            "sync": sync_health(home(), store.connection),
        }
    if as_json:
        output.emit_json(doc)
        return
    output.say(_status_text(doc))


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in counts.items()) or "-"


def _status_text(doc: Mapping[str, Any]) -> str:
    """``status`` for people: where things are, what the store holds, sync health."""
    stats, sync = doc["stats"], doc["sync"]
    size_kib = (int(stats["db_bytes"]) + 1023) // 1024
    lines = [
        f"home:      {doc['home']}",
        f"store:     {doc['store']} (schema {stats['schema_version']}, {size_kib} KiB)",
        f"you:       {doc['author']}",
        f"project:   {doc['project']}",
        f"memories:  {stats['memories']} ({stats['private']} private), "
        f"{stats['tombstones']} forgotten, {stats['history_versions']} older versions",
        f"  by kind:    {_counts(stats['by_kind'])}",
        f"  by project: {_counts(stats['by_project'])}",
        _sync_line(sync),
    ]
    if sync.get("clock"):
        lines.append(_clock_line(sync["clock"]))
    lines += [f"  ALARM {alarm}" for alarm in sync.get("alarms", [])]
    return "\n".join(lines)


def _sync_line(sync: Mapping[str, Any]) -> str:
    """One line on sync health for people ('sealmem team status' has the details)."""
    if not sync.get("configured"):
        return f"sync: {sync.get('detail', 'not configured')}"
    where = f"team {sync['team']} via {sync['transport']} at {sync['location']}"
    last = sync.get("last_sync")
    if not last:
        return f"sync: {where}; never synced (run 'sealmem sync')"
    when = output.format_time(int(last["finished_at"]))
    return f"sync: {where}; last {when}: {last['summary'].get('summary', '')}"


def _clock_line(clock: Mapping[str, Any]) -> str:
    """The clock against the team's hub or folder and teammates' signed clocks, as the last
    sync that measured it saw."""
    from ..sync.clockhealth import Skew

    skew = Skew(
        int(clock["skew_ms"]), str(clock["source"]), str(clock["location"]),
        int(clock["measured_at"]), tuple(int(t) for t in clock.get("teammates", ())),
    )  # fmt: skip
    return skew.status_line(output.format_time(skew.measured_at))


def register_init(app: typer.Typer) -> None:
    """``init`` comes first in ``--help``."""
    app.command()(init)


def reindex(as_json: JsonOpt = False) -> None:
    """Rebuild the search indexes from the stored memories (when 'doctor' asks for it)."""
    with ExitStack() as stack, open_store() as store:
        counts = store.reindex(progress=_stderr_progress(stack, "reindexing", "steps"))
    if as_json:
        output.emit_json({"reindexed": counts})
    else:
        output.say(
            f"rebuilt the search indexes over {counts['memories']} memories "
            f"and {counts['history']} older versions"
        )


def register(app: typer.Typer) -> None:
    app.command()(export)
    app.command("import")(import_)
    app.command()(stats)
    app.command()(doctor)
    app.command()(reindex)
    app.command()(status)
    recover.register(app)
