"""SPEC.md's table of one hub process's limits says what the hub does.

Each row is read from the spec and compared with the hub's defaults and answers: the
long polls per member, the body readers (a quarter of them per member, and per
client address for join requests; an eighth kept for admins' rosters and keyrings),
and the ``/metrics`` door.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.datastructures import Headers

from sealmem.hub.config import HubConfig
from sealmem.hub.errors import Refusal
from sealmem.hub.http.edge import MetricsDoor, PollSlots, per_key, reserved
from sealmem.protocol import hubapi
from sealmem.protocol.errors import InputError

from .conftest import hub_config

SPEC = (Path(__file__).resolve().parents[2] / "protocol" / "SPEC.md").read_text("utf-8")


def _table() -> list[list[str]]:
    section = SPEC[SPEC.index("## Hub API (messages)") :]
    start = section.index("**Limits of one hub process.**")
    block = section[start : section.index("### Messages")]
    rows = [line for line in block.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows[1:]]


def _row(what: str) -> list[str]:
    (row,) = [r for r in _table() if r[0].startswith(what)]
    return row


def _refusal(cell: str) -> tuple[int, str, int | None]:
    found = re.fullmatch(r"(\d{3}) `([a-z-]+)`(?:, `Retry-After: (\d+)`)?", cell)
    assert found, cell
    status, code, retry = found.groups()
    return int(status), code, None if retry is None else int(retry)


def test_the_long_poll_row(tmp_path: Path) -> None:
    config = hub_config(tmp_path / "data")
    _, most, refused = _row("long polls")
    assert most == f"{config.max_polls_per_member} (`max_polls_per_member`)"
    assert most.startswith(str(HubConfig.max_polls_per_member))
    slots = PollSlots(config.max_polls_per_member)
    for _ in range(config.max_polls_per_member):
        slots.take("kid")
    with pytest.raises(Refusal) as refusal:
        slots.take("kid")
    assert _refusal(refused) == (
        refusal.value.status,
        refusal.value.code,
        refusal.value.retry_after,
    )
    assert refusal.value.code == hubapi.RATE_LIMITED
    assert "`wait=0` takes no slot" in SPEC
    assert f"(at most {HubConfig.long_poll_max_s:.0f} s)" in SPEC


@pytest.mark.parametrize(
    ("pool", "share", "setting"),
    [
        ("signed request bodies", "of those, bodies of one member", "max_body_reads"),
        ("join request bodies", "of those, bodies from one client address", "max_join_reads"),
    ],
)
def test_the_body_reader_rows(pool: str, share: str, setting: str) -> None:
    reads = getattr(HubConfig, setting)
    _, most, refused = _row(pool)
    assert most == f"{reads} (`{setting}`)"
    _, part, part_refused = _row(share)
    share_of_one = per_key(reads)
    assert part == f"a quarter of `{setting}` ({share_of_one}), at least 1"
    assert share_of_one == max(reads // 4, 1)
    assert per_key(1) == 1
    assert _refusal(refused) == _refusal(part_refused) == (503, hubapi.BUSY, 1)


def test_the_reserve_row() -> None:
    _, most, refused = _row("of those, kept for admins'")
    reads = HubConfig.max_body_reads
    assert most == f"an eighth of `max_body_reads` ({reserved(reads)})"
    assert reserved(reads) == reads // 8
    assert _refusal(refused) == (503, hubapi.BUSY, 1)


def test_the_metrics_rows() -> None:
    off = _row("`GET /metrics` when the operator set no metrics token")
    on = _row("`GET /metrics` with a token set")
    assert "`SEALMEM_HUB_METRICS_TOKEN`" in off[0]
    assert "`hub serve --metrics-token`" in off[0]
    with pytest.raises(Refusal) as closed:
        MetricsDoor(None).check(Headers({}))
    assert _refusal(off[2]) == (closed.value.status, closed.value.code, None)
    token = "t" * 16
    door = MetricsDoor(token)
    door.check(Headers({"authorization": f"bEaReR {token}"}))  # the scheme in any case
    for wrong in ("", f"Basic {token}", "Bearer " + "u" * 16, token):
        with pytest.raises(Refusal) as refused:
            door.check(Headers({"authorization": wrong} if wrong else {}))
        assert _refusal(on[2]) == (refused.value.status, refused.value.code, None)
    with pytest.raises(InputError, match="at least 16"):
        HubConfig(metrics_token="t" * 15)
