"""``sealmem demo``: local memory end to end, on a throwaway ``SEALMEM_HOME``.

The demo runs the real store: it remembers a decision, a warning and a lesson,
recalls, supersedes the decision and recalls again (the correction ranks
first, the old decision is demoted with its replacement attached), shows the
startup context and exports.  It checks its own story and fails loudly if the
store does not behave as narrated.  Nothing outside the temporary home changes.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sealmem.client.cli import output
from sealmem.protocol.errors import SealmemError

if TYPE_CHECKING:
    from sealmem.client import Hit, MemoryStore

__all__ = ["DemoError", "demo", "register", "run_demo"]

PROJECT = "orders-service"
QUESTION = "which database stores the orders"


class DemoError(SealmemError):
    """The store did not behave the way the demo narrates: a bug to report."""


@contextmanager
def _temporary_home(keep: bool) -> Iterator[Path]:
    previous = os.environ.get("SEALMEM_HOME")
    tmp = tempfile.mkdtemp(prefix="sealmem-demo-")
    os.environ["SEALMEM_HOME"] = tmp
    try:
        yield Path(tmp)
    finally:
        if previous is None:
            os.environ.pop("SEALMEM_HOME", None)
        else:
            os.environ["SEALMEM_HOME"] = previous
        if not keep:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)


def _say(text: str = "") -> None:
    typer.echo(text)


def _show_hits(hits: Sequence[Hit]) -> None:
    for rank, hit in enumerate(hits, start=1):
        rec = hit.memory.record
        flag = "  [superseded]" if hit.superseded_by else ""
        _say(f"   {rank}. ({hit.score:.3f}) {rec.kind}{flag}: {rec.content}")
        _say(f"      {output.why_line(hit.why)}")
        for newer in hit.superseded_by:
            _say(f"      replaced by {output.short_id(newer.record.id)}: {newer.record.content}")


def _story(store: MemoryStore) -> None:
    _say(f'1. An agent working on project "{PROJECT}" records what it learned:')
    seeds = [
        ("decision", "Orders are stored in PostgreSQL 16; SQLite is only used in unit tests.",
         ["database", "postgres"], 0.8),
        ("warning", "Never run the orders migrations against production without a fresh "
         "snapshot: a failed migration lost a day of orders in 2024.", ["migrations"], 0.9),
        ("lesson", "The flaky payments tests came from a shared temp directory; give every "
         "test its own tmp_path.", ["tests", "flaky"], 0.6),
    ]  # fmt: skip
    ids: dict[str, str] = {}
    for kind, content, keywords, importance in seeds:
        result = store.remember(
            content, kind=kind, keywords=keywords, importance=importance, project=PROJECT,
            origin="demo",
        )  # fmt: skip
        ids[kind] = result.memory.record.id
        _say(f"   {kind:<9} {output.short_id(result.memory.record.id)}  {content}")

    _say(f'\n2. A later session asks: "{QUESTION}?"')
    before = store.recall(QUESTION, k=4, project=PROJECT)
    _show_hits(before)
    if ids["decision"] not in {h.memory.record.id for h in before}:
        raise DemoError("recall did not find the database decision")

    _say("\n3. The team moves to PostgreSQL 17. The agent records a correction that")
    _say("   supersedes the old decision (the old one is kept, not deleted):")
    fix = store.remember(
        "Orders are stored in PostgreSQL 17 since March; PostgreSQL 16 is retired.",
        kind="decision",
        keywords=["database", "postgres"],
        importance=0.8,
        project=PROJECT,
        supersedes=[ids["decision"]],
        origin="demo",
    )
    new_id = fix.memory.record.id
    _say(f"   decision  {output.short_id(new_id)}  supersedes {output.short_id(ids['decision'])}")

    _say("\n4. The same question now:")
    after = store.recall(QUESTION, k=4, project=PROJECT)
    _show_hits(after)
    ranked = [h.memory.record.id for h in after]
    if new_id not in ranked or ids["decision"] not in ranked:
        raise DemoError("recall lost the correction or the old decision after superseding")
    if ranked.index(new_id) > ranked.index(ids["decision"]):
        raise DemoError("the superseded decision still ranks above its correction")
    old = after[ranked.index(ids["decision"])]
    if new_id not in {m.record.id for m in old.superseded_by}:
        raise DemoError("the superseded decision does not point to its replacement")
    _say("   -> the correction now ranks above the old decision, which is demoted, not")
    _say("      hidden, and carries a pointer to its replacement.")

    _say("\n5. What an agent reads at the start of a session (warnings and decisions first):")
    context = store.startup_context(project=PROJECT, budget_tokens=300)
    if not context:
        raise DemoError("the startup context is empty although memories exist")
    for line in context.splitlines():
        _say(f"   | {line}")

    document = store.export()
    size = len(json.dumps(document, ensure_ascii=False).encode("utf-8"))
    _say(f"\n6. Export: the whole store as one {size}-byte JSON document")
    _say("   (sealmem export -o FILE, then sealmem import FILE on another machine).")


def run_demo(*, keep: bool = False) -> None:
    """Run the narrated demo on a temporary home (removed afterwards unless ``keep``)."""
    from sealmem.client import MemoryStore

    with _temporary_home(keep) as home:
        _say(f"sealmem demo: local memory, in a temporary home {home}\n")
        with MemoryStore.open() as store:
            _story(store)
        _say("\nDone. " + (f"The demo home is kept at {home}." if keep else "Cleaned up."))
    _say("Try it for real: sealmem init, sealmem remember 'TEXT', sealmem recall 'WORDS'.")


def demo(
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep the temporary home and print its path.")
    ] = False,
) -> None:
    """A narrated local demo on a temporary SEALMEM_HOME; leaves nothing behind."""
    run_demo(keep=keep)


def register(app: typer.Typer) -> None:
    """Add ``demo`` to ``app``."""
    app.command()(demo)
