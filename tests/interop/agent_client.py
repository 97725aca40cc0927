"""Drive `tern serve agent` with the official Python SDK (`mcp` on PyPI).

Used by tern's end-to-end tests to prove another MCP client can hand tern a goal: the
client offers roots, calls `run`, collects progress notifications and may cancel a call
after its first progress notification. Prints one JSON document on stdout:
  {"server_info": {...}, "tools": [...], "calls": [{"result": {...} | null,
    "cancelled": bool, "progress": [...], "children_running": n, "children_after": n,
    "process_after": n}]}

`children_*` count the live child processes of the server (its sub-run's tool servers):
while the call runs and after it was cancelled. `process_after` counts the processes whose
command line holds `wait_for_process` once the cancelled run has ended.

Usage: agent_client.py PLAN_JSON -- COMMAND [ARGS...]
  PLAN_JSON: {"roots": ["/abs/dir", ...] | null,
              "marker": "text unique to the server's command line",
              "calls": [{"arguments": {...}, "cancel_after_progress": true | false,
                         "wait_for_process": "text in the command line of a process the
                                              sub-run starts; cancel once it runs"}]}
"""

import asyncio
import json
import os
import pathlib
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_types import ListRootsResult, Root


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def pids_with(marker):
    """Live processes (not this script) whose command line holds `marker`."""
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker in cmdline and "agent_client.py" not in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def server_pid(marker):
    """The pid of the server, found by `marker` in its command line."""
    pids = pids_with(marker)
    if len(pids) != 1:
        raise SystemExit(f"expected one process with {marker!r} in its command line: {pids}")
    return pids[0]


def wait_for(marker, present, timeout=30.0):
    """Waits until a process with `marker` runs (`present`) or none is left; returns the count."""
    deadline = time.monotonic() + timeout
    while True:
        count = len(pids_with(marker))
        if (count > 0) == present or time.monotonic() > deadline:
            return count
        time.sleep(0.05)


def live_children(pid):
    """Live (not zombie) processes whose parent is `pid`."""
    count = 0
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        if fields.get("PPid", "").strip() == str(pid) and not fields.get("State", "").startswith("Z"):
            count += 1
    return count


def children_after(pid, timeout=15.0):
    """Waits until `pid` has no live children (or `timeout`); returns how many are left."""
    deadline = time.monotonic() + timeout
    while True:
        left = live_children(pid)
        if left == 0 or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


async def run_call(session, call, marker):
    progress = []
    first = anyio.Event()
    out = {"result": None, "cancelled": False, "progress": progress}

    async def on_progress(value, total, message):
        progress.append({"progress": value, "total": total, "message": message})
        first.set()

    async def call_tool(scope):
        out["result"] = dump(
            await session.call_tool("run", call["arguments"], progress_callback=on_progress)
        )
        scope.cancel()

    if not call.get("cancel_after_progress"):
        out["result"] = dump(
            await session.call_tool("run", call["arguments"], progress_callback=on_progress)
        )
        return out

    async with anyio.create_task_group() as tg:
        tg.start_soon(call_tool, tg.cancel_scope)
        with anyio.fail_after(60):
            await first.wait()
        process = call.get("wait_for_process")
        if process and await anyio.to_thread.run_sync(wait_for, process, True) == 0:
            raise SystemExit(f"no process with {process!r} started")
        pid = server_pid(marker)
        out["children_running"] = live_children(pid)
        # Cancelling the task abandons the request: the SDK sends notifications/cancelled.
        tg.cancel_scope.cancel()
    out["cancelled"] = out["result"] is None
    out["children_after"] = await anyio.to_thread.run_sync(children_after, pid)
    if process:
        out["process_after"] = await anyio.to_thread.run_sync(wait_for, process, False)
    return out


async def main(plan, command, args):
    roots = plan.get("roots")

    async def list_roots(context):
        return ListRootsResult(
            roots=[Root(uri=pathlib.Path(r).as_uri(), name=pathlib.Path(r).name) for r in roots]
        )

    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    async with stdio_client(params) as streams:
        read, write = streams[0], streams[1]
        callback = list_roots if roots is not None else None
        async with ClientSession(read, write, list_roots_callback=callback) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            calls = [await run_call(session, call, plan.get("marker", "")) for call in plan["calls"]]
            print(
                json.dumps(
                    {
                        "server_info": dump(init.server_info),
                        "protocol_version": init.protocol_version,
                        "tools": [dump(t) for t in tools.tools],
                        "calls": calls,
                    }
                )
            )


if __name__ == "__main__":
    sep = sys.argv.index("--")
    asyncio.run(main(json.loads(sys.argv[1]), sys.argv[sep + 1], sys.argv[sep + 2 :]))
