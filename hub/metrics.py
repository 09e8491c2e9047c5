"""Counters and latency histograms, rendered in the Prometheus text format (0.0.4).

Labels are route templates, methods, statuses and error codes: never ids,
paths with ids, or anything a member sent.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping

__all__ = ["BUCKETS", "Metrics", "resident_bytes"]

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def resident_bytes() -> int:
    """This process's resident set size (Linux ``/proc``; 0 where unavailable)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _labels(pairs: Mapping[str, str]) -> str:
    inner = ",".join(
        f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for k, v in pairs.items()
    )
    return "{" + inner + "}"


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[tuple[str, str, str], int] = {}
        self._errors: dict[str, int] = {}
        self._hist: dict[str, list[int]] = {}
        self._sums: dict[str, float] = {}

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        with self._lock:
            key = (route, method, str(status))
            self._requests[key] = self._requests.get(key, 0) + 1
            counts = self._hist.setdefault(route, [0] * (len(BUCKETS) + 1))
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    counts[i] += 1
            counts[-1] += 1
            self._sums[route] = self._sums.get(route, 0.0) + seconds

    def error(self, code: str) -> None:
        with self._lock:
            self._errors[code] = self._errors.get(code, 0) + 1

    def render(self, gauges: Mapping[str, tuple[str, float]]) -> str:
        """The exposition text; ``gauges`` maps a metric name to (help, value)."""
        out: list[str] = []
        with self._lock:
            out += [
                "# HELP sealmem_hub_requests_total Requests answered, by route template.",
                "# TYPE sealmem_hub_requests_total counter",
            ]
            for (route, method, status), n in sorted(self._requests.items()):
                labels = _labels({"route": route, "method": method, "status": status})
                out.append(f"sealmem_hub_requests_total{labels} {n}")
            out += [
                "# HELP sealmem_hub_errors_total Refusals, by error code.",
                "# TYPE sealmem_hub_errors_total counter",
            ]
            for code, n in sorted(self._errors.items()):
                out.append(f"sealmem_hub_errors_total{_labels({'code': code})} {n}")
            out += [
                "# HELP sealmem_hub_request_duration_seconds Time to answer, by route template.",
                "# TYPE sealmem_hub_request_duration_seconds histogram",
            ]
            name = "sealmem_hub_request_duration_seconds"
            for route, counts in sorted(self._hist.items()):
                for bound, n in zip((*map(str, BUCKETS), "+Inf"), counts, strict=True):
                    out.append(f"{name}_bucket{_labels({'route': route, 'le': bound})} {n}")
                out.append(f"{name}_sum{_labels({'route': route})} {self._sums[route]:.6f}")
                out.append(f"{name}_count{_labels({'route': route})} {counts[-1]}")
        for metric, (help_text, value) in sorted(gauges.items()):
            out += [f"# HELP {metric} {help_text}", f"# TYPE {metric} gauge", f"{metric} {value:g}"]
        return "\n".join(out) + "\n"
