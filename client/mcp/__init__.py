"""The stdio MCP server."""
