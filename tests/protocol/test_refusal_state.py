"""A refused object leaves the trusted state exactly as it was (SPEC "Trusted state").

Every refused roster, keyring and manifest vector is replayed against the state its setup
built; the state's canonical form is the same after the refusal as before it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sealmem.crypto import SUITE
from sealmem.protocol import canonical
from sealmem.protocol.encoding import b64d
from sealmem.protocol.errors import Rejected
from sealmem.protocol.state import TrustedState
from tests.protocol.test_vectors import ACCEPT, accept_object
from tests.protocol.vectorgen.generate import VECTORS


def _refused_chain_cases() -> list[Path]:
    out = []
    for path in sorted(VECTORS.glob("*.json")):
        case = json.loads(path.read_text("utf-8"))
        obj = case["inputs"]["object"]
        # a keyring refused at the reader's unwrap was accepted by the verifier first
        team_only = all(step["kind"] in ACCEPT for step in case["inputs"]["setup"])
        if (
            obj["kind"] in ACCEPT
            and "reject" in case["expected"]
            and "reader" not in obj
            and team_only
        ):
            out.append(path)
    return out


CASES = _refused_chain_cases()


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_a_refused_object_leaves_the_state_as_it_was(path: Path) -> None:
    case = json.loads(path.read_text("utf-8"))
    inputs = case["inputs"]
    state = TrustedState.pin(SUITE, inputs["team"], b64d(inputs["root_public"]))
    for step in inputs["setup"]:
        state = accept_object(state, step)
    before = canonical.encode(state.to_wire())
    with pytest.raises(Rejected):
        accept_object(state, inputs["object"])
    assert canonical.encode(state.to_wire()) == before
