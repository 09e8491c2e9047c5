"""What the hub's marks cost a seqs answer: ``lost_chunks`` over a writer's slot of three
kept manifests of 1 024 refs each (the largest common snapshot), on the SQLite backend.

    python -m tests.bench.bench_lost_chunks
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from sealmem.hub.storage.backends import open_storage

TEAM, PROJECT, WRITER = "t", "p", "w" * 26
REFS, ROUNDS = 1024, 200


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "hub").mkdir()
        store = open_storage(f"sqlite://{d}/hub/hub.db", f"file://{d}/blobs")
        with store._tx(TEAM) as conn:  # rows only: the query never reads a blob
            for seq in (1, 2, 3):
                for i in range(REFS):
                    cid = f"{seq if i < 100 else 0}{i:063x}"  # 100 refs changed per seq
                    conn.execute(
                        "INSERT INTO manifest_chunks (team, project, writer, id, seq) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (TEAM, PROJECT, WRITER, cid, seq),
                    )
            for i in range(REFS):
                conn.execute(
                    "INSERT INTO chunks (team, project, writer, id, size, stored_at) "
                    "VALUES (?, ?, ?, ?, 100, 0)",
                    (TEAM, PROJECT, WRITER, f"0{i:063x}"),
                )
        started = time.perf_counter()
        for _ in range(ROUNDS):
            lost = store.lost_chunks(TEAM, PROJECT, WRITER, 4096)
        each = (time.perf_counter() - started) / ROUNDS * 1000
        print(f"lost_chunks, 3 manifests x {REFS} refs, {len(lost)} lost: {each:.2f} ms")
        store.close()


if __name__ == "__main__":
    main()
