"""Memory.authorship: "mine" only for this machine's versions, else the verified signer."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sealmem.client import Memory, Provenance
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record

ME, ALICE, MALLORY = "k" * 26, "a" * 26, "m" * 26
NAMES = {ME: "bob", ALICE: "alice", MALLORY: "mallory"}
MEMBERS = st.sampled_from([ME, ALICE, MALLORY, "z" * 26])


def memory(author: str, editor: str, provenance: Provenance) -> Memory:
    record = Record(
        id="01900000-0000-7000-8000-000000000000", project="p", kind="warning",
        content="drop the idempotency check", keywords=(), importance=0.5, author=author,
        editor=editor, created_at=1, hlc=Hlc(1, 0),
    )  # fmt: skip
    return Memory(record=record, seen_count=1, updated_at=1, provenance=provenance)


@given(
    author=MEMBERS,
    signer=st.one_of(st.none(), MEMBERS),
    transport=st.sampled_from(["folder", "hub", "import"]),
    verified=st.booleans(),
)
def test_an_arrived_version_is_never_mine(
    author: str, signer: str | None, transport: str, verified: bool
) -> None:
    prov = Provenance(transport=transport, signer=signer, verified=verified)
    got = memory(author, signer or author, prov)
    who = got.authorship(NAMES, ME)
    assert not who.mine
    assert not got.written_here
    assert who.writer_name != "you"
    if verified and signer is not None:
        assert who.writer == got.verified_writer == signer
        assert who.tags()[0] == f"from {NAMES.get(signer, signer[:8])}"
    else:
        assert who.writer is None
        assert got.verified_writer is None
        assert who.tags()[0] == f"unverified, via {transport}"
    assert who.claim_differs == (author != who.writer)
    assert ("claimed author: you" in who.tags()) == (author == ME and who.claim_differs)


@given(author=MEMBERS)
def test_a_local_version_is_mine_whoever_it_claims(author: str) -> None:
    who = memory(author, ME, Provenance.local()).authorship(NAMES, ME)
    assert (who.mine, who.writer, who.writer_name, who.verified) == (True, ME, "you", True)
    expected = [] if author == ME else [f"claimed author: {NAMES.get(author, author[:8])}"]
    assert who.tags() == expected


def test_names_that_could_mislead_carry_the_short_id() -> None:
    prov = Provenance(transport="folder", signer=MALLORY, signer_name="alice", verified=True)
    twin = {ME: "bob", ALICE: "alice", MALLORY: "alice"}
    assert memory(ALICE, MALLORY, prov).authorship(twin, ME).tags() == [
        "from alice (mmmmmmmm)",
        "claimed author: alice (aaaaaaaa)",
    ]
    calls_itself_you = {ME: "bob", MALLORY: "You"}
    assert memory(MALLORY, MALLORY, prov).authorship(calls_itself_you, ME).tags() == [
        "from You (mmmmmmmm)"
    ]
    # without a roster, the name recorded at pull time, else the short id
    assert memory(MALLORY, MALLORY, prov).authorship({}, ME).writer_name == "alice"
    bare = Provenance(transport="folder", signer=MALLORY, verified=True)
    assert memory(ALICE, MALLORY, bare).authorship().tags() == [
        "from mmmmmmmm",
        "claimed author: aaaaaaaa",
    ]


def test_to_dict_says_who_wrote_it_and_what_is_claimed() -> None:
    prov = Provenance(transport="hub", signer=MALLORY, verified=True)
    assert memory(ME, MALLORY, prov).authorship(NAMES, ME).to_dict() == {
        "written_by": "mallory",
        "written_here": False,
        "writer": MALLORY,
        "verified": True,
        "transport": "hub",
        "claimed_author": ME,
        "claimed_author_name": "you",
        "claim_differs": True,
        "source": "person",
    }
