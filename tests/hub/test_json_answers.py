"""The hub's JSON answers (orjson) are byte for byte Starlette's ``JSONResponse``."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from starlette.responses import JSONResponse

from sealmem.hub.http.messages import Json

#: what the hub answers with: text, int64 numbers, booleans, null, lists, objects
DOCS = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


@given(DOCS, st.sampled_from([200, 201, 401, 409]))
def test_json_answers_are_starlettes_bytes(doc: object, status: int) -> None:
    ours, theirs = Json(doc, status), JSONResponse(doc, status)
    assert ours.body == theirs.body
    assert ours.status_code == theirs.status_code
    assert ours.headers == theirs.headers


def test_a_hub_document_with_non_ascii_text() -> None:
    doc = {"error": "bad-request", "detail": "project 'café ☕' must match [a-z]+", "n": 2**62}
    assert Json(doc).body == JSONResponse(doc).body
