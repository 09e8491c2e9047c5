#!/bin/bash
# Side-by-side figures: this tree beside a baseline tree, each pair alternated in one window.
# Usage: tests/bench/side_by_side.sh BASE_REV   (e.g. 909a2fa); prints to stdout.
# The baseline is `git archive BASE_REV` with a sealmem/ directory of symlinks first on
# PYTHONPATH; each tree runs its own bench scripts.
set -u
REV=${1:?a baseline revision}
cd "$(dirname "$0")/../.."
B=$(mktemp -d)
mkdir -p "$B/src" "$B/ns/sealmem"
git archive "$REV" | tar -x -C "$B/src"
for p in client hub crypto protocol; do ln -s "$B/src/$p" "$B/ns/sealmem/$p"; done

base() { (cd $B/src && PYTHONPATH=$B/ns:$B/src python "$@"); }
here() { python "$@"; }
t() { echo "### $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg) :: $*"; }
for r in 1 2; do
  t base merge; base tests/bench/bench_merge.py 2>&1 | tail -12
  t this merge; here tests/bench/bench_merge.py 2>&1 | tail -12
done
for r in 1 2; do
  t base import; base tests/bench/bench_import.py --memories 20000 2>&1 | tail -8
  t this import; here tests/bench/bench_import.py --memories 20000 2>&1 | tail -8
done
for r in 1 2 3; do
  t base push; base tests/bench/bench_push.py 10000 2>&1 | grep -E "^\| +[0-9]{1,3}(,[0-9]{3})+ \|"
  t this push; here tests/bench/bench_push.py 10000 2>&1 | grep -E "^\| +[0-9]{1,3}(,[0-9]{3})+ \|"
done
t base sync; base tests/bench/bench_sync.py --growth "" 2>&1 | tail -6
t this sync; here tests/bench/bench_sync.py --growth "" 2>&1 | tail -6
t recall; here tests/bench/bench_recall_cold.py --size 20000 --baseline-src "$B/src" --runs 2 2>&1 | tail -12
t hub quiet; here tests/bench/bench_hub.py --members 200 --seconds 8 --paths fast plain --baseline "$REV" --baseline-http httptools --rounds 2 --sync-only 2>&1 | tail -14
t hub burn; here tests/bench/bench_hub.py --members 200 --seconds 8 --paths fast plain --baseline "$REV" --baseline-http httptools --rounds 2 --sync-only --burn 2 2>&1 | tail -14
t end
rm -rf "$B"
