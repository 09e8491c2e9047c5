"""The size limits that stand for the product's code (issue 24): no module over 500
lines, at most 6 over 400, no function over 80 lines (client, hub, crypto, protocol)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("client", "hub", "crypto", "protocol")


def _modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def test_no_module_is_over_500_lines_and_at_most_six_over_400() -> None:
    lengths = {
        str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines())
        for p in _modules()
    }
    assert len(lengths) > 100  # the product's modules were found
    assert {name: n for name, n in lengths.items() if n > 500} == {}
    assert len(sorted(name for name, n in lengths.items() if n > 400)) <= 6, sorted(
        (n, name) for name, n in lengths.items() if n > 400
    )


def test_no_function_is_over_80_lines() -> None:
    long = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > 80:
                    long.append(f"{path.relative_to(ROOT)}:{node.name} ({lines})")
    assert long == []
