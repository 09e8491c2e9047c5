"""``sealmem demo``: a team of three syncing through a blind relay hub, on this machine.

Everything lives in one temporary directory: an embedded hub on 127.0.0.1 on a
free port (uvicorn in a background thread, its own data directory) and three
members, each with its own ``SEALMEM_HOME``: admin, alice and bob.  The admin
creates the team on the hub; alice and bob join with the invite and are
approved; alice remembers a decision and syncs; bob syncs and recalls it with
its provenance (author alice, signature verified, via the hub), then corrects
it; alice syncs and sees the correction rank first.  Last, the demo searches
every file under the hub's data directory for the memories' words, keywords,
ids and kind, and finds none, while the team id and member names it also
searches for (what a relay does see) are there.

The demo runs the real pieces (hub app, HubTransport, sync engine, stores) and
checks its own story: when something does not behave as narrated it raises
:class:`DemoError` instead of printing a happy ending.  The user's own
``SEALMEM_HOME`` is never touched; the temporary directory is removed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ...protocol.errors import SealmemError
from ..clock import now_ms
from ..store.ids import short_id
from .memory import open_store
from .output import say
from .team import open_team

if TYPE_CHECKING:
    from .. import Hit
    from ..sync.session import Team

__all__ = ["DemoError", "demo", "register", "run_demo", "search_files"]

PROJECT = "orders-service"
QUESTION = "which database stores the orders"
DECISION = "Orders live in PostgreSQL 16 on the Frankfurt cluster; SQLite only in unit tests."
DECISION_KEYWORDS = ("database", "postgres")
CORRECTION = "Orders moved to PostgreSQL 17 in March; the Frankfurt 16 cluster is retired."
CORRECTION_KEYWORDS = ("database", "postgres", "migration")
SECRET_WORDS = ("PostgreSQL", "Frankfurt", "cluster", "retired")
"""Words of the memories a relay must never see (none occurs in hub metadata)."""


class DemoError(SealmemError):
    """The team did not behave the way the demo narrates: a bug to report."""


@dataclass(frozen=True)
class Actor:
    """One member of the demo team: a name and its own sealmem home."""

    name: str
    home: Path

    @contextmanager
    def active(self) -> Iterator[None]:
        """Point ``SEALMEM_HOME`` at this member's home for one step."""
        previous = os.environ.get("SEALMEM_HOME")
        os.environ["SEALMEM_HOME"] = str(self.home)
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop("SEALMEM_HOME", None)
            else:
                os.environ["SEALMEM_HOME"] = previous

    @contextmanager
    def team(self) -> Iterator[Team]:
        """This member's team, with its store open (like one CLI command)."""
        with self.active(), open_team() as team:
            yield team


# -- team setup over the hub ----------------------------------------------------------


def create_team(admin: Actor, hub_url: str, operator_token: str, now: int) -> str:
    """Register a new team on the hub (what 'sealmem team create --hub' does); its invite."""
    from .. import SHARED_PROJECT
    from ..identity import load_member_key
    from ..team import admin as admin_ops

    with admin.active():
        key = load_member_key(admin.home)
        with open_store() as store:
            team = admin_ops.create_team(
                admin.home, store, key, name="demo", hub=hub_url, operator_token=operator_token,
                projects=[PROJECT, SHARED_PROJECT], admin_name=admin.name, now=now,
            )  # fmt: skip
            try:
                return admin_ops.invite(team, now)
            finally:
                team.transport.close()


def join_team(member: Actor, invite_text: str, now: int) -> str:
    """What 'sealmem team join INVITE' does: pin the root key, post a join request."""
    from ..identity import load_member_key
    from ..team.invite import read_invite
    from ..team.join import join_team as join

    invite = read_invite(invite_text, now=now)
    with member.active():
        key = load_member_key(member.home)
        join(member.home, invite, key, name=member.name, now=now)
    return key.public().fingerprint()


# -- the story ---------------------------------------------------------------------------


