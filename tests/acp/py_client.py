"""An editor driving `tern acp`, written with the official ACP Python SDK (`agent-client-protocol`
on PyPI, installed into .deps/venv by .ci/install-test-deps): the SDK parses every message tern
sends into its pydantic models, so a field tern spells wrong fails here.

usage: py_client.py PLAN_JSON   PLAN = {tern, cwd, extraServer: [cmd, ...], answers: [optionId...],
                                        prompts: [text...], buffers: {absPath: text}}
With `buffers`, the client offers fs.readTextFile/writeTextFile over that in-memory map (a path
not in it is read from disk) and reports every request (`fsRequests`) and the buffers at the end.
Prints one JSON report on stdout.
"""

import asyncio
import json
import os
import sys

import acp
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    EnvVariable,
    FileSystemCapabilities,
    McpServerStdio,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TextContentBlock,
    WriteTextFileResponse,
)


class Editor:
    def __init__(self, answers, buffers):
        self.answers = list(answers)
        self.updates = []
        self.permissions = []
        self.buffers = dict(buffers) if buffers is not None else None
        self.fs_requests = []

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        option_id = self.answers.pop(0) if self.answers else "reject_once"
        self.permissions.append(
            {"toolCallId": tool_call.tool_call_id, "options": [o.option_id for o in options], "answered": option_id}
        )
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option_id))

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append(update.model_dump(mode="json", by_alias=True, exclude_none=True))

    # Without `buffers` the client offers no fs (the capabilities say so); tern must not call these.
    async def write_text_file(self, session_id, path, content, **kwargs):
        self.fs_requests.append({"method": "write", "path": path})
        if self.buffers is None:
            raise acp.RequestError.method_not_found("fs/write_text_file")
        self.buffers[path] = content
        return WriteTextFileResponse()

    async def read_text_file(self, session_id, path, line=None, limit=None, **kwargs):
        self.fs_requests.append({"method": "read", "path": path})
        if self.buffers is None:
            raise acp.RequestError.method_not_found("fs/read_text_file")
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        with open(path, encoding="utf-8") as f:
            return ReadTextFileResponse(content=f.read())


async def main():
    plan = json.loads(sys.argv[1])
    editor = Editor(plan.get("answers", []), plan.get("buffers"))
    offered = editor.buffers is not None
    report = {"prompts": []}
    async with acp.spawn_agent_process(editor, plan["tern"], "acp", cwd=plan["cwd"], env=dict(os.environ)) as (
        conn,
        process,
    ):
        init = await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(read_text_file=offered, write_text_file=offered)),
        )
        report["initialize"] = init.model_dump(mode="json", by_alias=True, exclude_none=True)
        servers = []
        if plan.get("extraServer"):
            cmd = plan["extraServer"]
            servers.append(McpServerStdio(name="extra", command=cmd[0], args=cmd[1:], env=[EnvVariable(name="X", value="1")]))
        session = await conn.new_session(cwd=plan["cwd"], mcp_servers=servers)
        report["sessionId"] = session.session_id
        for text in plan.get("prompts", []):
            r = await conn.prompt(session_id=session.session_id, prompt=[TextContentBlock(type="text", text=text)])
            report["prompts"].append({"stopReason": r.stop_reason})
        # Let the last notifications arrive before closing.
        await asyncio.sleep(0.2)
        process.stdin.close()
        report["exit"] = await asyncio.wait_for(process.wait(), 20)
    report["updates"] = editor.updates
    report["permissions"] = editor.permissions
    report["fsRequests"] = editor.fs_requests
    report["buffers"] = editor.buffers
    print(json.dumps(report))


asyncio.run(main())
