"""Reading the rows of a damaged SQLite file, as many as SQLite itself can give.

Every read goes to the table's own b-tree (``NOT INDEXED``: an index may be the damage,
and the salvaged store builds its indexes again).  Python's ``execute`` already reads
the first row, so a query whose first step raises is caught like any later row.  A
table on which no read at all could start is reported (:attr:`Reading.started`), not
taken for an empty one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["BATCH", "Reading", "keyed_rows", "rowid_rows"]

#: Rows read per rowid range before falling back to one row at a time.
BATCH = 256


@dataclass
class Reading:
    """How reading one table went: rows that raised, and whether no query could start."""

    lost: int = 0
    started: bool = False


def rowid_rows(
    src: sqlite3.Connection, table: str, cols: str, tally: Reading
) -> Iterator[tuple[Any, ...]]:
    """A table with rowids, in rowid ranges between its two edges; with an edge
    unreadable, :func:`_probed`."""
    # NOT INDEXED: the table's own b-tree, never an index (rebuilt, and maybe the damage)
    source = f'"{table}" NOT INDEXED'
    try:
        # the b-tree's two edges (NOT INDEXED would make each a full scan)
        top = src.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()[0]
        low = src.execute(f'SELECT min(rowid) FROM "{table}"').fetchone()[0]
    except sqlite3.DatabaseError:
        yield from _probed(src, source, cols, tally)
        return
    tally.started = True
    if top is not None:
        yield from _ranges(src, source, cols, (min(1, int(low)), int(top)), tally)


def _ranges(
    src: sqlite3.Connection, source: str, cols: str, span: tuple[int, int], tally: Reading
) -> Iterator[tuple[Any, ...]]:
    """The rows of rowids ``span`` (both included): a range at a time, and one row at a
    time in a range that raises."""
    one = f"SELECT {cols} FROM {source} WHERE rowid = ?"
    for start in range(span[0], span[1] + 1, BATCH):
        end = min(start + BATCH - 1, span[1])
        try:
            batch = src.execute(
                f"SELECT {cols} FROM {source} WHERE rowid BETWEEN ? AND ?", (start, end)
            ).fetchall()
            tally.started = True
        except sqlite3.DatabaseError:
            batch = []
            for rowid in range(start, end + 1):
                try:
                    row = src.execute(one, (rowid,)).fetchone()
                    tally.started = True
                except sqlite3.DatabaseError:
                    tally.lost += 1
                    continue
                if row is not None:
                    batch.append(row)
        yield from batch


def _probed(
    src: sqlite3.Connection, source: str, cols: str, tally: Reading
) -> Iterator[tuple[Any, ...]]:
    """An edge of the b-tree is unreadable: read from each end up to the damage, then each
    rowid between.  With the right edge gone, rowids are tried upwards until
    :data:`BATCH` in a row give nothing; failures after the last row found are not
    counted (they may be rowids that never existed)."""
    scans = Reading()
    rows = list(_scan(src, f"SELECT rowid, {cols} FROM {source} ORDER BY rowid", scans))
    tail = list(_scan(src, f"SELECT rowid, {cols} FROM {source} ORDER BY rowid DESC", scans))
    tally.started = scans.started
    yield from (row[1:] for row in rows)
    start = int(rows[-1][0]) + 1 if rows else 1
    if tail:
        yield from _ranges(src, source, cols, (start, int(tail[-1][0]) - 1), tally)
        yield from (row[1:] for row in reversed(tail))
        return
    one = f"SELECT {cols} FROM {source} WHERE rowid = ?"
    rowid, misses, failed = start, 0, 0
    while misses < BATCH:
        try:
            row = src.execute(one, (rowid,)).fetchone()
        except sqlite3.DatabaseError:
            row, failed = None, failed + 1
        if row is None:
            misses += 1
        else:
            tally.started, tally.lost, misses, failed = True, tally.lost + failed, 0, 0
            yield row
        rowid += 1


def _scan(src: sqlite3.Connection, sql: str, tally: Reading) -> Iterator[tuple[Any, ...]]:
    """The rows ``sql`` gives up to the first that raises (counted lost); a query whose
    first step raises (Python's ``execute`` reads the first row) gives none."""
    try:
        cursor = src.execute(sql)
    except sqlite3.DatabaseError:
        tally.lost += 1
        return
    tally.started = True
    while True:
        try:
            row = cursor.fetchone()
        except sqlite3.DatabaseError:
            tally.lost += 1
            return
        if row is None:
            return
        yield row


def keyed_rows(
    src: sqlite3.Connection, table: str, cols: str, key: list[str], tally: Reading
) -> Iterator[tuple[Any, ...]]:
    """A ``WITHOUT ROWID`` table in key order from both ends, up to the first row that
    raises from each side."""
    source = f'"{table}" NOT INDEXED'
    order = ", ".join(f'"{k}"' for k in key)
    yield from _scan(src, f"SELECT {cols} FROM {source} ORDER BY {order}", tally)
    if tally.lost:  # the rest, read from the other end up to the same damage
        yield from _scan(
            src, f"SELECT {cols} FROM {source} ORDER BY {order.replace(',', ' DESC,')} DESC", tally
        )
