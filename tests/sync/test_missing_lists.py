"""What a hub says it lost is read as data, within its bound: a ``missing-chunk`` refusal's
``missing`` list and a seqs answer's ``lost`` list of any shape never crash the client
and never name more than ``MAX_MISSING_LISTED`` well-formed ids."""

from __future__ import annotations

import httpx
import pytest

from sealmem.client.sync.hub_answers import chunk_ids, error
from sealmem.protocol import hubapi

GOOD = "ab" * 32


@pytest.mark.parametrize(
    "value",
    [None, 7, "ab" * 32, {"a": GOOD}, [1, None, {"x": 1}], ["../../x", GOOD.upper(), GOOD + "0"]],
)
def test_a_list_of_the_wrong_shape_names_nothing(value: object) -> None:
    assert chunk_ids(value) == frozenset()


def test_the_list_is_bounded_and_keeps_the_well_formed_ids() -> None:
    many = [f"{i:064x}" for i in range(hubapi.MAX_MISSING_LISTED + 10)]
    assert len(chunk_ids(many)) == hubapi.MAX_MISSING_LISTED
    assert chunk_ids([GOOD, "nope", GOOD]) == {GOOD}


def test_a_missing_chunk_refusal_carries_its_list() -> None:
    body = {"error": "missing-chunk", "detail": "gone", hubapi.FIELD_MISSING: [GOOD, 3]}
    refused = error(httpx.Response(422, json=body), "http://hub", "publish manifest seq 2")
    assert (refused.code, refused.listed) == (hubapi.MISSING_CHUNK, frozenset({GOOD}))
    plain = error(httpx.Response(422, json={"error": "malformed"}), "http://hub", "publish")
    assert plain.listed == frozenset()
