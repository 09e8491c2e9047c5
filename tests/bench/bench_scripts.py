"""Write and recall cost of text in other scripts, beside ASCII text (issue 29, item 1).

Writes ``N`` memories of made-up ASCII words, then ``N`` of Chinese and Japanese runs
(built from a fixed seed), through ``MemoryStore.remember``, and asks 200 queries of
each kind (a word of a memory; for the runs, two to four characters taken from inside
one).  Reports the CPU time (``time.process_time``: on a shared machine it leaves out
the time the process waited for a core) and the wall time per call, the store's size,
and for the run queries how many found their memory in the top 5.  Run it with another
tree first on ``PYTHONPATH`` to compare (as ``side_by_side.sh`` does).

Run: python tests/bench/bench_scripts.py [N]   (default 2000; prints figures, asserts nothing)
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

from sealmem.client import MemoryStore

_HAN = "退款处理流程需要财务审批图片缓存首页数据库备份每天凌晨运行服务器重启配置文件日志用户登录"
_KANA = "タイムアウトの設定日本語のメモサーバー再起動は金曜日夜キャッシュを消すテスト環境ログイン"
_ASCII = [f"w{i:04d}" for i in range(3000)]


def _texts(rng: random.Random, n: int) -> tuple[list[str], list[str]]:
    ascii_ = [" ".join(rng.choices(_ASCII, k=rng.randint(8, 30))) for _ in range(n)]
    runs = []
    for _ in range(n):
        letters = rng.choice([_HAN, _KANA])
        parts = ["".join(rng.choices(letters, k=rng.randint(6, 20))) for _ in range(3)]
        runs.append("。".join(parts) + f" v{rng.randint(1, 9)}")
    return ascii_, runs


def _write(store: MemoryStore, texts: list[str]) -> tuple[list[str], float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    ids = [store.remember(text, project="bench").memory.id for text in texts]
    return ids, time.process_time() - cpu, time.perf_counter() - wall


def main(n: int) -> None:
    rng = random.Random(29)
    ascii_, runs = _texts(rng, n)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        with MemoryStore.open(path, author="bench") as store:
            for name, texts in (("ascii", ascii_), ("runs", runs)):
                ids, cpu, wall = _write(store, texts)
                each = f"CPU {cpu / n * 1e3:.2f} ms, wall {wall / n * 1e3:.2f} ms each"
                print(f"remember {name:5}: {each}")
                asked = []
                for i in rng.sample(range(n), 200):
                    words = texts[i].replace("。", " ").split()
                    word = rng.choice(words[:-1] if name == "runs" else words)
                    if name == "runs":
                        start = rng.randrange(len(word) - 1)
                        word = word[start : start + rng.randint(2, 4)]
                    asked.append((word, ids[i]))
                cpu, wall = time.process_time(), time.perf_counter()
                found = sum(
                    memory_id in [h.memory.id for h in store.recall(word, k=5, project="bench")]
                    for word, memory_id in asked
                )
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                print(
                    f"recall   {name:5}: CPU {cpu / 200 * 1e3:.2f} ms, wall {wall / 200 * 1e3:.2f} "
                    f"ms each; memory in the top 5: {found}/200"
                )
            store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        print(f"store: {2 * n} memories, {path.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
