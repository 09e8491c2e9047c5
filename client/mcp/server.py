"""The MCP server: the local store's tools (:mod:`.tools`) served to an agent, over
stdio (:func:`run_stdio`) or streamable HTTP (:mod:`.http`): one server, two transports.

Tools: ``recall``, ``remember``, ``get``, ``recent``, ``forget``, ``status``;
a ``startup_context`` prompt, the ``sealmem://startup-context`` resource, the
``sealmem://memory/{id}`` and ``sealmem://startup-context/{project}`` templates;
``completion/complete`` (:mod:`.completion`) and ``logging/setLevel``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import (
    ResourceError,
    ResourceNotFoundError,
    ToolError,
    UnexpectedToolError,
)
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    EmptyResult,
    GetPromptResult,
    InputRequiredResult,
    SetLevelRequestParams,
    TextContent,
    ToolAnnotations,
)
from pydantic import AnyUrl, ValidationError

from ...protocol.errors import NotFoundError, SealmemError
from . import package_version
from .arguments import explain
from .completion import Completer
from .tools import DATA_NOT_INSTRUCTIONS, MemoryTools

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel.helper_types import ReadResourceContents
    from mcp.server.mcpserver.context import Context

    from .. import MemoryStore

__all__ = ["create_server", "run_stdio"]

INSTRUCTIONS = (
    "sealmem is this team's long-term memory. Call `recall` before non-trivial work to "
    "find decisions, warnings and lessons about the task; call `remember` when you learn "
    "something a teammate or a later session should know (a decision, a pitfall, a fix), "
    "with `supersedes` when it corrects an older memory. " + DATA_NOT_INSTRUCTIONS
)


_TOOL_DOCS = {
    "recall": (
        "Search the team's memories (decisions, warnings, lessons, facts) for the current "
        "project plus the shared tier; `kinds` narrows it (e.g. only warnings). "
        "Each hit says who wrote it (written_by: "
        "'you' only for this machine's own memories, else the teammate whose signature was "
        "verified; claimed_author is only a claim), who wrote its text (source: person, "
        "agent, hook or import), its provenance and why it ranked; "
        "superseded hits list their replacement. "
    ),
    "remember": (
        "Store a memory for later sessions and teammates; use `supersedes` when it corrects "
        "older memories. Secrets are redacted before storing. Repeating a memory merges "
        "it (a kind given replaces the old one in a new version). When this member may "
        "not write the project in its team, the result's stays_local says the memory "
        "stays on this machine, why, and the fix. What you store is marked as an agent's "
        "(source 'agent') and kept private until the person accepts it, unless they chose "
        "to share agent writes at once: held_for_review says which."
    ),
    "get": (
        "Fetch one memory by its id (or at least 8 hex digits that start or end it), "
        "with provenance. "
    ),
    "recent": "List the most recent memories. ",
    "forget": (
        "Forget a memory: the content and keywords of every version are erased here and, "
        "as they sync, on teammates' machines; the reason you give is kept and shared. "
        "A memory shared with the team is only forgotten once the person accepts it, "
        "unless they chose to share agent writes at once: held_for_review says which."
    ),
    "status": (
        "Where the store lives, the current project, counts, and sync state (with alarms, "
        "and this machine's clock against the team's hub or folder)."
    ),
}


class SealmemServer(MCPServer[None]):
    """``MCPServer`` whose tool errors an agent can act on.

    The SDK treats any exception of a tool but its own ``ToolError`` as a crash (a
    message without the cause, a traceback in the log): a :class:`SealmemError` is an
    expected refusal and is answered with its message.  The SDK answers a pydantic
    ``ValidationError`` verbatim (error URLs and all); here it becomes one short line
    built from the tool's input schema.
    """

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[None, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return compact(await super().call_tool(name, arguments, context))
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, SealmemError):  # expected: the agent reads what to fix
                raise ToolError(f"{name}: {cause}") from cause  # as an argument error
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            tool = self._tool_manager.get_tool(name)
            schema = tool.parameters if tool is not None else {}
            raise ToolError(explain(name, schema, cause)) from cause

    async def read_resource(
        self, uri: AnyUrl | str, context: Context[None, Any] | None = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        """A resource a SealmemError refused (an unknown id, a malformed project) is
        answered with its reason, as a tool's is; the SDK would log it as a crash."""
        try:
            return await super().read_resource(uri, context)
        except ResourceError as exc:
            if (cause := _refusal(exc)) is None:
                raise
            refused = ResourceNotFoundError if isinstance(cause, NotFoundError) else ResourceError
            raise refused(str(cause)) from cause

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        context: Context[None, Any] | None = None,
    ) -> GetPromptResult | InputRequiredResult:
        """A prompt a SealmemError refused is answered with its reason (invalid params)."""
        try:
            return await super().get_prompt(name, arguments, context)
        except ValueError as exc:
            if (cause := _refusal(exc)) is None:
                raise
            raise MCPError(code=INVALID_PARAMS, message=f"{name}: {cause}") from cause

    def answer_set_level(self) -> None:
        """Answer ``logging/setLevel`` (hosts and the conformance suite send it; unanswered
        it is a -32601).  sealmem sends no ``notifications/message`` at any level, so the
        level needs no keeping; an unknown level is refused by the SDK (-32602)."""

        async def set_level(
            _ctx: ServerRequestContext[None], _params: SetLevelRequestParams
        ) -> EmptyResult:
            return EmptyResult()

        self._lowlevel_server.add_request_handler(
            "logging/setLevel", SetLevelRequestParams, set_level
        )

    def answer_completion(self, completer: Completer) -> None:
        """Answer ``completion/complete`` from ``completer`` (whatever the reference: the
        argument's name says what it takes)."""

        async def complete(
            _ctx: ServerRequestContext[None], params: CompleteRequestParams
        ) -> CompleteResult:
            try:
                found = completer.complete(params.argument)
            except SealmemError as exc:  # the store refused: say why, serve on
                raise MCPError(code=INTERNAL_ERROR, message=f"completion: {exc}") from exc
            return CompleteResult(completion=found or Completion(values=[]))

        self._lowlevel_server.add_request_handler(
            "completion/complete", CompleteRequestParams, complete
        )


