"""What reaches the hub from outside never answers 500, nor grows its metrics.

In process (Starlette's TestClient, server exceptions turned into answers):
numbers in paths and queries are ASCII digits within int64 (a 5000-digit
version, a ``²`` or an Arabic-Indic ``٣`` once answered 500 or was taken for a
3); an unexpected error in a handler is a JSON 500 ``internal`` with the
traceback in the hub's log only; metric labels come from fixed sets; and a
fuzz over methods, paths, queries, headers and bodies gets no 5xx.
"""

from __future__ import annotations

import logging
import random
import string
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from sealmem.client.sync.hub import HubTransport
from sealmem.crypto import MemberKey
from sealmem.hub.http.app import create_app
from sealmem.hub.storage.sqlite import SQLiteStorage
from sealmem.protocol import hubapi, reasons
from sealmem.protocol.invite import MAX_JOIN_BYTES
from sealmem.protocol.manifest import MAX_CHUNK_BYTES, MAX_MANIFEST_BYTES
from sealmem.protocol.verify import MAX_KEYRING_BYTES

from .conftest import (
    BOTH_PATHS,
    IN_PROCESS_URL,
    METRICS_AUTH,
    PROJECT,
    TEAM,
    TOKEN,
    HubWorld,
    hub_config,
    signed,
)

pytestmark = BOTH_PATHS


class _World:
    def __init__(self, client: TestClient, world: HubWorld) -> None:
        self.client = client
        self.world = world
        self.admin = world.nodes["admin"].key
        self.alice = world.nodes["alice"].key

    def send(
        self,
        method: str,
        target: str,
        body: bytes = b"",
        *,
        key: MemberKey | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, object]]:
        sent = dict(headers or {})
        if key is not None:
            sent.update(signed(key, method, target, body))
        answer = self.client.request(method, target, headers=sent, content=body)
        doc = (
            answer.json()
            if answer.headers.get("content-type", "").startswith("application/json")
            else {}
        )
        return answer.status_code, doc if isinstance(doc, dict) else {}


def _world(tmp_path: Path, fast: bool, storage: SQLiteStorage | None = None) -> Iterator[_World]:
    data = tmp_path / "hub-data"
    app = create_app(hub_config(data, long_poll_max_s=0.01, fast=fast), storage)
    with TestClient(app, base_url=IN_PROCESS_URL, raise_server_exceptions=False) as client:
        homes = tmp_path / "homes"
        homes.mkdir()
        w = HubWorld(
            homes,
            IN_PROCESS_URL,
            lambda k: HubTransport(IN_PROCESS_URL, TEAM, k, operator_token=TOKEN, client=client),
        )
        w.create()
        w.join("alice")
        try:
            yield _World(client, w)
        finally:
            w.close()


@pytest.fixture
def hub(tmp_path: Path, fast: bool) -> Iterator[_World]:
    yield from _world(tmp_path, fast)


# -- numbers ---------------------------------------------------------------------------

BIG = "9" * 5000
TEAM_PATH = f"/v1/teams/{TEAM}"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("method", "target", "status"),
    [
        pytest.param("PUT", f"{TEAM_PATH}/rosters/{BIG}", 400, id="5000-digit-version"),
        pytest.param("PUT", f"{TEAM_PATH}/keyrings/{PROJECT}/{BIG}", 400, id="5000-digit-epoch"),
        pytest.param("PUT", "{manifests}/" + BIG, 400, id="5000-digit-seq"),
        pytest.param("PUT", "{manifests}/" + "9" * 20, 400, id="20-digit-seq"),
        pytest.param("PUT", "{manifests}/9223372036854775808", 400, id="2^63-seq"),
        pytest.param("GET", f"{TEAM_PATH}/rosters?after=%C2%B2", 400, id="superscript-after"),
        pytest.param("GET", f"{TEAM_PATH}/rosters?after=%D9%A3", 400, id="arabic-indic-after"),
        pytest.param("GET", f"{TEAM_PATH}/rosters?after={BIG}", 400, id="5000-digit-after"),
        pytest.param("GET", f"{TEAM_PATH}/changes?since=%D9%A3", 400, id="arabic-indic-since"),
        pytest.param("GET", f"{TEAM_PATH}/changes?wait=%D9%A3", 400, id="arabic-indic-wait"),
        pytest.param("GET", f"{TEAM_PATH}/changes?wait=1_0", 400, id="underscore-wait"),
        pytest.param("PUT", f"{TEAM_PATH}/rosters/%D9%A3", 404, id="arabic-indic-version"),
    ],
)
def test_numbers_are_ascii_within_int64(hub: _World, method: str, target: str, status: int) -> None:
    target = target.replace(
        "{manifests}", f"{TEAM_PATH}/projects/{PROJECT}/manifests/{hub.admin.kid}"
    )
    got, doc = hub.send(method, target, b"{}" if method == "PUT" else b"", key=hub.admin)
    assert (got, doc.get("error")) == (status, "bad-request" if status == 400 else "not-found")
    assert isinstance(doc.get("detail"), str)


