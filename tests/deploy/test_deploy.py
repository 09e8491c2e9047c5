"""deploy/: the Dockerfile, compose file, Caddyfile and systemd unit say what the operator
docs promise, agree with each other, and start a real hub with the arguments they carry."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.helpers import (
    DEPLOY,
    ROOT,
    SEALMEM,
    Instruction,
    YamlSubsetError,
    exec_form,
    free_port,
    load_yaml,
    split_command,
    with_option,
)

Unit = dict[str, dict[str, list[str]]]


def _final_stage(instructions: list[Instruction]) -> list[Instruction]:
    last = max(i.stage for i in instructions)
    return [i for i in instructions if i.stage == last]


def _one(instructions: list[Instruction], op: str) -> Instruction:
    found = [i for i in instructions if i.op == op]
    assert len(found) == 1, f"expected one {op} in the final stage, found {len(found)}"
    return found[0]


def _docker_argv(instructions: list[Instruction]) -> list[str]:
    final = _final_stage(instructions)
    return exec_form(_one(final, "ENTRYPOINT").args) + exec_form(_one(final, "CMD").args)


def _healthcheck_argv(instructions: list[Instruction]) -> list[str]:
    args = _one(_final_stage(instructions), "HEALTHCHECK").args
    _, _, command = args.partition("CMD ")
    return exec_form(command.strip())


def _exec_start(unit: Unit) -> list[str]:
    (line,) = unit["Service"]["ExecStart"]
    return split_command(line)


def _option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


# -- Dockerfile ---------------------------------------------------------------------


def test_the_image_runs_as_an_unprivileged_user(dockerfile: list[Instruction]) -> None:
    final = _final_stage(dockerfile)
    users = [i for i in final if i.op == "USER"]
    assert users, "the final stage has no USER: the hub would run as root"
    user = users[-1].args.split(":")[0]
    assert user not in {"root", "0"}
    # USER comes before the process starts, and nothing after it switches back.
    ops = [i.op for i in final]
    assert ops.index("USER") < ops.index("ENTRYPOINT")
    if user.isdigit():
        assert int(user) >= 1000
        useradd = " ".join(i.args for i in final if i.op == "RUN")
        assert f"--uid {user}" in useradd, "the numeric USER is not created by the image"


def test_the_image_has_a_healthcheck_on_healthz(dockerfile: list[Instruction]) -> None:
    final = _final_stage(dockerfile)
    check = _one(final, "HEALTHCHECK").args
    for flag in ("--interval=", "--timeout=", "--retries="):
        assert flag in check
    assert any("/healthz" in part for part in _healthcheck_argv(dockerfile))


def test_the_image_serves_the_hub_on_its_volume_and_port(dockerfile: list[Instruction]) -> None:
    final = _final_stage(dockerfile)
    argv = _docker_argv(dockerfile)
    assert argv[:3] == ["sealmem", "hub", "serve"]
    assert _option(argv, "--host") == "0.0.0.0"  # reachable through the container's port
    port = _option(argv, "--port")
    assert _one(final, "EXPOSE").args == port
    assert _option(argv, "--data") in _one(final, "VOLUME").args
    env = " ".join(i.args for i in final if i.op == "ENV")
    assert f"SEALMEM_HUB_PORT={port}" in env, "the healthcheck would poll another port"


def test_the_image_builds_from_files_that_exist(dockerfile: list[Instruction]) -> None:
    build = [i for i in dockerfile if i.stage == 0]
    copies = [i.args.split() for i in build if i.op == "COPY"]
    sources = [src for parts in copies for src in parts[:-1] if not src.startswith("--")]
    assert sources
    for src in sources:
        assert (ROOT / src).exists(), f"COPY {src}: no such file in the repository"
    # Every package of the distribution is copied in, or pip install . would miss it.
    for pkg in ("client", "crypto", "hub", "protocol"):
        assert pkg in sources
    runs = " ".join(i.args for i in build if i.op == "RUN")
    assert "pip install ." in runs
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text(encoding="utf-8").splitlines()
    assert "**" in ignore
    for src in sources:
        allowed = f"!{src}" in ignore or f"!{src}/**" in ignore
        assert allowed, f"{src} is excluded from the build context"


# -- compose ------------------------------------------------------------------------


def test_the_yaml_reader_refuses_what_it_does_not_understand() -> None:
    assert load_yaml("a:\n  - x: 1\n    y: [p, 'q r']\n  - z\nb: {c: d}\n") == {
        "a": [{"x": 1, "y": ["p", "q r"]}, "z"],
        "b": {"c": "d"},
    }
    for bad in ("a: &x 1\n", "a:\n\tb: 1\n", "a: |\n  text\n", "a: 1\na: 2\n", "---\na: 1\n"):
        with pytest.raises(YamlSubsetError):
            load_yaml(bad)


def test_compose_runs_the_hub_image_on_a_named_volume(compose: Any) -> None:
    hub = compose["services"]["hub"]
    build = hub["build"]
    assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == DEPLOY / "Dockerfile"
    volume, _, target = hub["volumes"][0].partition(":")
    assert target == _option(hub["command"], "--data")
    assert volume in compose["volumes"], "the data volume is not a declared named volume"
    port = _option(hub["command"], "--port")
    assert hub["ports"] == [f"127.0.0.1:{port}:{port}"], "plain HTTP must stay on loopback"
    assert hub["read_only"] is True
    assert hub["cap_drop"] == ["ALL"]
    assert "no-new-privileges:true" in hub["security_opt"]


def test_compose_puts_caddy_under_the_tls_profile(compose: Any) -> None:
    caddy = compose["services"]["caddy"]
    assert caddy["profiles"] == ["tls"]
    assert caddy["depends_on"]["hub"]["condition"] == "service_healthy"
    mounts = {m.split(":")[0]: m.split(":")[1] for m in caddy["volumes"]}
    assert mounts["./Caddyfile"] == "/etc/caddy/Caddyfile"
    assert (DEPLOY / "Caddyfile").is_file()
    assert {"443:443", "80:80"} <= set(caddy["ports"])
    for named in ("caddy-data", "caddy-config"):
        assert named in compose["volumes"]  # certificates survive a restart


def test_caddy_proxies_to_the_compose_hub_without_rewriting(compose: Any) -> None:
    text = (DEPLOY / "Caddyfile").read_text(encoding="utf-8")
    code = "\n".join(line.split("#")[0] for line in text.splitlines())
    port = _option(compose["services"]["hub"]["command"], "--port")
    assert re.search(rf"reverse_proxy\s+hub:{port}\b", code)
    # The request signature covers the path: a prefix strip would break every request.
    for rewriting in ("handle_path", "strip_prefix", "uri ", "rewrite"):
        assert rewriting not in code
    assert "flush_interval -1" in code  # the long-poll change feed
    assert "request>headers delete" in code  # no request headers in the access log


# -- systemd ------------------------------------------------------------------------

HARDENING = {
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "ProtectKernelTunables": "yes",
    "ProtectKernelModules": "yes",
    "ProtectControlGroups": "yes",
    "RestrictSUIDSGID": "yes",
    "RestrictNamespaces": "yes",
    "LockPersonality": "yes",
    "MemoryDenyWriteExecute": "yes",
    "SystemCallArchitectures": "native",
    "CapabilityBoundingSet": "",
    "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
}


@pytest.mark.parametrize(("key", "value"), sorted(HARDENING.items()))
def test_the_unit_is_hardened(unit: Unit, key: str, value: str) -> None:
    assert unit["Service"].get(key) == [value], f"{key}= should be {value!r}"


def test_the_unit_filters_system_calls_and_runs_unprivileged(unit: Unit) -> None:
    service = unit["Service"]
    assert "@system-service" in service["SystemCallFilter"]
    assert any(v.startswith("~") and "@privileged" in v for v in service["SystemCallFilter"])
    assert service["User"][0] not in {"root", "0"} or service.get("DynamicUser") == ["yes"]
    assert unit["Install"]["WantedBy"] == ["multi-user.target"]


def test_the_unit_may_write_only_its_data_dir(unit: Unit) -> None:
    service = unit["Service"]
    data = _option(_exec_start(unit), "--data")
    assert service["ReadWritePaths"] == [data]
    assert data == "/var/lib/" + service["StateDirectory"][0]
    assert _option(_exec_start(unit), "--host") == "127.0.0.1"  # TLS proxy in front


def _unit_copy(tmp_path: Path) -> Path:
    """The unit with ExecStart pointing at this venv's sealmem (verify checks it exists)."""
    text = (DEPLOY / "sealmem-hub.service").read_text(encoding="utf-8")
    copy = tmp_path / "sealmem-hub.service"
    copy.write_text(text.replace("/opt/sealmem/bin/sealmem", str(SEALMEM)), encoding="utf-8")
    return copy


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_analyze_verify_accepts_the_unit(tmp_path: Path) -> None:
    copy = _unit_copy(tmp_path)
    proc = subprocess.run(
        ["systemd-analyze", "verify", str(copy)],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "sealmem-hub.service" not in proc.stderr, proc.stderr


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_rates_the_unit_exposure_low(tmp_path: Path) -> None:
    copy = _unit_copy(tmp_path)
    proc = subprocess.run(
        ["systemd-analyze", "security", "--offline=yes", str(copy)],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    if "--offline" in proc.stderr:
        pytest.skip("this systemd-analyze has no --offline")
    found = re.search(r"Overall exposure level for \S+: ([\d.]+)", proc.stdout)
    assert found, proc.stdout + proc.stderr
    assert float(found.group(1)) < 2.0, proc.stdout


# -- the same arguments start a real hub ---------------------------------------------


def _launchers(dockerfile: list[Instruction], compose: Any, unit: Unit) -> dict[str, list[str]]:
    return {
        "dockerfile": _docker_argv(dockerfile)[1:],
        "compose": ["hub", "serve", *compose["services"]["hub"]["command"]],
        "systemd": _exec_start(unit)[1:],
    }


@pytest.mark.slow
@pytest.mark.parametrize("source", ["dockerfile", "compose", "systemd"])
def test_the_deployed_command_line_starts_a_hub(
    source: str,
    dockerfile: list[Instruction],
    compose: Any,
    unit: Unit,
    start_hub: Callable[..., Any],
    tmp_path: Path,
) -> None:
    argv = _launchers(dockerfile, compose, unit)[source]
    assert argv[:2] == ["hub", "serve"]
    port = free_port()
    argv = with_option(argv, "--data", str(tmp_path / "data"))
    argv = with_option(argv, "--port", str(port))
    argv = with_option(argv, "--host", "127.0.0.1")
    hub = start_hub(argv, port)
    assert hub.process.poll() is None
    assert (tmp_path / "data").is_dir()


@pytest.mark.slow
def test_the_image_healthcheck_command_tells_up_from_down(
    dockerfile: list[Instruction], start_hub: Callable[..., Any], tmp_path: Path
) -> None:
    check = _healthcheck_argv(dockerfile)
    assert check[0] == "python"
    port = free_port()
    env = {"SEALMEM_HUB_PORT": str(port), "PATH": str(Path(sys.executable).parent)}
    down = subprocess.run([sys.executable, *check[1:]], env=env, capture_output=True, timeout=30)
    assert down.returncode != 0
    start_hub(["hub", "serve", "--data", str(tmp_path / "d"), "--port", str(port)], port)
    up = subprocess.run([sys.executable, *check[1:]], env=env, capture_output=True, timeout=30)
    assert up.returncode == 0, up.stderr


# -- operator docs ------------------------------------------------------------------


def test_the_operator_docs_cover_every_file_and_topic() -> None:
    docs = (DEPLOY / "README.md").read_text(encoding="utf-8")
    for path in sorted(DEPLOY.iterdir()):
        if path.name != "README.md":
            assert path.name in docs, f"deploy/README.md does not mention {path.name}"
    prose = re.sub(r"```.*?```", "", docs, flags=re.S)  # no shell comments as headings
    headings = " ".join(re.findall(r"^#+ (.+)$", prose, re.M)).lower()
    for topic in ("install", "tls", "backup", "restore", "upgrade", "limits", "cannot see"):
        assert topic in headings, f"deploy/README.md has no section on {topic}"