def _sync(actor: Actor) -> None:
    from ..sync.engine import sync

    with actor.team() as team:
        summary = sync(team)
    say(f"   {actor.name}$ sealmem sync  ->  {summary.line()}")
    if summary.refused:
        raise DemoError(f"{actor.name}'s sync refused objects: {summary.refused}")


def _recall(actor: Actor, query: str) -> list[Hit]:
    with actor.team() as team:
        hits = team.store.recall(query, k=3, project=PROJECT)
    for rank, hit in enumerate(hits, start=1):
        flag = ("  [superseded]" if hit.superseded_by else "") + (
            "  [related]" if hit.related else ""
        )
        say(f"   {rank}. {hit.memory.record.kind}{flag}: {hit.memory.record.content}")
        say(f"      {_provenance(hit)}")
    return hits


def _provenance(hit: Hit) -> str:
    prov = hit.memory.provenance
    if prov.transport == "local":
        return "written here"
    check = "signature verified" if prov.verified else "NOT verified"
    who = prov.signer_name or prov.signer or "?"
    return f"author {who}, {check}, via {prov.transport}, snapshot seq {prov.snapshot_seq}"


def _remember(actor: Actor, content: str, keywords: Sequence[str], supersedes: str = "") -> str:
    with actor.team() as team:
        result = team.store.remember(
            content, kind="decision", keywords=keywords, importance=0.8, project=PROJECT,
            supersedes=[supersedes] if supersedes else [], origin="demo",
        )  # fmt: skip
    memory_id = result.memory.record.id
    replaces = f" (supersedes {short_id(supersedes)})" if supersedes else ""
    say(f"   {actor.name}: decision {short_id(memory_id)}{replaces}  {content}")
    return memory_id


def _from(hits: Sequence[Hit], memory_id: str) -> Hit:
    for hit in hits:
        if hit.memory.record.id == memory_id:
            return hit
    raise DemoError(f"recall did not return memory {memory_id}")


def _check_arrival(hit: Hit, author: Actor) -> None:
    from ..identity import member_kid

    prov = hit.memory.provenance
    if hit.memory.record.author != member_kid(author.home) or prov.signer_name != author.name:
        raise DemoError(f"the memory is not attributed to {author.name}: {prov}")
    if not prov.verified or prov.transport != "hub":
        raise DemoError(f"the memory did not arrive verified through the hub: {prov}")


def search_files(data_dir: Path, terms: Sequence[str]) -> dict[str, int]:
    """How many files under ``data_dir`` contain each term (bytes, case-insensitive)."""
    contents = [p.read_bytes().lower() for p in sorted(data_dir.rglob("*")) if p.is_file()]
    return {t: sum(t.lower().encode() in blob for blob in contents) for t in terms}


