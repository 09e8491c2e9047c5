"""Meaning, locally: the ``sealmem[semantic]`` extra (tests/bench/README.md, "Semantic
extra").

With the extra installed (:mod:`.embedder`: all-MiniLM-L6-v2, int8, on onnxruntime, its
files inside wheels and checked; nothing is downloaded), a long-lived process (the MCP
server, the viewer) calls :func:`start` for its store: the model is loaded once, and a
background thread derives a vector for each live memory that lacks one (:func:`fill`),
on its own connection, in small transactions of its own: never inside the one writer,
so a bulk merge or import costs what it did.  The vectors live in the local table
``embeddings`` (store migration 9), are never synced, and the one writer drops the
vector of a row it re-words or deletes; ``sealmem reindex`` drops them all and derives
them again (:func:`rebuild`).

Recall asks :func:`similarities` (one call, in :func:`.search.search`): the cosine of
the query to each lexical candidate that has a vector, and the closest memories that the
words missed; :func:`lifts` is what the closest of them add to a score, and those match
the query (:data:`THRESHOLD`).  Without the extra, or in a process that did
not :func:`start` (the CLI and the prompt hook: loading the model alone takes longer
than the hook's whole budget), it returns nothing and recall is the lexical one.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..store.connection import connect, transaction
from .embedder import MODEL, Embedder, ModelFileError, available

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vector = npt.NDArray[np.float32]

__all__ = [
    "MODEL",
    "THRESHOLD",
    "WEIGHTS",
    "Embedder",
    "ModelFileError",
    "active",
    "available",
    "fill",
    "lifts",
    "rebuild",
    "similarities",
    "start",
    "stop",
]

THRESHOLD = 0.25
"""The cosine that one of the query's closest memories must reach to match it by meaning
(issue 29 item 2: it counts as a match like a shared word; :func:`lifts`).  Chosen on
the 100 paraphrase pairs of ``tests/bench/data/paraphrases.json`` (``bench_semantic.py``,
tests/bench/README.md "Semantic extra"): MiniLM's cosines spread wide (the right
memory's quartiles 0.27-0.44) and overlap the best wrong one's, so an absolute threshold
alone either lets most wrong memories in or keeps most right ones out; how close a
memory is against the rest is what tells."""

WEIGHTS = (1.0, 0.2)
"""What the query's closest memory and the next one gain (when at or over
:data:`THRESHOLD`), against 1 for the best lexical score (times the best, when it is
over 1: the score shown keeps the order of the ranking); every other memory keeps its
lexical order.  Chosen by the numbers of bench_semantic.py (tests/bench/README.md,
"Semantic extra: the two closest"): on the paraphrase set hit@5 goes from 38 % to 68 %;
on LoCoMo, whose questions reuse the dialogue's words, 77.4 % against 77.1 % lexical (a
lift for every memory in proportion to its cosine gave 74.8 %).  The extra is for
questions asked in other words."""

CANDIDATES = 10
"""The closest memories over the threshold (of the recall's projects and kinds) that
recall reads beside the lexical candidates, at most."""

BATCH = 4
"""Passages embedded per call of the background pass: a query waits at most for one."""

ENV = "SEALMEM_SEMANTIC"
"""``0`` turns the extra off in a process that would start it."""


_ACTIVE: Embedder | None = None
_FILLERS: dict[Path, _Filler] = {}
_GUARD = threading.Lock()


def active() -> Embedder | None:
    """This process's embedder, once :func:`start` (or :func:`enable`) gave it one."""
    return _ACTIVE


def enable(threads: int = 1) -> Embedder | None:
    """Give this process an embedder, if the extra is installed and not turned off."""
    global _ACTIVE
    with _GUARD:
        if _ACTIVE is None and available() and os.environ.get(ENV, "1") != "0":
            _ACTIVE = Embedder(threads)
        return _ACTIVE


def start(path: Path) -> bool:
    """In a long-lived process: recall by meaning too, and derive the missing vectors of
    the store at ``path`` in the background.  False (and nothing started) without the
    extra."""
    embedder = enable()
    if embedder is None:
        return False
    with _GUARD:
        filler = _FILLERS.get(Path(path))
        if filler is None or not filler.is_alive():
            filler = _FILLERS[Path(path)] = _Filler(Path(path), embedder)
            filler.start()
        filler.wake.set()
    return True


def stop() -> None:
    """Stop the background passes and drop the embedder (tests; a process's end)."""
    global _ACTIVE
    with _GUARD:
        fillers = list(_FILLERS.values())
        _FILLERS.clear()
        _ACTIVE = None
    for filler in fillers:
        filler.halt()
    _MATRICES.clear()


class _Filler(threading.Thread):
    """Derives the missing vectors of one store, then waits for a wake or :data:`IDLE_S`."""

    IDLE_S = 30.0

    def __init__(self, path: Path, embedder: Embedder) -> None:
        super().__init__(name=f"sealmem-semantic {path.name}", daemon=True)
        self.path, self.embedder = path, embedder
        self.wake, self.halted = threading.Event(), threading.Event()
        self.error: str | None = None  # why the last pass stopped, if it failed

    def run(self) -> None:
        while not self.halted.is_set():
            self.wake.clear()
            try:
                conn = connect(self.path)
                try:
                    fill(conn, self.embedder, stop=self.halted.is_set)
                finally:
                    conn.close()
                self.error = None
            except Exception as exc:  # the extra never takes the server down
                # the store is busy, damaged or gone: recall stays lexical; tried again later
                self.error = f"{type(exc).__name__}: {exc}"
            self.wake.wait(self.IDLE_S)

    def halt(self) -> None:
        self.halted.set()
        self.wake.set()
        self.join(timeout=10)


def _pending(conn: sqlite3.Connection, limit: int) -> list[tuple[int, str]]:
    """Live memories without a vector of :data:`MODEL`: (rowid, text to embed)."""
    rows = conn.execute(
        "SELECT m.rowid, m.content, m.keywords FROM memories m "
        "LEFT JOIN embeddings e ON e.rowid = m.rowid AND e.model = ? "
        "WHERE m.deleted = 0 AND e.rowid IS NULL ORDER BY m.rowid LIMIT ?",
        (MODEL, limit),
    )
    return [(int(r[0]), _text(str(r[1]), str(r[2]))) for r in rows]


def _text(content: str, keywords: str) -> str:
    return f"{content}\n{keywords}" if keywords else content


def fill(
    conn: sqlite3.Connection,
    embedder: Embedder,
    *,
    batch: int = BATCH,
    stop: Callable[[], bool] = lambda: False,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Derive the vector of every live memory that lacks one; how many were written.
    Each batch is written in its own transaction (checked again there: a row re-worded
    or forgotten meanwhile keeps no vector of its old text)."""
    written = 0
    total = 0
    if progress is not None:
        (total,) = conn.execute(
            "SELECT count(*) FROM memories m WHERE m.deleted = 0 AND NOT EXISTS "
            "(SELECT 1 FROM embeddings e WHERE e.rowid = m.rowid AND e.model = ?)",
            (MODEL,),
        ).fetchone()
    while not stop():
        todo = _pending(conn, batch)
        if not todo:
            break
        vectors = embedder.passages([text for _, text in todo])
        with transaction(conn):
            fresh = {row[0]: _text(str(row[1]), str(row[2])) for row in _rows(conn, todo)}
            rows = [
                (rowid, MODEL, pack(vector))
                for (rowid, text), vector in zip(todo, vectors, strict=True)
                if fresh.get(rowid) == text
            ]
            conn.executemany(
                "INSERT OR REPLACE INTO embeddings (rowid, model, vector) VALUES (?, ?, ?)", rows
            )
        written += len(rows)
        if progress is not None:
            progress(written, int(total))
    return written


def _rows(conn: sqlite3.Connection, todo: list[tuple[int, str]]) -> Iterator[tuple[Any, ...]]:
    marks = ", ".join("?" * len(todo))
    return iter(
        conn.execute(
            f"SELECT rowid, content, keywords FROM memories WHERE deleted = 0 "
            f"AND rowid IN ({marks})",
            [rowid for rowid, _ in todo],
        ).fetchall()
    )


def rebuild(
    conn: sqlite3.Connection,
    embedder: Embedder,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Drop every vector and derive them all again (``sealmem reindex``); how many."""
    with transaction(conn):
        conn.execute("DELETE FROM embeddings")
    return fill(conn, embedder, batch=16, progress=progress)


def pack(vector: Vector) -> bytes:
    """A vector as int8, scaled so that its largest component is 127 (the direction is
    what counts: rows are normalized again when read): 384 bytes."""
    import numpy as np

    scale = 127.0 / max(float(np.abs(vector).max()), 1e-12)
    return bytes(np.rint(vector * scale).astype(np.int8).tobytes())


@dataclass
class _Matrix:
    stamp: tuple[str, str]
    rowids: list[int]
    vectors: Vector
    projects: Any  # each row's project (a numpy array of str)
    kinds: Any  # each row's kind (a numpy array of str)
    at: dict[int, int]  # each rowid's row


_MATRICES: OrderedDict[str, _Matrix] = OrderedDict()
_MATRIX_SLOTS = 4


def _matrix(conn: sqlite3.Connection) -> _Matrix | None:
    """Every vector of the store, as floats, cached while its commit count stands."""
    import numpy as np

    (_, _, file) = conn.execute("PRAGMA database_list").fetchone()
    stamp = conn.execute(
        "SELECT (SELECT value FROM meta WHERE key = 'store_id'), "
        "(SELECT value FROM meta WHERE key = 'commits')"
    ).fetchone()
    key = (str(stamp[0]), str(stamp[1]))
    cached = _MATRICES.get(str(file))
    if cached is not None and cached.stamp == key:
        _MATRICES.move_to_end(str(file))
        return cached
    rows = conn.execute(
        "SELECT e.rowid, e.vector, m.project, m.kind FROM embeddings e JOIN memories m "
        "ON m.rowid = e.rowid "
        "WHERE e.model = ? AND m.deleted = 0 ORDER BY e.rowid",
        (MODEL,),
    ).fetchall()
    if not rows:
        return None
    blob = b"".join(r[1] for r in rows)
    vectors = np.frombuffer(blob, dtype=np.int8).reshape(len(rows), -1).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-9
    projects = np.array([str(r[2]) for r in rows])
    kinds = np.array([str(r[3]) for r in rows])
    rowids = [int(r[0]) for r in rows]
    at = {rowid: i for i, rowid in enumerate(rowids)}
    made = _MATRICES[str(file)] = _Matrix(key, rowids, vectors, projects, kinds, at)
    while len(_MATRICES) > _MATRIX_SLOTS:
        _MATRICES.popitem(last=False)
    return made


def similarities(
    conn: sqlite3.Connection,
    query: str,
    candidates: Collection[int],
    projects: Collection[str] | None = None,
    kinds: Collection[str] | None = None,
) -> dict[int, float]:
    """The cosine of ``query`` to each of ``candidates`` (memory rowids) that has a vector,
    and to the :data:`CANDIDATES` closest others at or over :data:`THRESHOLD` of
    ``projects`` and ``kinds`` (None: every one); empty without an embedder in this
    process or vectors in the store."""
    embedder = _ACTIVE
    if embedder is None:
        return {}
    try:
        matrix = _matrix(conn)
    except sqlite3.OperationalError:  # a store of before migration 9, read-only
        return {}
    if matrix is None:
        return {}
    import numpy as np

    try:
        asked = embedder.query(query)
    except ModelFileError:  # a file of the model is not the pinned one: recall stays lexical
        return {}
    cosines = matrix.vectors @ asked
    # the closest are those the recall may return
    for column, asked_for in ((matrix.projects, projects), (matrix.kinds, kinds)):
        if asked_for is not None:
            cosines = np.where(np.isin(column, list(asked_for)), cosines, -1.0)
    out: dict[int, float] = {}
    for rowid in candidates:  # looked up, not found by a walk over every row
        i = matrix.at.get(rowid)
        if i is not None:
            out[rowid] = float(cosines[i])
    over = np.flatnonzero(cosines >= THRESHOLD)
    if over.size:
        best = over[np.argsort(-cosines[over], kind="stable")[:CANDIDATES]]
        for i in best:
            out.setdefault(matrix.rowids[int(i)], float(cosines[int(i)]))
    return out


def lifts(cosines: dict[int, float]) -> dict[int, float]:
    """What meaning adds to a recall score: :data:`WEIGHTS` for the query's closest
    memories of ``cosines`` (recall passes the ones it may return), each at or over
    :data:`THRESHOLD`; they match the query.  Nothing for the rest: a cosine alone says
    little (a chatty store has many over any threshold), how close against the rest does."""
    ranked = sorted(cosines.items(), key=lambda rc: (-rc[1], rc[0]))
    return {r: w for (r, c), w in zip(ranked, WEIGHTS, strict=False) if c >= THRESHOLD}
