"""``sealmem hub serve``: run the blind relay hub on this machine."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from . import output

__all__ = ["register"]

hub_app = typer.Typer(help="Run the blind relay hub (it stores ciphertext it cannot read).")


@hub_app.command()
def serve(
    data: Annotated[Path, typer.Option("--data", help="Directory for the hub database and blobs.")],
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8765,
    operator_token: Annotated[
        str | None,
        typer.Option(
            "--operator-token",
            envvar="SEALMEM_HUB_OPERATOR_TOKEN",
            help="Token a team creator must present to register a team (prefer the env var).",
            show_envvar=True,
        ),
    ] = None,
    allow_team: Annotated[
        list[str] | None,
        typer.Option("--allow-team", help="A team id allowed to register (repeatable)."),
    ] = None,
    team_quota_mb: Annotated[int, typer.Option(help="Storage quota per team, in MiB.")] = 1024,
) -> None:
    """Serve the hub API under /v1 (plus /healthz and /metrics) until interrupted."""
    from ...hub.config import HubConfig
    from ...hub.server import serve as run

    config = HubConfig(
        data_dir=data,
        host=host,
        port=port,
        operator_token=operator_token,
        allow_teams=frozenset(allow_team or ()),
        team_quota_bytes=team_quota_mb * 1024 * 1024,
    )
    if not config.registration_open:
        output.say(
            "note: no --operator-token or --allow-team given: teams already registered in "
            f"{data} are served, no new team can register",
            err=True,
        )
    output.say(f"sealmem hub on http://{host}:{port} (data: {data})", err=True)
    run(config)


def register(app: typer.Typer) -> None:
    app.add_typer(hub_app, name="hub")
