"""An MCP server (official Python SDK) that reports the request `_meta` it received.

The telemetry test calls its `echo_meta` tool through tern and reads the W3C `traceparent`
tern put in the `tools/call` request's `_meta`.
"""

import json

from mcp.server import MCPServer
from mcp.server.mcpserver import Context

server = MCPServer("meta")


@server.tool()
def echo_meta(ctx: Context) -> str:
    """Return the `_meta` of this request as JSON."""
    meta = ctx.request_context.meta or {}
    return json.dumps(dict(meta), default=str, sort_keys=True)


if __name__ == "__main__":
    server.run("stdio")
