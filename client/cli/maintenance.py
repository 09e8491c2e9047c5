"""Commands that look after the store: init, stats, doctor, reindex, status (export and
import are in :mod:`.transfer`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import typer

from ...protocol.errors import StoreError
from ..clock import now_ms
from ..recall import semantic
from ..store import health
from ..store.memory import Check
from . import output, recover, transfer
from .memory import JsonOpt, open_store
from .transfer import stderr_progress

__all__ = ["DoctorFailed", "register", "register_init"]


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
            "periods": {name: p.to_dict() for name, p in store.applied_periods().items()},
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
        _periods_line(doc["periods"]),
        _sync_line(sync),
    ]
    if sync.get("clock"):
        lines.append(_clock_line(sync["clock"]))
    lines += [f"  ALARM {alarm}" for alarm in sync.get("alarms", [])]
    return "\n".join(lines)


def _periods_line(periods: Mapping[str, Mapping[str, Any]]) -> str:
    """The two periods and who set each: "periods: review 2 days (team), stale 60 days
    (yours here; team 30)"."""
    words = []
    for name, label in (("review_days", "review"), ("stale_days", "stale")):
        p = periods[name]
        who = {"team": "team", "default": "default"}.get(p["set_by"], "yours here")
        if p["set_by"] == "local" and p["team_days"] is not None:
            who += f"; team {p['team_days']}"
        words.append(f"{label} {p['days']} days ({who})")
    return "periods:   " + ", ".join(words)


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
        counts = store.reindex(progress=stderr_progress(stack, "reindexing", "steps"))
        embedder = semantic.enable()  # the extra's vectors, derived again when installed
        if embedder is not None:
            bar = stderr_progress(stack, "deriving vectors", "memories")
            try:
                counts["vectors"] = semantic.rebuild(store.connection, embedder, bar)
            except semantic.ModelFileError as exc:  # refused: recall stays lexical
                output.warn(f"no vectors derived: {exc}")
    if as_json:
        output.emit_json({"reindexed": counts})
    else:
        vectors = f" and their {counts['vectors']} vectors" if "vectors" in counts else ""
        output.say(
            f"rebuilt the search indexes over {counts['memories']} memories "
            f"and {counts['history']} older versions{vectors}"
        )


def register(app: typer.Typer) -> None:
    transfer.register(app)
    app.command()(stats)
    app.command()(doctor)
    app.command()(reindex)
    app.command()(status)
    recover.register(app)
