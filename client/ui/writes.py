"""The viewer's writes: a form in, one ``MemoryStore`` call, the page that shows the result.

Each write takes the open store and the checked form (the :class:`~.guard.Guard`
read it) and returns the path the browser is sent to (303).  A bad value is an
``InputError``: the viewer shows it as a page, nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable

from ...protocol.errors import InputError
from ..hosts import review
from ..recall.api import MemoryStore

__all__ = ["WRITES", "Write"]

Write = Callable[[MemoryStore, dict[str, str]], str]


def _importance(form: dict[str, str]) -> float:
    text = form.get("importance", "").strip() or "0.5"
    try:
        return float(text)
    except ValueError:
        raise InputError(f"importance {text!r} is not a number between 0 and 1") from None


def _remember(store: MemoryStore, form: dict[str, str]) -> str:
    words = [w.strip() for w in form.get("keywords", "").split(",") if w.strip()]
    project = form.get("project", "").strip()
    if not project:  # no silent "default": a project nobody registers never syncs
        raise InputError(
            "say which project the memory is for (the form starts with the project the "
            "viewer was started in); nothing was stored"
        )
    result = store.remember(
        form.get("content", ""),
        kind=form.get("kind") or None,
        keywords=words,
        importance=_importance(form),
        project=project,
        private=form.get("private") == "on",
        origin="ui",
        source="person",
        new_kind=form.get("new_kind") == "on",
    )
    return f"/m/{result.memory.id}"


def _forget(store: MemoryStore, form: dict[str, str]) -> str:
    reason = form.get("reason", "").strip()
    if not reason:
        raise InputError("say why the memory is forgotten (the reason is kept)")
    return f"/m/{store.forget(form.get('id', ''), reason=reason).id}"


def _set_importance(store: MemoryStore, form: dict[str, str]) -> str:
    return f"/m/{store.set_importance(form.get('id', ''), _importance(form)).id}"


def _correct(store: MemoryStore, form: dict[str, str]) -> str:
    result = store.correct(form.get("id", ""), form.get("content", ""), origin="ui")
    return f"/m/{result.memory.id}"


def _keep(store: MemoryStore, form: dict[str, str]) -> str:
    """``sealmem review keep``: this reader confirms a stale memory (its clock starts again)."""
    store.keep(form.get("id", ""))
    return "/review"


def _accept(store: MemoryStore, form: dict[str, str]) -> str:
    rest, asked = review.take_forgets(store, [form.get("id", "")])
    review.settle_forgets(store, asked, accepted=True)  # an agent's forget: done
    rest, theirs = review.split(store, rest)
    review.judge(store, theirs, "accepted")  # a teammate's version: into the contexts
    if rest:
        review.accept(store, review.choose(store, rest, "accept"))
    return "/captured"


def _discard(store: MemoryStore, form: dict[str, str]) -> str:
    rest, asked = review.take_forgets(store, [form.get("id", "")])
    review.settle_forgets(store, asked, accepted=False)  # an agent's forget: memory kept
    rest, theirs = review.split(store, rest)
    review.judge(store, theirs, "dismissed")  # a teammate's version: kept out
    if rest:
        review.discard(store, review.choose(store, rest, "discard"))
    return "/captured"


WRITES: dict[str, Write] = {
    "/remember": _remember,
    "/forget": _forget,
    "/importance": _set_importance,
    "/correct": _correct,
    "/review/keep": _keep,
    "/captured/accept": _accept,
    "/captured/discard": _discard,
}
"""Each write's path (POST)."""
