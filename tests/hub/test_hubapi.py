"""The hub API vocabulary is spelled once (protocol/hubapi.py) and matches SPEC.md."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sealmem.hub.http.app import create_app
from sealmem.hub.http.edge import route_path
from sealmem.protocol import hubapi
from sealmem.protocol.errors import InputError

from .conftest import hub_config

ROOT = Path(__file__).resolve().parents[2]
KID = "a" * 26
TEMPLATES = {
    name: value
    for name, value in vars(hubapi).items()
    if name.isupper()
    and isinstance(value, str)
    and "/" in value
    and name != "VERSION_PREFIX"
    and not name.startswith("_")
}
CODES = {
    value
    for name, value in vars(hubapi).items()
    if name.isupper()
    and isinstance(value, str)
    and re.fullmatch(r"[a-z]+(-[a-z]+)*", value)
    and not name.startswith(("HEADER_", "QUERY_", "REQUEST_", "FIELD_"))
}
#: The states ``GET /requests/{kid}`` answers (words, not error codes).
STATES = {v for n, v in vars(hubapi).items() if n.startswith("REQUEST_") and isinstance(v, str)}


def test_codes_lists_every_code() -> None:
    assert hubapi.CODES == CODES


def test_the_hub_routes_on_the_templates_and_nothing_else(tmp_path: Path) -> None:
    app = create_app(hub_config(tmp_path / "data"))
    routed = {getattr(route, "name", None) for route in app.routes}
    assert routed == set(TEMPLATES.values()) == set(hubapi.TEMPLATES)
    for route in app.routes:  # numbers are routed as digits, parsed by one helper
        assert getattr(route, "path", None) == route_path(getattr(route, "name", ""))


def test_path_fills_a_template_and_refuses_what_could_steer_it() -> None:
    got = hubapi.path(hubapi.MANIFEST, team="acme-1", project="web.app", writer=KID, seq=7)
    assert got == f"/v1/teams/acme-1/projects/web.app/manifests/{KID}/7"
    assert hubapi.path(hubapi.ROSTERS, team="acme-1") == "/v1/teams/acme-1/rosters"
    bad = [
        {"team": "acme-1", "project": "../etc", "writer": KID, "seq": 7},
        {"team": "acme-1", "project": "web", "writer": "x/y", "seq": 7},
        {"team": "acme-1", "project": "web", "writer": KID, "seq": -1},
        {"team": "acme-1", "project": "web", "writer": KID, "seq": True},
        {"team": "acme-1", "project": "web", "writer": KID, "seq": "7"},
        {"team": "acme-1", "project": "web", "writer": KID},
    ]
    for values in bad:
        with pytest.raises(InputError):
            hubapi.path(hubapi.MANIFEST, **values)  # type: ignore[arg-type]


def _sources(*dirs: str) -> list[Path]:
    return [p for d in dirs for p in sorted((ROOT / d).rglob("*.py"))]


@pytest.mark.slow
def test_no_header_name_path_or_code_is_spelled_outside_hubapi() -> None:
    headers = [v for n, v in vars(hubapi).items() if n.startswith("HEADER_")]
    literals = [*headers, "/v1/teams", "/projects/", "/rosters", "/keyrings", "/manifests"]
    codes = CODES - {"internal", "storage", "revoked", "not-admin", "too-large"}
    codes -= {"bad-signature", "roster-unknown", "bad-chunk-id", "missing-chunk"}  # reasons too
    found = []
    for source in _sources("hub", "client", "crypto"):
        text = source.read_text(encoding="utf-8")
        for literal in [*literals, *codes]:
            if re.search(rf"[\"']{re.escape(literal)}", text):
                found.append(f"{source.relative_to(ROOT)}: {literal}")
    assert found == []


def _spec_hub_api() -> str:
    spec = (ROOT / "protocol" / "SPEC.md").read_text(encoding="utf-8")
    return spec[spec.index("## Hub API (messages)") :]


def test_spec_lists_every_path_and_code() -> None:
    section = _spec_hub_api()
    for name, template in TEMPLATES.items():
        spec_form = re.sub(r":int\}", "}", template).removeprefix("/v1/teams/{team}")
        assert f" {spec_form}" in section or f"{spec_form}`" in section, name
    assert {s for s in STATES if f"`{s}`" not in section} == set()
    undocumented = {c for c in CODES if f"`{c}`" not in section}
    assert undocumented == set()
