"""Counters, latency histograms and process metrics, through ``prometheus_client``.

Every label has a fixed set of values, whatever a client sends: ``route`` is a
template of :data:`sealmem.protocol.hubapi.TEMPLATES` or ``unmatched``,
``method`` one of GET, PUT, POST, DELETE or ``other``, ``status`` a class
(``2xx`` ... ``5xx``), ``code`` an error code the hub itself names or
``other``.  Never ids, paths, or anything else a member sent.  Each app has its
own registry (several hubs may run in one process), with the client library's
process, platform and garbage-collector collectors.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)

from ...protocol import hubapi, reasons

__all__ = ["CONTENT_TYPE", "DiskWatch", "Metrics", "resident_bytes"]

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CONTENT_TYPE = CONTENT_TYPE_LATEST
_METHODS = frozenset({"GET", "PUT", "POST", "DELETE"})
_ROUTES = frozenset(hubapi.TEMPLATES)
_CODES = frozenset(
    v for m in (hubapi, reasons) for k, v in vars(m).items() if k.isupper() and isinstance(v, str)
)


def resident_bytes() -> int:
    """This process's resident set size (Linux ``/proc``; 0 where unavailable)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


class DiskWatch:
    """Whether this hub process last found its storage full: set by a write refused
    for a full disk, cleared by the next write that succeeds.  Kept in memory (``/healthz``
    touches no storage); each replica sees its own writes."""

    def __init__(self) -> None:
        self.full_since_ms: int | None = None

    def full(self, now_ms: int) -> None:
        if self.full_since_ms is None:
            self.full_since_ms = now_ms

    def wrote(self) -> None:
        self.full_since_ms = None

    def health(self) -> dict[str, object]:
        """The body of ``/healthz``."""
        if self.full_since_ms is None:
            return {"ok": True}
        return {
            "ok": True,
            "disk": "full",
            "disk_full_since_ms": self.full_since_ms,
            "detail": "the hub's storage has no space left: reads are served, every write is "
            f"refused ({hubapi.DISK_FULL}) until the operator frees space or grows the disk",
        }


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self._requests = Counter(
            "sealmem_hub_requests",
            "Requests answered, by route template, method and status class.",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self._errors = Counter(
            "sealmem_hub_errors", "Refusals, by error code.", ["code"], registry=self.registry
        )
        self._duration = Histogram(
            "sealmem_hub_request_duration_seconds",
            "Time to answer, by route template.",
            ["route"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.disk = DiskWatch()
        self.gauge(
            "sealmem_hub_disk_full",
            "1 while the hub's storage refuses writes for lack of space (from the last "
            "refusal for a full disk until a write succeeds), else 0.",
            lambda: float(self.disk.full_since_ms is not None),
        )
        # the labelled children by (route, method, status) label: ``labels()`` takes a
        # lock and checks its arguments, on every request
        self._children: dict[tuple[str, str, str], tuple[Counter, Histogram]] = {}

    def gauge(self, name: str, help_text: str, read: Callable[[], float]) -> None:
        """A gauge read at each scrape (teams, stored bytes, RSS)."""
        Gauge(name, help_text, registry=self.registry).set_function(read)

    def observe(self, template: str | None, method: str, status: int, seconds: float) -> None:
        route = template if template in _ROUTES else "unmatched"
        status_class = f"{status // 100}xx" if 100 <= status <= 599 else "other"
        labels = (route, method if method in _METHODS else "other", status_class)
        found = self._children.get(labels)  # bounded: every label has a fixed set of values
        if found is None:
            found = self._children[labels] = (
                self._requests.labels(*labels),
                self._duration.labels(route),
            )
        counter, histogram = found
        counter.inc()
        histogram.observe(seconds)

    def error(self, code: str) -> None:
        self._errors.labels(code if code in _CODES else "other").inc()

    def render(self) -> bytes:
        """The exposition text (blocking: gauges may read storage)."""
        return generate_latest(self.registry)
