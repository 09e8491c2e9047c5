"""A passphrase asked without a terminal (a pipe, CI) is read from stdin without
Python's ``GetPassWarning: Can not control echo on the terminal``, and none at all is
refused with the fix (``$SEALMEM_PASSPHRASE``)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import Run


@pytest.mark.slow
def test_a_piped_passphrase_warns_of_nothing(
    sealmem: Callable[..., Run], home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SEALMEM_PASSPHRASE", raising=False)
    os.environ.pop("SEALMEM_PASSPHRASE", None)
    (tmp_path / "nas").mkdir()
    assert sealmem("team", "create", "Acme", "--folder", str(tmp_path / "nas")).code == 0
    bundle = tmp_path / "carol.key"
    issued = sealmem(
        "admin", "issue", "carol", "-o", str(bundle), stdin="correct horse battery staple\n"
    )
    assert issued.code == 0, issued.err
    assert "GetPassWarning" not in issued.err
    assert "echo" not in issued.err
    assert bundle.exists()
    none = sealmem("admin", "issue", "dave", "-o", str(tmp_path / "dave.key"), stdin="")
    assert none.code == 1
    assert "GetPassWarning" not in none.err
    assert "no terminal to ask on; set SEALMEM_PASSPHRASE" in none.err
