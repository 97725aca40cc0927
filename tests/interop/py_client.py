"""Drive an MCP stdio server with the official Python SDK (`mcp` on PyPI).

Used by tern's end-to-end tests to prove other MCP clients can run tern's
servers as they are. Prints one JSON document on stdout:
  {"server_info": {...}, "protocol_version": "...", "tools": [...], "calls": [...]}

Usage: py_client.py CALLS_JSON [legacy|modern] -- COMMAND [ARGS...]
  CALLS_JSON is a JSON list of {"name": TOOL, "arguments": {...}}.
  legacy (the default) opens with the `initialize` handshake (2025-11-25);
  modern opens with `server/discover` (2026-07-28, no handshake).
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main(calls, era, command, args):
    params = StdioServerParameters(command=command, args=args)
    async with stdio_client(params) as streams:
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
            print(json.dumps(out))


if __name__ == "__main__":
    sep = sys.argv.index("--")
    calls = json.loads(sys.argv[1])
    era = sys.argv[2] if sep > 2 else "legacy"
    asyncio.run(main(calls, era, sys.argv[sep + 1], sys.argv[sep + 2 :]))
