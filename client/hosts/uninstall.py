"""Plan the edits that take sealmem out of a host's config again, exactly.

The counterpart of :func:`.install.plan_install`, with the same :class:`FileEdit`
values, applied by :func:`.install.apply_edits`; the backup rules are in the
docstring of :mod:`.install`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import claude_hooks, jsonedit, tomledit
from .configs import SERVER_NAME, Host, Scope
from .install import FileEdit, backup_path, read_config

__all__ = ["plan_uninstall"]


def _uninstall_json(
    path: Path,
    text: str,
    remove: Callable[[str, bool], str],
    has_ours: Callable[[Any], bool],
    had_container: Callable[[Any], bool] | None = None,
) -> str | None:
    """Remove ours, pruning emptied containers unless our backup (holding nothing of ours)
    had them; a file left empty with no backup is one we created: it goes."""
    pruned, kept = remove(text, True), remove(text, False)
    try:
        backup = jsonedit.loads(backup_path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None if jsonedit.loads(pruned) == {} else pruned
    except (OSError, ValueError):
        return pruned
    if has_ours(backup):
        return pruned
    if had_container is not None:
        return kept if had_container(backup) else pruned
    return kept if jsonedit.loads(kept) == backup != jsonedit.loads(pruned) else pruned


def _table(doc: Any, key: str) -> dict[str, Any] | None:
    table = doc.get(key) if isinstance(doc, dict) else None
    return table if isinstance(table, dict) else None


def _with_backup_check(edit: FileEdit) -> FileEdit:
    """``edit`` marked to delete the backup when it restores the backup's exact text."""
    try:
        backup = backup_path(edit.path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return edit
    if edit.after != backup:
        return edit
    return FileEdit(edit.path, edit.before, edit.after, edit.note, edit.pristine, True)


def plan_uninstall(
    host: Host, scope: Scope = "user", project: Path | None = None
) -> list[FileEdit]:
    """Edits that remove exactly what :func:`plan_install` added, and nothing else."""
    path = host.path(scope, project)
    before = read_config(path)
    edits: list[FileEdit] = []
    if before is not None and host.fmt == "toml":
        after = tomledit.remove_entry(before, host.table, SERVER_NAME, where=str(path))
        if after is not None:
            gone = after == "" and not backup_path(path).exists()  # we created it
            edits.append(FileEdit(path, before, None if gone else after, "MCP server"))
    elif before is not None:
        doc = jsonedit.parse_object(before, where=str(path), jsonc=host.jsonc)
        key = [host.table, SERVER_NAME]
        if SERVER_NAME in (_table(doc, key[0]) or {}):
            after_text = _uninstall_json(
                path,
                before,
                lambda text, prune: jsonedit.remove(text, key, prune=prune),
                lambda doc: SERVER_NAME in (_table(doc, key[0]) or {}),
                lambda doc: _table(doc, key[0]) is not None,
            )
            edits.append(FileEdit(path, before, after_text, "MCP server"))
    settings = host.settings_path() if scope == "user" else None
    if settings is not None:
        text = read_config(settings)
        where = str(settings)
        if text is not None and claude_hooks.our_hooks(text, where=where):
            after_text = _uninstall_json(
                settings,
                text,
                lambda text, prune: claude_hooks.remove_hooks(text, prune=prune, where=where),
                lambda doc: bool(claude_hooks.our_hooks(json.dumps(doc), where=where)),
            )
            edits.append(FileEdit(settings, text, after_text, "hooks"))
    return [_with_backup_check(edit) for edit in edits if edit.changes]