def _story(root: Path, hub_url: str, hub_data: Path, token: str) -> None:
    from ..team.approval import approve

    admin, alice, bob = (Actor(n, root / n) for n in ("admin", "alice", "bob"))
    say(f"1. A hub runs on {hub_url}; its data directory is {hub_data}.")
    say("   Members sign every request with their own key; the hub keeps no shared secret.")

    say("\n2. admin creates a team on the hub; alice and bob join with its invite:")
    invite = create_team(admin, hub_url, token, now_ms())
    with admin.team() as team:
        say(f"   team {team.config.team}, root key fingerprint {team.config.root_fingerprint}")
    for member in (alice, bob):
        fingerprint = join_team(member, invite, now_ms())
        say(f"   {member.name} posts a join request; fingerprint {fingerprint}")

    say("\n3. admin compares the fingerprints (out of band) and approves both:")
    with admin.team() as team:
        names = [alice.name, bob.name]
        done = approve(team, names, projects=None, read=True, write=True, now=now_ms())
        version = team.roster().version
    for item in done:
        say(f"   approved {item.name} ({item.kid[:8]}) fingerprint {item.fingerprint}")
    if sorted(a.name for a in done) != ["alice", "bob"]:
        raise DemoError(f"the admin approved {[a.name for a in done]}, not alice and bob")
    say(f"   the roster is now v{version}; every project key is wrapped to all three")

    say(f'\n4. alice\'s agent, working on "{PROJECT}", records a decision and syncs:')
    decision_id = _remember(alice, DECISION, DECISION_KEYWORDS)
    _sync(alice)

    say(f'\n5. bob syncs, then his agent asks "{QUESTION}?"')
    _sync(bob)
    _check_arrival(_from(_recall(bob, QUESTION), decision_id), alice)
    say("   -> bob recalled alice's memory: author alice, signature verified, via hub.")

    say("\n6. bob knows better: the orders moved. He records a correction that")
    say("   supersedes alice's decision (hers is kept, not deleted) and syncs:")
    correction_id = _remember(bob, CORRECTION, CORRECTION_KEYWORDS, supersedes=decision_id)
    _sync(bob)
    _sync(alice)
    say("   alice asks the same question:")
    hits = _recall(alice, QUESTION)
    _check_arrival(_from(hits, correction_id), bob)
    ranked = [h.memory.record.id for h in hits]
    if ranked.index(correction_id) > ranked.index(decision_id):
        raise DemoError("alice's superseded decision still ranks above bob's correction")
    say("   -> the correction now ranks above the old decision, which is demoted, not")
    say("      hidden, and carries a pointer to its replacement.")

    say(f"\n7. What does the hub hold? Every file under {hub_data}, searched for the")
    say("   memories' words, keywords, ids and kind:")
    with bob.team() as team:
        visible = {"the team id": team.config.team, "alice's name": "alice", "bob's id": team.me}
    secret = [DECISION, CORRECTION, *SECRET_WORDS, *CORRECTION_KEYWORDS]
    secret += [decision_id, correction_id, "decision"]
    found = search_files(hub_data, [*secret, *visible.values()])
    files = [p for p in hub_data.rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in files)
    say(f"   {len(files)} files, {size:,} bytes; {len(secret)} searches:")
    for term in secret:
        shown = term if len(term) <= 40 else term[:37] + "..."
        say(f"     {found[term]} files contain {shown!r}")
    leaks = [t for t in secret if found[t]]
    if leaks:
        raise DemoError(f"the hub's data directory holds plaintext: {leaks}")
    missing = [what for what, term in visible.items() if not found[term]]
    if missing:
        raise DemoError(f"the search is broken: it did not find {', '.join(missing)}")
    say("   -> no plaintext in the hub's data: no content, keyword, memory id or kind.")
    say(f"   What a relay does see, found the same way: {', '.join(visible)}, plus")
    say("   sizes and timing (deploy/README.md lists it all).")


def run_demo(*, keep: bool = False) -> None:
    """Run the narrated team demo in a temporary directory (removed unless ``keep``)."""
    import secrets
    import shutil
    import tempfile

    from ...hub.config import HubConfig
    from ...hub.http.server import BackgroundHub, free_port

    root = Path(tempfile.mkdtemp(prefix="sealmem-demo-"))
    token = secrets.token_urlsafe(24)
    hub_data = root / "hub"
    say(f"sealmem demo: a team syncing through a blind relay hub, in a temporary home {root}\n")
    try:
        config = HubConfig(data_dir=hub_data, port=free_port(), operator_token=token)
        with BackgroundHub(config) as hub:
            _story(root, hub.url, hub_data, token)
        say("\nThe hub is stopped.")
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    say("Done. " + (f"Everything is kept in {root}." if keep else "Cleaned up."))
    say("Try it for real: 'Teams' and 'The hub' in the README; deploy/README.md to run a hub.")


def demo(
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the temporary directory and print its path.")
    ] = False,
) -> None:
    """A narrated team demo over an embedded hub on 127.0.0.1; leaves nothing behind."""
    run_demo(keep=keep)


def register(app: typer.Typer) -> None:
    app.command()(demo)
