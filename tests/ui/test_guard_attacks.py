"""The guard under attack: what other pages on this machine and hostile clients can send.

Cookies are not isolated by port: every server on 127.0.0.1 (a dev server, a
second viewer) sees and sets cookies for the same host.  SameSite does not
help either: 127.0.0.1:3000 and 127.0.0.1:8765 are the same site.
"""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from sealmem.client.paths import local_author, store_path
from sealmem.client.recall.api import MemoryStore
from sealmem.client.ui.app import allowed_hosts, create_app
from sealmem.client.ui.guard import CSP, MAX_FORM_BYTES, Secrets

from .conftest import Seeded, refresh_target

PORT = 8765
BASE = f"http://127.0.0.1:{PORT}"


def _client(seeded: Seeded, secrets: Secrets, port: int = PORT) -> TestClient:
    app = create_app(seeded.home, secrets, allowed_hosts(port))
    return TestClient(app, base_url=f"http://127.0.0.1:{port}", follow_redirects=False)


def _session_cookie(c: TestClient, secrets: Secrets) -> str:
    """The ``name=value`` the viewer sets for the token."""
    res = c.get(f"/?token={secrets.token}")
    assert res.status_code == 200
    pair = res.headers["set-cookie"].split(";")[0]
    assert pair.endswith(f"={secrets.session}")
    return pair


@pytest.mark.slow
@pytest.mark.parametrize(
    "before",
    [
        'prefs={"theme":"dark"}',  # a JSON cookie from a dev server on another port
        "greeting=hello world",  # a space, as some frameworks write
        "bad\\name=1",
        'q="unterminated',
    ],
)
def test_cookies_of_other_local_servers_do_not_sign_the_user_out(
    seeded: Seeded, before: str
) -> None:
    secrets = Secrets()
    c = _client(seeded, secrets)
    ours = _session_cookie(c, secrets)
    res = c.get("/", headers={"cookie": f"{before}; {ours}"})
    assert res.status_code == 200, res.text
    assert "Orders" in res.text


def test_a_stale_cookie_of_the_same_name_does_not_hide_the_valid_one(seeded: Seeded) -> None:
    secrets = Secrets()
    c = _client(seeded, secrets)
    ours = _session_cookie(c, secrets)
    name = ours.split("=")[0]
    for header in (f"{ours}; {name}=stale", f"{name}=stale; {ours}"):
        assert c.get("/", headers={"cookie": header}).status_code == 200, header
    assert c.get("/", headers={"cookie": f"{name}=stale"}).status_code == 401


def test_two_viewers_on_two_ports_keep_their_own_sign_in(seeded: Seeded) -> None:
    """One browser, two viewers (say a solo home and a team home): cookies ignore ports,
    so the browser keeps one cookie per name for 127.0.0.1 and sends it to both."""
    first, second = Secrets(), Secrets()
    a = _client(seeded, first, PORT)
    b = _client(seeded, second, PORT + 1)
    jar: dict[str, str] = {}
    for client, secrets in ((a, first), (b, second)):
        name, _, value = _session_cookie(client, secrets).partition("=")
        jar[name] = value
    header = "; ".join(f"{name}={value}" for name, value in jar.items())
    assert b.get("/", headers={"cookie": header}).status_code == 200
    assert a.get("/", headers={"cookie": header}).status_code == 200  # still signed in


def test_the_origin_must_be_exactly_this_viewer(seeded: Seeded) -> None:
    secrets = Secrets()
    c = _client(seeded, secrets)
    _session_cookie(c, secrets)
    form = {"content": "planted without a scheme", "csrf": secrets.csrf}
    for origin in (f"127.0.0.1:{PORT}", f"https://127.0.0.1:{PORT}", "null", f"{BASE}/"):
        assert c.post("/remember", data=form, headers={"origin": origin}).status_code == 403
    with MemoryStore.open(store_path(seeded.home), author=local_author(seeded.home)) as store:
        assert not store.recall("planted scheme", all_projects=True)
    assert c.post("/remember", data=form, headers={"origin": BASE}).status_code == 303


def test_the_token_exchange_keeps_every_other_query_parameter(seeded: Seeded) -> None:
    secrets = Secrets()
    c = _client(seeded, secrets)
    res = c.get(f"/?q=&tag=a&tag=b&token={secrets.token}&kind=decision")
    assert res.status_code == 200
    assert refresh_target(res.text) == "/?q=&tag=a&tag=b&kind=decision"


def test_a_second_wrong_token_is_refused(seeded: Seeded) -> None:
    secrets = Secrets()
    c = _client(seeded, secrets)
    res = c.get(f"/?token={secrets.token}&token=guess")
    assert res.status_code == 401
    assert "set-cookie" not in res.headers