_CHUNKS = f"{TEAM_PATH}/projects/{PROJECT}/chunks/{{kid}}/{'0' * 64}"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("method", "target", "limit", "signs"),
    [
        pytest.param("PUT", _CHUNKS, MAX_CHUNK_BYTES, True, id="chunk"),
        pytest.param("PUT", "{manifests}/1", MAX_MANIFEST_BYTES, True, id="manifest"),
        pytest.param("PUT", f"{TEAM_PATH}/keyrings/{PROJECT}/1", MAX_KEYRING_BYTES, True,
                     id="keyring"),
        pytest.param("PUT", f"{TEAM_PATH}/rosters/2", hubapi.MAX_ROSTER_PUBLISH_BYTES, True,
                     id="roster"),
        pytest.param("POST", f"{TEAM_PATH}/projects/{PROJECT}/collect/{{kid}}",
                     hubapi.MAX_COLLECT_BYTES, True, id="collect"),
        pytest.param("POST", f"{TEAM_PATH}/requests/{{kid}}", MAX_JOIN_BYTES, False, id="join"),
    ],
)  # fmt: skip
def test_each_body_route_refuses_a_byte_over_its_limit(
    hub: _World, method: str, target: str, limit: int, signs: bool
) -> None:
    target = target.replace(
        "{manifests}", f"{TEAM_PATH}/projects/{PROJECT}/manifests/{hub.alice.kid}"
    ).replace("{kid}", hub.alice.kid)
    key = hub.alice if signs else None
    status, doc = hub.send(method, target, b"x" * (limit + 1), key=key)
    assert (status, doc.get("error")) == (413, hubapi.TOO_LARGE)
    assert f"at most {limit}" in str(doc.get("detail"))
    status, doc = hub.send(method, target, b"x" * limit, key=key)  # read, then refused
    assert status not in (413, 500), doc


def test_wait_takes_the_floats_a_client_writes(hub: _World) -> None:
    for wait in ("0", "25.0", "0.9123456789012345", "1.2e-05"):
        target = f"{TEAM_PATH}/changes?since=0&wait={wait}"
        status, doc = hub.send("GET", target, key=hub.alice)
        assert (status, sorted(doc)) == (200, ["changes", "cursor"]), wait


@pytest.mark.parametrize(
    ("method", "target", "key"),
    [
        pytest.param("PUT", f"{TEAM_PATH}/rosters/2", "admin", id="roster"),
        pytest.param("POST", f"{TEAM_PATH}/projects/{PROJECT}/collect/{{kid}}", "alice",
                     id="collect"),
    ],
)  # fmt: skip
def test_a_json_body_nested_too_deeply_is_a_bad_request(
    hub: _World, method: str, target: str, key: str
) -> None:
    """The stdlib decoder raises RecursionError (not a ValueError) from about a thousand
    nested arrays: a member's ``[[[[...`` once answered 500 on both JSON routes."""
    signer = hub.admin if key == "admin" else hub.alice
    target = target.replace("{kid}", hub.alice.kid)
    for body in (b"[" * 5000, b'{"keep": ' + b"[" * 5000, b'{"roster": ' + b"[" * 5000):
        status, doc = hub.send(method, target, body, key=signer)
        assert (status, doc.get("error")) == (400, hubapi.BAD_REQUEST), body[:12]


def test_the_time_header_is_ascii_digits_only(hub: _World) -> None:
    """``int()`` takes ' 1_7 ' for 17: a time header is digits and nothing else."""
    target = f"{TEAM_PATH}/rosters"
    for spelled in (lambda t: f"{t[:1]}_{t[1:]}", lambda t: f" {t} ", lambda t: "+" + t):
        headers = signed(hub.admin, "GET", target)
        headers["sealmem-time"] = spelled(headers["sealmem-time"])
        answer = hub.client.get(target, headers=headers)
        assert (answer.status_code, answer.json()["error"]) == (401, "bad-auth-header")


# -- unexpected errors -----------------------------------------------------------------


class _FailingSeqs(SQLiteStorage):
    """A storage whose seqs query fails the way no handler expects."""

    def newest_seqs(self, team: str, project: str) -> dict[str, int]:
        raise RuntimeError("disk says no; secret-in-message 0xfeed")


