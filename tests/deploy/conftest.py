"""Fixtures for the deploy/ checks: the parsed deploy files and a real hub to start."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

from tests.deploy.helpers import (
    DEPLOY,
    SEALMEM,
    Instruction,
    load_yaml,
    read_dockerfile,
    read_unit,
)

# -- a real hub ---------------------------------------------------------------------


@dataclass
class RunningHub:
    process: subprocess.Popen[bytes]
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture
def start_hub(tmp_path: Path) -> Iterator[Any]:
    """Start ``sealmem <argv>`` (a hub) and wait for /healthz; stop it afterwards."""
    started: list[subprocess.Popen[bytes]] = []
    logs: list[IO[bytes]] = []

    def start(argv: list[str], port: int) -> RunningHub:
        log = (tmp_path / f"hub-{port}.log").open("wb")
        logs.append(log)
        proc = subprocess.Popen([str(SEALMEM), *argv], stdout=log, stderr=subprocess.STDOUT)
        started.append(proc)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                text = (tmp_path / f"hub-{port}.log").read_text(errors="replace")
                raise AssertionError(f"hub exited with {proc.returncode}: {text}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    return RunningHub(proc, port)
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"hub on port {port} did not answer /healthz within 20 s")

    yield start
    for proc in started:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for log in logs:
        log.close()


@pytest.fixture(scope="session")
def dockerfile() -> list[Instruction]:
    return read_dockerfile(DEPLOY / "Dockerfile")


@pytest.fixture(scope="session")
def compose() -> Any:
    return load_yaml((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def unit() -> dict[str, dict[str, list[str]]]:
    return read_unit(DEPLOY / "sealmem-hub.service")
