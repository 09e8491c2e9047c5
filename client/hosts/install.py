"""Plan and apply the edits that install sealmem into a host, or take it out again.

Planning is separate from writing: :func:`plan_install` and
:func:`.uninstall.plan_uninstall` read the host's files and return :class:`FileEdit`
values (before/after text); ``--print`` shows them as a diff and
:func:`apply_edits` writes them.  Writing refuses if the host changed the file
meanwhile, and replaces it atomically with its mode kept.  Installing into a host
that is not there (its config directory is missing) is refused unless asked for
(:class:`HostAbsentError`, ``--create``), so a host never gets a stray config.

**One backup per config file**, ``<file>.sealmem-backup``: the file as it was
the last time sealmem found it *without* anything of ours in it (an install onto
a clean file refreshes it).  An edit of a file that already holds sealmem's
entries (a second install with ``--auto-recall``, ``--repair``, ``uninstall``)
keeps that backup as it is, writing one only if there is none yet.  So the
backup is always the user's own config, never a copy of sealmem's changes, and
backups do not pile up.  An uninstall that gives back exactly the backed-up text
deletes the backup too (it holds nothing the file does not); one that cannot
(the host changed the file meanwhile) keeps it.

**Scopes.** ``user`` edits the host's file in the user's home; ``project`` edits
the vendor's project file under the project root (:func:`project_root`), which is
committed: its entry is :meth:`Host.project_entry` (no path, no home, no token) and
Claude Code hooks, which need the absolute path, stay user-scope only.

A config that cannot be parsed is never touched: :class:`ConfigRefusedError`
carries the block to add by hand.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ...protocol.errors import InputError
from ..fsutil import atomic_write
from . import claude_hooks, jsonedit, tomledit
from .configs import SERVER_NAME, Host, Platform, Scope, hook_command

__all__ = [
    "BACKUP_SUFFIX",
    "ConfigRefusedError",
    "FileEdit",
    "HostAbsentError",
    "HostStatus",
    "StaleInstallError",
    "apply_edits",
    "backup_path",
    "generic_snippet",
    "host_status",
    "plan_install",
    "project_root",
    "read_config",
    "render_diff",
    "require_host",
]

BACKUP_SUFFIX = ".sealmem-backup"
_NEW_JSON = "{\n}\n"


class ConfigRefusedError(InputError):
    """A host config could not be parsed or merged; nothing was changed."""


class StaleInstallError(InputError):
    """sealmem is in the host config already, but with another command or settings."""


class HostAbsentError(InputError):
    """The host's config directory does not exist and ``--create`` was not given."""


