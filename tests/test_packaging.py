"""The wheel holds every module of the package under the sealmem namespace."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("client", "hub", "crypto", "protocol")


def _source_modules() -> set[str]:
    found = set()
    for top in PACKAGES:
        for path in (ROOT / top).rglob("*.py"):
            found.add("sealmem/" + path.relative_to(ROOT).as_posix())
    return found


@pytest.mark.slow
def test_wheel_contains_every_module(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("sealmem-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    missing = _source_modules() - names
    assert not missing, f"modules missing from the wheel (list them in pyproject.toml): {missing}"
    assert "sealmem/protocol/py.typed" in names
    assert "sealmem/client/store/redaction/gitleaks.toml" in names  # the rules, as data
    assert "sealmem/client/store/redaction/LICENSE-gitleaks" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    with zipfile.ZipFile(wheel) as zf:
        assert "sealmem = sealmem.client.launch:main" in zf.read(entry_points).decode()


def test_no_top_level_modules_outside_the_namespace() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    for top in PACKAGES:
        assert f'"sealmem.{top}" = "{top}"' in text
