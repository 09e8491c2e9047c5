"""``sealmem hub serve`` and ``sealmem hub scrub``: run and check the blind relay hub.

Storage is chosen by URL: ``--data DIR`` (SQLite + a blob directory, the
embedded default), or ``--db URL`` and ``--blobs URL`` (also from
``SEALMEM_HUB_DB`` and ``SEALMEM_HUB_BLOBS``).
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import Annotated

import typer

from . import output
from .memory import JsonOpt

__all__ = ["hub_app"]

hub_app = typer.Typer(
    rich_markup_mode=None, help="Run the blind relay hub (it stores ciphertext it cannot read)."
)

DataOpt = Annotated[
    Path | None,
    typer.Option("--data", help="Directory for the hub database and blobs (the embedded layout)."),
]
DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        envvar="SEALMEM_HUB_DB",
        show_envvar=True,
        help="Metadata URL: sqlite:///path/hub.db (default: in --data) or postgresql://...",
    ),
]
BlobsOpt = Annotated[
    str | None,
    typer.Option(
        "--blobs",
        envvar="SEALMEM_HUB_BLOBS",
        show_envvar=True,
        help="Blob URL: file:///dir (default: blobs/ beside an SQLite database) or s3://...",
    ),
]


def _where(data: Path | None, db: str | None, blobs: str | None) -> str:
    from ...hub.storage.backends import shown_url  # never print a password

    shown = [f"data: {data}"] if data is not None and db is None else []
    if db is not None:
        shown.append(f"db: {shown_url(db)}")
    if blobs is not None:
        shown.append(f"blobs: {shown_url(blobs)}")
    return ", ".join(shown)


OperatorTokenOpt = Annotated[
    str | None,
    typer.Option(
        "--operator-token",
        envvar="SEALMEM_HUB_OPERATOR_TOKEN",
        help="Token a team creator must present to register a team (prefer the env var).",
        show_envvar=True,
    ),
]

AllowTeamOpt = Annotated[
    list[str] | None,
    typer.Option("--allow-team", help="A team id allowed to register (repeatable)."),
]

MemberRateOpt = Annotated[
    float | None,
    typer.Option(
        min=1.0,
        help="Signed requests per second each member may make, sustained; more get "
        "429 rate-limited [default: 50].",
    ),
]

MemberBurstOpt = Annotated[
    int | None,
    typer.Option(min=1, help="Requests a member may make at once, above the rate [default: 400]."),
]

HttpOpt = Annotated[
    str,
    typer.Option(
        "--http",
        help="HTTP stack: httptools (with uvloop, the fast default) or h11 (pure Python).",
    ),
]

MetricsTokenOpt = Annotated[
    str | None,
    typer.Option(
        "--metrics-token",
        envvar="SEALMEM_HUB_METRICS_TOKEN",
        help="Serve /metrics to 'Authorization: Bearer TOKEN' only (default: /metrics "
        "is off; prefer the env var).",
        show_envvar=True,
    ),
]

PlainOpt = Annotated[
    bool,
    typer.Option(
        "--plain",
        help="Serve on the plain path: Starlette's router and thread pool (default: "
        "the fast path, direct routes and the hub's own worker threads).",
    ),
]


@hub_app.command()
def serve(
    data: DataOpt = None,
    db: DbOpt = None,
    blobs: BlobsOpt = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8765,
    operator_token: OperatorTokenOpt = None,
    allow_team: AllowTeamOpt = None,
    team_quota_mb: Annotated[int, typer.Option(help="Storage quota per team, in MiB.")] = 1024,
    member_rate: MemberRateOpt = None,
    member_burst: MemberBurstOpt = None,
    http: HttpOpt = "httptools",
    metrics_token: MetricsTokenOpt = None,
    plain: PlainOpt = False,
) -> None:
    """Serve the hub API under /v1 (plus /healthz, and /metrics with --metrics-token)
    until interrupted."""
    from ...hub.config import HubConfig
    from ...hub.http.server import serve as run

    config = HubConfig(
        data_dir=data,
        db_url=db,
        blobs_url=blobs,
        host=host,
        port=port,
        operator_token=operator_token,
        allow_teams=frozenset(allow_team or ()),
        team_quota_bytes=team_quota_mb * 1024 * 1024,
        http_stack=http,
        metrics_token=metrics_token,
        fast=not plain,
        member_rate=HubConfig.member_rate if member_rate is None else member_rate,
        member_burst=HubConfig.member_burst if member_burst is None else member_burst,
    )
    if not config.registration_open:
        output.say(
            "note: no --operator-token or --allow-team given: teams already registered on "
            "this hub are served, no new team can register",
            err=True,
        )
    output.say(f"sealmem hub on http://{host}:{port} ({_where(data, db, blobs)})", err=True)
    run(config)


@hub_app.command()
def scrub(
    data: DataOpt = None, db: DbOpt = None, blobs: BlobsOpt = None, as_json: JsonOpt = False
) -> None:
    """Re-hash every stored chunk against its id; drop the damaged and missing ones so
    that their writers upload them again at their next sync.  An SQLite hub must be
    stopped first (it holds hub.lock)."""
    from ...crypto import SUITE
    from ...hub.config import HubConfig
    from ...hub.storage.backends import open_storage
    from ...hub.storage.blobs import BlobKey
    from ...protocol.snapshot import chunk_id

    config = HubConfig(data_dir=data, db_url=db, blobs_url=blobs)

    def verify(key: BlobKey, blob: bytes) -> bool:
        return chunk_id(SUITE, blob) == key.chunk_id

    with closing(open_storage(config.metadata_url, config.blobs_url, config.quota)) as storage:
        report = storage.scrub(verify)
    if as_json:
        output.emit_json(
            {"checked": report.checked, "damaged": report.damaged, "missing": report.missing}
        )
        return
    output.say(
        f"checked {report.checked} chunk(s): {report.damaged} damaged, {report.missing} "
        "missing, dropped; their writers upload them again at their next sync"
    )
