"""The ``keywords_json`` column a row holds is ``json.dumps(keywords, ensure_ascii=False)``
whichever way it is built (a join when no keyword holds a character JSON escapes)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from sealmem.client.store.rows import _keywords_json

ODD = st.sampled_from(['"', "\\", "\n", "\x00", "\x1f", "\x7f", "\u2028", "é", "\ud800", " "])
WORDS = st.lists(st.text(st.one_of(ODD, st.characters()), max_size=8), max_size=6)


@settings(max_examples=500)
@given(WORDS)
def test_keywords_json_is_the_json_encoding(words: list[str]) -> None:
    assert _keywords_json(tuple(words), " ".join(words)) == json.dumps(words, ensure_ascii=False)
