"""The hooks' time bound: 2 s, or SEALMEM_HOOK_BUDGET_S within 0.1..120 s."""

from __future__ import annotations

import pytest

from sealmem.client.hosts import hooks


@pytest.mark.parametrize(
    ("value", "budget"),
    [
        ("5", 5.0),
        ("0.1", 0.1),
        ("120", 120.0),
        ("0", hooks.HOOK_BUDGET_S),
        ("-3", hooks.HOOK_BUDGET_S),
        ("121", hooks.HOOK_BUDGET_S),
        ("nan", hooks.HOOK_BUDGET_S),
        ("inf", hooks.HOOK_BUDGET_S),
        ("", hooks.HOOK_BUDGET_S),
        ("two", hooks.HOOK_BUDGET_S),
        ("\u0665", hooks.HOOK_BUDGET_S),  # an Arabic-Indic five: float() takes it, we do not
    ],
)
def test_the_budget_comes_from_the_environment_within_bounds(
    value: str, budget: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(hooks.BUDGET_ENV, value)
    assert hooks._budget() == budget


def test_a_hook_past_its_budget_prints_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    release = threading.Event()

    def stuck() -> str:
        release.wait(5)
        return "{}"

    monkeypatch.setenv(hooks.BUDGET_ENV, "0.1")
    try:
        assert hooks.run("session-start", stuck) == ""
    finally:
        release.set()