def _refusal(exc: BaseException) -> SealmemError | None:
    """The SealmemError the SDK wrapped ``exc`` around (one or two layers), if any."""
    cause = exc.__cause__
    while cause is not None and not isinstance(cause, SealmemError):
        cause = cause.__cause__
    return cause


def compact(result: CallToolResult | InputRequiredResult) -> CallToolResult | InputRequiredResult:
    """The text twin of a structured result as compact JSON (the SDK indents it: two
    recall hits came to 2.4 kB of an agent's context, beside the same structured copy)."""
    if not isinstance(result, CallToolResult) or result.structured_content is None:
        return result
    text = json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False)
    return result.model_copy(update={"content": [TextContent(type="text", text=text)]})


def create_server(
    *, project: str | None = None, opener: Callable[[], MemoryStore] | None = None
) -> SealmemServer:
    """Build the server; ``opener`` defaults to ``MemoryStore.open`` (``SEALMEM_HOME``)."""
    from .. import MemoryStore
    from ..project import current_project

    tools = MemoryTools(opener or MemoryStore.open, project or current_project())

    @asynccontextmanager
    async def lifespan(_server: MCPServer[None]) -> AsyncIterator[None]:
        try:
            yield None
        finally:
            tools.close()

    server = SealmemServer(
        "sealmem",
        version=package_version(),
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        lifespan=lifespan,
    )
    for name, doc in _TOOL_DOCS.items():
        reads = name in ("recall", "get", "recent")
        description = doc + (DATA_NOT_INSTRUCTIONS if reads else "")
        annotations = ToolAnnotations(
            read_only_hint=name not in ("remember", "forget"),
            destructive_hint=name == "forget",
            idempotent_hint=name != "forget",
            open_world_hint=False,
        )
        server.add_tool(
            getattr(tools, name),
            name=name,
            description=description.strip(),
            annotations=annotations,
        )
    server.prompt(
        name="startup_context",
        description="Warnings, decisions and key memories for this project, to read first. "
        + DATA_NOT_INSTRUCTIONS,
    )(tools.startup_context)
    server.resource(
        "sealmem://startup-context",
        name="startup-context",
        description="The startup context for the server's project. " + DATA_NOT_INSTRUCTIONS,
        mime_type="text/markdown",
    )(tools.startup_resource)
    _templates(server, tools)
    server.answer_set_level()
    return server


def _templates(server: SealmemServer, tools: MemoryTools) -> None:
    """One memory and another project's startup context as resource templates, and the
    completion of their arguments and the prompt's (:mod:`.completion`)."""

    async def memory(id: str) -> str:
        return (await tools.get(id)).model_dump_json()

    async def startup_for(project: str) -> str:
        return await tools.startup_context(project)

    server.resource(
        "sealmem://memory/{id}",
        name="memory",
        description="One memory by its id, with provenance, as JSON. " + DATA_NOT_INSTRUCTIONS,
        mime_type="application/json",
    )(memory)
    server.resource(
        "sealmem://startup-context/{project}",
        name="project-startup-context",
        description="The startup context for a project. " + DATA_NOT_INSTRUCTIONS,
        mime_type="text/markdown",
    )(startup_for)
    server.answer_completion(Completer(tools.store))


def run_stdio(project: str | None = None) -> None:
    """Serve over stdin/stdout until the client closes the stream."""
    create_server(project=project).run("stdio")