def test_a_handler_error_is_a_json_500_without_a_traceback(
    tmp_path: Path, fast: bool, caplog: pytest.LogCaptureFixture
) -> None:
    for world in _world(tmp_path, fast, _FailingSeqs(tmp_path / "hub-data")):
        target = f"{TEAM_PATH}/projects/{PROJECT}/seqs"
        with caplog.at_level(logging.ERROR, logger="sealmem.hub"):
            answer = world.client.get(target, headers=signed(world.alice, "GET", target))
        assert answer.status_code == 500
        doc = answer.json()
        assert set(doc) == {"error", "detail"}
        assert doc["error"] == "internal"
        assert "Traceback" not in answer.text
        assert "secret" not in answer.text
        logged = [r for r in caplog.records if r.name == "sealmem.hub" and r.exc_info]
        assert logged, "the traceback belongs in the hub's log"
        assert "/seqs" in logged[0].getMessage()
        assert "?" not in logged[0].getMessage()


# -- metrics ---------------------------------------------------------------------------

ROUTES = {*hubapi.TEMPLATES, "unmatched"}
METHODS = {"GET", "PUT", "POST", "DELETE", "other"}
STATUSES = {"1xx", "2xx", "3xx", "4xx", "5xx"}
CODES = {
    v for m in (hubapi, reasons) for k, v in vars(m).items() if k.isupper() and isinstance(v, str)
} | {"other"}
METHOD = st.sampled_from(["GET", "PUT", "POST", "DELETE", "PATCH", "OPTIONS", "BREW", "X-" * 5])


def _labels(text: str) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        if not family.name.startswith("sealmem_hub_"):
            continue
        for sample in family.samples:
            for name, value in sample.labels.items():
                if name != "le":
                    seen.setdefault(name, set()).add(value)
    return seen


@pytest.mark.slow
def test_random_requests_add_no_label_values(hub: _World) -> None:
    rng = random.Random(10)
    words = [TEAM, PROJECT, "v1", "teams", "projects", "rosters", "manifests", "٣", "9" * 30]
    for _ in range(200):
        method = rng.choice(["GET", "PUT", "POST", "DELETE", "PATCH", "BREW", f"M{rng.random()}"])
        path = "/" + "/".join(
            rng.choice([*words, str(rng.random())]) for _ in range(rng.randint(0, 7))
        )
        hub.client.request(method, path)
    text = hub.client.get("/metrics", headers=METRICS_AUTH).text
    seen = _labels(text)
    assert seen["route"] <= ROUTES
    assert seen["method"] <= METHODS
    assert seen["status"] <= STATUSES
    assert seen.get("code", set()) <= CODES
    assert {"unmatched", "other"} <= seen["route"] | seen["method"]  # the fuzz reached them
    assert "process_resident_memory_bytes" in text  # process metrics, from the collectors
    assert "sealmem_hub_resident_memory_bytes" in text


# -- fuzz ------------------------------------------------------------------------------

_SAFE = string.ascii_letters + string.digits + "-._~"
_TEMPLATE = st.sampled_from(hubapi.TEMPLATES)
_PARAM = st.one_of(
    st.text(alphabet=_SAFE, min_size=1, max_size=40),
    st.text(alphabet=string.digits, min_size=1, max_size=60),
    st.just("9" * 5000),
    st.sampled_from([TEAM, PROJECT, "a" * 26, "a" * 64, "0", "%D9%A3", "%00", "%2F"]),
)
_QUERY = st.dictionaries(
    st.sampled_from(["after", "since", "limit", "wait", "x"]),
    st.one_of(st.text(alphabet=_SAFE, max_size=25), st.sampled_from(["%C2%B2", "nan", "-1"])),
    max_size=3,
)
_HEADER = st.text(alphabet=string.printable.strip(), max_size=90)
_HEADERS = st.dictionaries(
    st.sampled_from(
        [
            "sealmem-kid",
            "sealmem-time",
            "sealmem-nonce",
            "sealmem-signature",
            "sealmem-operator-token",
            "content-type",
        ]
    ),
    _HEADER,
    max_size=4,
)


@st.composite
def _requests(draw: st.DrawFn) -> tuple[str, str, dict[str, str], bytes, bool]:
    template = draw(_TEMPLATE)
    names = hubapi.template_names(template)
    path = template
    for name in names:
        path = path.replace("{" + name + (":int}" if names[name] else "}"), draw(_PARAM))
    query = draw(_QUERY)
    if query:
        path += "?" + "&".join(f"{k}={v}" for k, v in query.items())
    body = draw(st.one_of(st.binary(max_size=512), st.sampled_from([b"{}", b'{"keep": []}'])))
    return draw(METHOD), path, draw(_HEADERS), body, draw(st.booleans())


@pytest.mark.slow
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(request=_requests())
def test_nothing_from_outside_reaches_a_500(
    hub: _World, request: tuple[str, str, dict[str, str], bytes, bool]
) -> None:
    method, target, headers, body, sign = request
    key = hub.alice if sign else None
    status, doc = hub.send(method, target, body, key=key, headers=headers)
    assert status < 500, (status, doc)
    if status >= 400 and method != "HEAD":
        assert isinstance(doc.get("error"), str), (status, doc)
