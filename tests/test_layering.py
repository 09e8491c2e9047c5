"""The import contracts of pyproject.toml fail when a forbidden import is planted.

The four packages and pyproject.toml are copied to a temporary tree twice;
import-linter (``lint-imports``, the command ``.ci/check`` runs) checks one copy
as it is and the other with the forbidden imports below planted, and each case
reads the verdict the tool prints for the contract that forbids its import.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("client", "hub", "crypto", "protocol")
LINT = Path(sys.executable).with_name("lint-imports")

CLIENT_LAYERS = "the client's layers: each imports only the layers below it"
HUB_ROOMS = "hub storage never imports the hub's HTTP runtime"
PURE_PROTOCOL = "protocol is pure: it imports neither crypto, client nor hub"

# (contract, {file: text} written into the copy, the import the tool must name)
PLANTS = {
    "store imports cli": (
        CLIENT_LAYERS,
        {"client/store/planted.py": "from ..cli import output\n"},
        "sealmem.client.store.planted -> sealmem.client.cli.output",
    ),
    "a sibling imports its sibling": (
        CLIENT_LAYERS,
        {"client/mcp/planted.py": "from ..hosts import hooks\n"},
        "sealmem.client.mcp.planted -> sealmem.client.hosts.hooks",
    ),
    "hub storage imports hub http": (
        HUB_ROOMS,
        {
            "hub/http/__init__.py": "",
            "hub/storage/__init__.py": "",
            "hub/storage/planted.py": "from .. import http\n",
        },
        "sealmem.hub.storage.planted -> sealmem.hub.http",
    ),
    "protocol imports crypto": (
        PURE_PROTOCOL,
        {"protocol/planted.py": "from ..crypto import SUITE\n"},
        "sealmem.protocol.planted -> sealmem.crypto",
    ),
    "a new client package takes no layer": (
        CLIENT_LAYERS,
        {"client/annex/__init__.py": ""},
        "sealmem.client.annex",
    ),
}


def _copy(tmp: Path) -> Path:
    """The packages under ``tmp/src/sealmem/`` (importable from there) and the config."""
    ns = tmp / "src" / "sealmem"
    ns.mkdir(parents=True)
    for top in PACKAGES:
        shutil.copytree(ROOT / top, ns / top, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp / "pyproject.toml")
    return tmp


def _plant(tree: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = tree / "src" / "sealmem" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not (path.exists() and text == ""):  # a package the tree already has stays
            path.write_text(text)


def _lint(tree: Path) -> tuple[int, str]:
    # The copy comes first on the path, ahead of the editable install's finder.
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    run = subprocess.run(
        [str(LINT), "--no-cache", "--no-logo"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return run.returncode, run.stdout + run.stderr


def _verdict(output: str, contract: str) -> str:
    """KEPT or BROKEN: the word the tool prints after the contract's name."""
    for line in output.splitlines():
        if line.startswith(contract + " "):
            return line.rsplit(" ", 1)[1]
    raise AssertionError(f"lint-imports did not check {contract!r}:\n{output}")


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str]:
    """lint-imports on an untouched copy of the tree."""
    return _lint(_copy(tmp_path_factory.mktemp("clean")))


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str]:
    """lint-imports on a copy holding every plant below (each names its own import)."""
    tree = _copy(tmp_path_factory.mktemp("planted"))
    for _, files, _ in PLANTS.values():
        _plant(tree, files)
    return _lint(tree)


@pytest.mark.parametrize("case", list(PLANTS))
def test_a_planted_import_breaks_its_contract(
    clean: tuple[int, str], planted: tuple[int, str], case: str
) -> None:
    contract, _, named = PLANTS[case]
    assert _verdict(clean[1], contract) == "KEPT", clean[1]
    assert named not in clean[1]
    code, output = planted
    assert code != 0
    assert _verdict(output, contract) == "BROKEN", output
    assert named in output  # the copy was analysed, and the tool names the import
