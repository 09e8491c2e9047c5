"""The noise gate and the redundancy test, measured on the labelled capture fixture.

The figures printed here are the ones quoted in ``sealmem.client.hosts.gate``
(run ``pytest tests/hosts/test_gate.py -s`` to see them).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sealmem.client.hosts import gate
from tests.hosts.conftest import FIXTURES

ROWS: list[dict[str, Any]] = [
    json.loads(line)
    for line in (FIXTURES / "capture.jsonl").read_text(encoding="utf-8").splitlines()
]
THRESHOLDS = [x / 2 for x in range(-4, 11)]  # -2.0 .. 5.0 in steps of 0.5


def _gate_rows(split: str) -> list[dict[str, Any]]:
    return [r for r in ROWS if r["type"] == "gate" and r["split"] == split]


def _figures(split: str, threshold: float) -> tuple[float, float]:
    tp = fp = fn = 0
    for row in _gate_rows(split):
        score, _ = gate.gate_score(row["text"], after_error=row["after_error"])
        kept, wanted = score >= threshold, row["label"] == "keep"
        tp += kept and wanted
        fp += kept and not wanted
        fn += wanted and not kept
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return precision, recall


def _f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def test_fixture_is_labelled_and_split() -> None:
    tune, holdout = _gate_rows("tune"), _gate_rows("holdout")
    assert len(tune) >= 50
    assert len(holdout) >= 30
    for rows in (tune, holdout):
        labels = {r["label"] for r in rows}
        assert labels == {"keep", "drop"}
    assert {r["label"] for r in ROWS if r["type"] == "dedup"} == {"dup", "new"}


def test_gate_threshold_is_the_strictest_best_f1_on_the_tune_split() -> None:
    best = max(_f1(*_figures("tune", t)) for t in THRESHOLDS)
    chosen = max(t for t in THRESHOLDS if _f1(*_figures("tune", t)) == best)
    assert chosen == gate.GATE_THRESHOLD
    for split in ("tune", "holdout"):
        precision, recall = _figures(split, gate.GATE_THRESHOLD)
        keep = sum(r["label"] == "keep" for r in _gate_rows(split))
        print(
            f"gate @ {gate.GATE_THRESHOLD}: {split:8} precision {precision:.2f} "
            f"recall {recall:.2f} ({keep} keep / {len(_gate_rows(split)) - keep} drop)"
        )
    precision, recall = _figures("holdout", gate.GATE_THRESHOLD)
    assert precision >= 0.9
    assert recall >= 0.8


def test_dup_threshold_is_the_midpoint_between_the_classes() -> None:
    pairs = [r for r in ROWS if r["type"] == "dedup"]
    dup = [gate.overlap(r["text"], r["existing"]) for r in pairs if r["label"] == "dup"]
    new = [gate.overlap(r["text"], r["existing"]) for r in pairs if r["label"] == "new"]
    assert round((max(new) + min(dup)) / 2 * 20) / 20 == gate.DUP_THRESHOLD
    wrong = sum(o < gate.DUP_THRESHOLD for o in dup) + sum(o >= gate.DUP_THRESHOLD for o in new)
    print(f"dedup @ {gate.DUP_THRESHOLD}: {len(pairs) - wrong}/{len(pairs)} pairs right")
    assert wrong == 0


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Decision: we use Postgres 16 for the reporting database.", "decision"),
        ("We decided to keep the API synchronous and wrap it for async callers.", "decision"),
        ("Warning: the orders table has no index on customer_id, filtering scans it.", "warning"),
        ("Never push directly to the main branch of the infrastructure repository.", "warning"),
        ("Lesson: the e2e suite needs one worker because the fixtures share a profile.", "lesson"),
    ],
)
def test_kinds_follow_the_cue(text: str, kind: str) -> None:
    verdict = gate.judge(text)
    assert verdict.keep
    assert verdict.kind == kind
    assert not verdict.text.lower().startswith(("decision:", "warning:", "lesson:"))


def test_redundant_uses_the_threshold() -> None:
    stored = ["Never run make reset-db against the shared dev database."]
    assert gate.redundant("never run `make reset-db` on the shared dev database!", stored)
    assert not gate.redundant("The dev database is reset every night at 02:00 UTC.", stored)
    assert not gate.redundant("anything at all", [])
