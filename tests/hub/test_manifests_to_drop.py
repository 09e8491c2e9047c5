"""The one retention rule both storage backends follow when a manifest is stored
(``hub.storage.values.manifests_to_drop``); the contract tests run it through SQLite and
PostgreSQL with real deltas (``tests/hub/contract/test_delta_bases.py``)."""

from __future__ import annotations

from sealmem.hub.storage.values import manifests_to_drop

FULL = b'{"body":{"chunks":[],"format":"sealmem/manifest/v1"},"sig":"x"}'
NOT_A_MANIFEST = b'{"body":{"base":{"seq":1}'  # begins as a delta, does not parse


def test_the_older_manifests_go_unless_the_new_one_is_listed_against_one() -> None:
    older = [(4, 100), (3, 90), (2, 80)]
    assert manifests_to_drop([FULL, FULL], older, None) == older
    assert manifests_to_drop([FULL, FULL], older, (3, "hash of 3")) == [(4, 100), (2, 80)]


def test_bytes_that_do_not_parse_keep_nothing_alive() -> None:
    older = [(2, 80), (1, 70)]
    assert manifests_to_drop([NOT_A_MANIFEST], older, None) == older
    assert manifests_to_drop([], [], (1, "h")) == []
