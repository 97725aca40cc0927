"""Drive an MCP server over streamable HTTP with the official Python SDK (`mcp` on PyPI).

Used by tern's end-to-end tests to prove other MCP clients can use tern's servers
served with `--http`. Prints one JSON document per era, one per line, on stdout:
  {"server_info": {...}, "protocol_version": "...", "tools": [...], "calls": [...]}

Usage: py_http_client.py URL CALLS_JSON [ERAS] [TOKEN_ENV_VAR]
  CALLS_JSON is a JSON list of {"name": TOOL, "arguments": {...}}.
  ERAS is a comma-separated list (default: legacy): legacy opens with the `initialize`
  handshake (2025-11-25, a session); modern opens with `server/discover` (2026-07-28,
  no session). Each era is a connection of its own, in one process (Python starts slowly).
  TOKEN_ENV_VAR names an environment variable holding a bearer token to send.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main(url, calls, era, token_var):
    headers = None
    if token_var:
        headers = {"Authorization": f"Bearer {os.environ[token_var]}"}
    async with create_mcp_http_client(headers=headers) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                if era == "modern":
                    await session.discover()
                else:
                    await session.initialize()
                tools = await session.list_tools()
                results = []
                for call in calls:
                    result = await session.call_tool(call["name"], call.get("arguments") or {})
                    results.append(dump(result))
                out = {
                    "server_info": dump(session.server_info),
                    "protocol_version": session.protocol_version,
                    "tools": [dump(t) for t in tools.tools],
                    "calls": results,
                }
                print(json.dumps(out), flush=True)


if __name__ == "__main__":
    url = sys.argv[1]
    calls = json.loads(sys.argv[2])
    eras = (sys.argv[3] if len(sys.argv) > 3 else "legacy").split(",")
    token_var = sys.argv[4] if len(sys.argv) > 4 else None
    for era in eras:
        asyncio.run(main(url, calls, era, token_var))
