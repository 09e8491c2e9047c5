"""The stdio MCP server (:mod:`.server`); importing this package loads no MCP SDK."""


def package_version() -> str:
    """The installed ``sealmem`` version (``sealmem --version``, the MCP ``serverInfo``)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sealmem")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"