@dataclass(frozen=True)
class FileEdit:
    """One file's text before and after; ``after`` None deletes a file we created."""

    path: Path
    before: str | None
    after: str | None
    note: str
    pristine: bool = False  # ``before`` holds nothing sealmem added: worth a backup
    drop_backup: bool = False  # ``after`` is the backup's text again: the backup goes

    @property
    def changes(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class HostStatus:
    host: str
    title: str
    detected: bool
    config: Path
    state: Literal["installed", "stale", "absent", "unreadable"]
    hooks: list[str]
    scope: Scope = "user"


def read_config(path: Path) -> str | None:
    """The file's text, None when it does not exist; refused when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigRefusedError(f"cannot read {path}: {exc}; nothing was changed") from exc


def _manual_block(host: Host, entry: Mapping[str, Any]) -> str:
    """What to add to the host config by hand when we refuse to edit it."""
    if host.fmt == "toml":
        return tomledit.render_table((host.table, SERVER_NAME), entry)
    return json.dumps({host.table: {SERVER_NAME: entry}}, indent=2)


def generic_snippet(entry: Mapping[str, Any]) -> str:
    """The ``mcpServers`` JSON most MCP hosts accept."""
    return json.dumps({"mcpServers": {SERVER_NAME: dict(entry)}}, indent=2)


def _refuse(host: Host, entry: Mapping[str, Any], why: str) -> ConfigRefusedError:
    return ConfigRefusedError(
        f"{why}. Nothing was changed. Fix the file and retry, or add this by hand:\n"
        + _manual_block(host, entry)
    )


def _stale(host: Host, path: Path, current: object) -> StaleInstallError:
    command = current.get("command") if isinstance(current, dict) else current
    return StaleInstallError(
        f"{path} already has a '{SERVER_NAME}' server that runs {command!r}, not this "
        f"installation; run 'sealmem install {host.name} --repair' to update it"
    )


def _parse(host: Host, text: str, path: Path) -> dict[str, Any]:
    if host.fmt == "toml":
        return tomledit.parse_config(text, where=str(path))
    return jsonedit.parse_object(text, where=str(path), jsonc=host.jsonc)


def project_root(start: Path | None = None) -> Path:
    """The project a ``--scope project`` install is for: the nearest directory at or
    above ``start`` (default: the working directory) holding ``.git``, else ``start``."""
    here = (start or Path.cwd()).absolute()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return here


def _set_entry(host: Host, text: str, entry: dict[str, Any], new: bool, path: Path) -> str:
    if host.fmt == "toml":
        return tomledit.set_entry(text, host.table, SERVER_NAME, entry, where=str(path))
    if new:
        return jsonedit.add_member(text, [host.table], SERVER_NAME, entry)
    return jsonedit.replace_value(text, [host.table, SERVER_NAME], entry)


def _plan_server(host: Host, path: Path, entry: dict[str, Any], *, repair: bool) -> FileEdit:
    before = read_config(path)
    text = before if before is not None else "" if host.fmt == "toml" else _NEW_JSON
    try:
        doc = _parse(host, text, path)
        if host.fmt == "toml":
            servers = tomledit.servers_table(doc, host.table, str(path))
        else:
            servers = doc.get(host.table, {})
        problem = host.shape_problem(servers)
        if problem:
            raise _refuse(host, entry, f"{path}: {problem}")
        current = servers.get(SERVER_NAME)
        if current is not None and current != entry and not repair:
            raise _stale(host, path, current)
        after = text if current == entry else _set_entry(host, text, entry, current is None, path)
    except (tomledit.TomlConfigError, jsonedit.JsonConfigError) as exc:
        raise _refuse(host, entry, str(exc)) from exc
    return FileEdit(path, before, after, "MCP server", current is None)


def plan_install(
    host: Host,
    executable: Path,
    env: Mapping[str, str],
    *,
    repair: bool = False,
    hooks: Collection[str] = (),
    platform: Platform | None = None,
    scope: Scope = "user",
    project: Path | None = None,
) -> list[FileEdit]:
    """Edits that put the server entry (and, for Claude Code, the named hooks) in place.

    ``hooks`` names hooks from :data:`claude_hooks.EVENTS`; with ``repair``
    the sealmem hooks already present are brought up to date as well.
    ``platform`` picks how hook commands are quoted (default: this machine's).
    ``scope`` ``project`` writes the project file under ``project`` (see the module
    docstring); ``executable`` and ``env`` are then not written.
    """
    if scope == "project" and hooks:
        raise ConfigRefusedError(
            "hooks run the absolute path of this sealmem, which a committed project file "
            f"must not hold; install them for your user: sealmem install {host.name} --hooks"
        )
    path = host.path(scope, project)
    entry = host.project_entry() if scope == "project" else host.entry(executable, env)
    edits = [_plan_server(host, path, entry, repair=repair)]
    settings = host.settings_path() if scope == "user" else None
    if settings is not None and (hooks or repair):
        before = read_config(settings)
        names = set(hooks)
        commands: dict[str, str] = {}
        pristine = True
        try:
            if before is not None:
                pristine = not claude_hooks.our_hooks(before, where=str(settings))
            if repair and before is not None:
                names |= set(claude_hooks.our_hooks(before, where=str(settings)))
            ordered = [name for name in claude_hooks.EVENTS if name in names]
            commands = {
                name: hook_command(executable, name, env, platform=platform) for name in ordered
            }
            after = claude_hooks.add_hooks(before, commands, repair=repair, where=str(settings))
        except claude_hooks.StaleHookError as exc:
            raise StaleInstallError(
                f"{exc}; run 'sealmem install {host.name} --repair' to update it"
            ) from exc
        except jsonedit.JsonConfigError as exc:
            raise ConfigRefusedError(
                f"{exc}. Nothing was changed. Add the hooks by hand:\n"
                + claude_hooks.manual_hooks(commands)
            ) from exc
        edits.append(FileEdit(settings, before, after, "hooks", pristine))
    return [edit for edit in edits if edit.changes]


def require_host(host: Host, *, create: bool) -> None:
    """Refuse to write into a host that is not there, unless ``create``."""
    where = host.detect_dir()
    if create or where.is_dir() or host.config_path().exists():
        return
    raise HostAbsentError(
        f"{host.title} does not look installed for this user: {where} does not exist. "
        f"Start {host.title} once (it creates it) and retry, or run 'sealmem install "
        f"{host.name} --create' to write {host.config_path()} anyway; nothing was changed"
    )


def backup_path(path: Path) -> Path:
    """The one backup sealmem keeps of a host config file."""
    return path.with_name(path.name + BACKUP_SUFFIX)


def _write_atomic(path: Path, text: str, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text.encode("utf-8"), mode=mode)


def apply_edits(edits: list[FileEdit]) -> list[Path]:
    """Back up (see the module docstring) and write each edit; return the backups made."""
    backups: list[Path] = []
    for edit in edits:
        current = read_config(edit.path)
        if current != edit.before:
            raise InputError(
                f"{edit.path} changed while sealmem was editing it (the host may be running); "
                "nothing more was written; retry"
            )
        mode = 0o600
        if edit.before is not None:
            mode = edit.path.stat().st_mode & 0o777
            if edit.after is None:
                edit.path.unlink()
                continue
            backup = backup_path(edit.path)
            if edit.pristine or not backup.exists():
                _write_atomic(backup, edit.before, mode)
                backups.append(backup)
        if edit.after is not None:
            _write_atomic(edit.path, edit.after, mode)
        if edit.drop_backup:
            backup_path(edit.path).unlink(missing_ok=True)
    return backups


def render_diff(edits: list[FileEdit]) -> str:
    """A unified diff of every planned edit (what ``--print`` shows)."""
    out: list[str] = []
    for edit in edits:
        out.extend(
            difflib.unified_diff(
                (edit.before or "").splitlines(keepends=True),
                (edit.after or "").splitlines(keepends=True),
                fromfile=f"{edit.path} (now)",
                tofile=f"{edit.path} ({'deleted' if edit.after is None else edit.note})",
            )
        )
    text = "".join(out)
    return text if text.endswith("\n") or not text else text + "\n"


def host_status(
    host: Host, entry: Mapping[str, Any], scope: Scope = "user", project: Path | None = None
) -> HostStatus:
    """Is the host present, and is sealmem installed in it with this entry?  For
    ``project`` scope the entry compared is always :meth:`Host.project_entry`."""
    path = host.path(scope, project)
    if scope == "project":
        entry = host.project_entry()
    state: Literal["installed", "stale", "absent", "unreadable"] = "absent"
    hooks: list[str] = []
    try:
        text = read_config(path)
        if text is not None:
            current = (_parse(host, text, path).get(host.table) or {}).get(SERVER_NAME)
            if current is not None:
                state = "installed" if current == entry else "stale"
        settings = host.settings_path() if scope == "user" else None
        settings_text = read_config(settings) if settings is not None else None
        if settings_text is not None:
            hooks = sorted(claude_hooks.our_hooks(settings_text, where=str(settings)))
    except (InputError, AttributeError):
        state = "unreadable"
    detected = path.exists() or (scope == "user" and host.detect_dir().is_dir())
    return HostStatus(host.name, host.title, detected, path, state, hooks, scope)