def test_every_refusal_and_error_carries_the_security_headers(seeded: Seeded) -> None:
    secrets = Secrets()
    c = _client(seeded, secrets)
    unsigned = [c.get("/"), c.get("/?token=wrong"), c.get("/", headers={"host": "evil.example"})]
    _session_cookie(c, secrets)
    origin = {"origin": BASE}
    signed = [
        c.get(f"/?token={secrets.token}"),  # the signed-in page
        c.get("/m/ffffffffffff"),  # 404 from the store
        c.get("/no/such/page"),  # 404 from the router
        c.put("/remember", data={"csrf": secrets.csrf}, headers=origin),  # 405
        c.post("/remember", data={"content": "x"}, headers=origin),  # 403 CSRF
        c.post("/remember", data={"csrf": secrets.csrf}, headers={"origin": "null"}),
        c.post(
            "/remember",
            data={"csrf": secrets.csrf, "content": "x" * MAX_FORM_BYTES},
            headers=origin,
        ),  # 413
        c.post("/importance", data={"csrf": secrets.csrf, "id": "x"}, headers=origin),  # 400
        c.post("/remember", data={"csrf": secrets.csrf, "content": "ok"}, headers=origin),
        c.get("/static/app.js"),
        c.get("/static/nope.js"),
    ]
    statuses = sorted({r.status_code for r in unsigned + signed})
    assert statuses == [200, 303, 400, 401, 403, 404, 405, 413, 421]
    for res in unsigned + signed:
        assert res.headers["content-security-policy"] == CSP, res.status_code
        assert res.headers["x-content-type-options"] == "nosniff"
        assert res.headers["x-frame-options"] == "DENY"
        assert res.headers["cache-control"] == "no-store"
        assert "Traceback" not in res.text


def test_requests_another_local_site_starts_are_refused(seeded: Seeded) -> None:
    """A page on 127.0.0.1:3000 is the same *site* as the viewer, so the SameSite=Strict
    cookie rides along with its fetches and frames: it could time searches (XS-search)
    even though it cannot read the answers.  Fetch metadata tells such requests apart."""
    secrets = Secrets()
    c = _client(seeded, secrets)
    _session_cookie(c, secrets)
    for site in ("same-site", "cross-site"):
        for mode in ("no-cors", "navigate", "cors"):
            headers = {"sec-fetch-site": site, "sec-fetch-mode": mode}
            res = c.get("/?q=orders", headers=headers)
            assert res.status_code == 403, (site, mode)
            assert "Orders" not in res.text
            assert "address bar" in res.text
    assert c.get("/", headers={"sec-fetch-site": "same-origin"}).status_code == 200
    assert c.get("/", headers={"sec-fetch-site": "none"}).status_code == 200
    assert c.get("/").status_code == 200  # no fetch metadata: not a browser that sends it
    # the link 'sealmem ui' opens comes from a local file, another site: still signs in
    fresh = _client(seeded, secrets)
    res = fresh.get(f"/?token={secrets.token}", headers={"sec-fetch-site": "cross-site"})
    assert res.status_code == 200
    assert "set-cookie" in res.headers


def test_viewing_never_mints_a_member_key(seeded: Seeded) -> None:
    """A member key gone missing while the viewer runs (a restore in progress, an
    unmounted disk) must not be replaced by a new identity because a page was viewed."""
    secrets = Secrets()
    c = _client(seeded, secrets)
    _session_cookie(c, secrets)
    identity = (seeded.home / "identity.json").read_text()
    keys = seeded.home / "keys"
    moved = {p.name: p.read_bytes() for p in keys.iterdir()}
    for p in keys.iterdir():
        p.unlink()
    for path in ("/", "/timeline", "/store", "/captured", "/team", f"/m/{seeded.new}"):
        assert c.get(path).status_code == 200, path
        assert not list(keys.iterdir()), path
    assert (seeded.home / "identity.json").read_text() == identity
    assert moved


def test_writes_are_form_posts_only(seeded: Seeded) -> None:
    """A ``text/plain`` form (the classic cross-site trick) or any other body is refused
    by name, whatever it holds, and stores nothing."""
    secrets = Secrets()
    c = _client(seeded, secrets)
    _session_cookie(c, secrets)
    origin = {"origin": BASE}
    body = f"csrf={secrets.csrf}&content=planted+as+text"
    for kind in ("text/plain", "application/json", "multipart/form-data; boundary=x", None):
        headers = {**origin, **({"content-type": kind} if kind else {})}
        res = c.post("/remember", content=body, headers=headers)
        assert res.status_code == 415, kind
        assert "form" in res.text
    with MemoryStore.open(store_path(seeded.home), author=local_author(seeded.home)) as store:
        assert not store.recall("planted text", all_projects=True)
    form = {**origin, "content-type": "application/x-www-form-urlencoded; charset=UTF-8"}
    assert c.post("/remember", content=body, headers=form).status_code == 303


def test_on_port_80_the_browser_omits_the_port_and_is_let_in(seeded: Seeded) -> None:
    """``sealmem ui --port 80``: browsers send ``Host: 127.0.0.1`` and
    ``Origin: http://127.0.0.1``, without the default port."""
    secrets = Secrets()
    app = create_app(seeded.home, secrets, allowed_hosts(80))
    c = TestClient(app, base_url="http://127.0.0.1", follow_redirects=False)
    res = c.get(f"/?token={secrets.token}")
    assert res.status_code == 200
    assert res.headers["set-cookie"].startswith("sealmem_ui_80=")
    assert c.get("/").status_code == 200
    form = {"csrf": secrets.csrf, "content": "written on port 80"}
    assert c.post("/remember", data=form, headers={"origin": "http://127.0.0.1"}).status_code == 303
    assert c.get("/", headers={"host": "127.0.0.1:8080"}).status_code == 421
