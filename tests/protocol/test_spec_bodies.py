"""SPEC.md "Bodies" states the hub's body forms and limits as the hub applies them."""

from __future__ import annotations

from pathlib import Path

from sealmem.hub.http import routes
from sealmem.protocol import hubapi

SPEC = (Path(__file__).resolve().parents[2] / "protocol" / "SPEC.md").read_text("utf-8")
BODIES = SPEC[SPEC.index("### Bodies") : SPEC.index("### Messages")]


def spaced(n: int) -> str:
    return f"{n:,}".replace(",", " ")


def test_the_body_limits_are_the_hubs() -> None:
    assert f"{spaced(hubapi.MAX_ROSTER_PUBLISH_BYTES)} bytes" in BODIES
    assert f"{spaced(hubapi.MAX_COLLECT_BYTES)} bytes" in BODIES
    assert f"at most {spaced(routes._MAX_KEYRINGS_PER_PUBLISH)} entries" in BODIES


def test_the_worked_example_is_the_request_vector() -> None:
    import json

    from tests.protocol.vectorgen.generate import VECTORS

    case = json.loads((VECTORS / "request-digest-accept.json").read_text("utf-8"))
    obj, headers = case["inputs"]["object"], case["output"]["headers"]
    assert f"PUT {obj['target']} HTTP/1.1" in BODIES
    for name, value in headers.items():
        spelled = "-".join(part.capitalize() for part in name.split("-"))
        assert f"{spelled}: {value}" in BODIES
