"""Drive an MCP stdio server with the official Python SDK (`mcp` on PyPI).

Used by tern's end-to-end tests to prove other MCP clients can run tern's
servers as they are. Prints one JSON document on stdout:
  {"server_info": {...}, "protocol_version": "...", "tools": [...], "calls": [...]}

Usage: py_client.py CALLS_JSON -- COMMAND [ARGS...]
  CALLS_JSON is a JSON list of {"name": TOOL, "arguments": {...}}.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main(calls, command, args):
    params = StdioServerParameters(command=command, args=args)
    async with stdio_client(params) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            results = []
            for call in calls:
                result = await session.call_tool(call["name"], call.get("arguments") or {})
                results.append(dump(result))
            out = {
                "server_info": dump(init.server_info),
                "protocol_version": init.protocol_version,
                "tools": [dump(t) for t in tools.tools],
                "calls": results,
            }
            print(json.dumps(out))


if __name__ == "__main__":
    sep = sys.argv.index("--")
    calls = json.loads(sys.argv[1])
    asyncio.run(main(calls, sys.argv[sep + 1], sys.argv[sep + 2 :]))
