"""An editor driving `tern acp`, written with the official ACP Python SDK (`agent-client-protocol`
on PyPI, installed into .deps/venv by .ci/install-test-deps): the SDK parses every message tern
sends into its pydantic models, so a field tern spells wrong fails here.

usage: py_client.py PLAN_JSON   PLAN = {tern, cwd, extraServer: [cmd, ...], answers: [optionId...],
                                        prompts: [text | {text, mode?, cancelOnCommand?}...],
                                        buffers: {absPath: text}, scenario?: "load", sessionId?,
                                        malformed?: true}
A prompt's `mode` is set with session/set_mode before it is sent; `cancelOnCommand` sends
session/cancel once the tool call running that shell command is in progress. With scenario
"load", the client lists the sessions of `cwd` and loads `sessionId` instead of creating one.
With `malformed`, after session/new the client writes a line that is not JSON straight onto
tern's stdin (the parse error tern answers has a null id, which the SDK drops: an observer of
the raw stream records it) and sends a method tern does not have (`unknownMethod`).
With `buffers`, the client offers fs.readTextFile/writeTextFile over that in-memory map (a path
not in it is read from disk) and reports every request (`fsRequests`) and the buffers at the end.
With `terminal: true`, the client offers terminals and runs each `terminal/create` for real (an
asyncio subprocess of the command and args it is given, in its cwd, on a pseudo-terminal as a real
editor's terminal is; what it prints is captured and cut from the front at `outputByteLimit`;
`terminal/kill` sends SIGKILL) and reports every terminal request (`terminalRequests`) and each
terminal's output (`terminalOutput`).
Prints one JSON report on stdout.
"""

import asyncio
import json
import os
import pty
import signal
import sys

import acp
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    KillTerminalResponse,
    ReleaseTerminalResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
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
        self.terminal_requests = []
        self.terminals = {}
        self.shown = {}
        self.conn = None
        self.cancel_on = None
        self.cancel_sent = False

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        option_id = self.answers.pop(0) if self.answers else "reject_once"
        self.permissions.append(
            {"toolCallId": tool_call.tool_call_id, "options": [o.option_id for o in options], "answered": option_id}
        )
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option_id))

    async def session_update(self, session_id, update, **kwargs):
        u = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.updates.append(u)
        # The user stops the turn once the command it waits for is running.
        if (
            self.cancel_on
            and u.get("sessionUpdate") == "tool_call_update"
            and u.get("status") == "in_progress"
            and any(
                x.get("sessionUpdate") == "tool_call"
                and x.get("toolCallId") == u.get("toolCallId")
                and (x.get("rawInput") or {}).get("command") == self.cancel_on
                for x in self.updates
            )
        ):
            self.cancel_on = None
            self.cancel_sent = True
            asyncio.get_running_loop().create_task(self.conn.cancel(session_id=session_id))

    async def create_terminal(self, session_id, command, args=None, env=None, cwd=None, output_byte_limit=None, **kwargs):
        self.terminal_requests.append({"method": "create", "command": command, "args": args, "cwd": cwd})
        if not self.offer_terminal:
            raise acp.RequestError.method_not_found("terminal/create")
        child_env = dict(os.environ)
        for v in env or []:
            child_env[v.name] = v.value
        terminal_id = f"py-term-{len(self.terminals) + 1}"
        # A real terminal, as Zed's: the process's stdio is a pseudo-terminal.
        master, slave = pty.openpty()
        proc = await asyncio.create_subprocess_exec(
            command, *(args or []), cwd=cwd, env=child_env,
            stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
        )
        os.close(slave)
        term = {"proc": proc, "out": bytearray(), "limit": output_byte_limit}

        def read_all():
            while True:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every holder of the pty's other side is gone
                    break
                if not chunk:
                    break
                term["out"] += chunk
            os.close(master)

        term["pump"] = asyncio.get_running_loop().run_in_executor(None, read_all)
        self.terminals[terminal_id] = term
        return CreateTerminalResponse(terminal_id=terminal_id)

    def _kept(self, term):
        out, limit = bytes(term["out"]), term["limit"]
        if limit is None or len(out) <= limit:
            return out.decode("utf-8", "replace"), False
        start = len(out) - limit
        while start < len(out) and out[start] & 0xC0 == 0x80:
            start += 1
        return out[start:].decode("utf-8", "replace"), True

    @staticmethod
    def _status(code):
        if code is None:
            return None
        if code < 0:
            return TerminalExitStatus(signal=signal.Signals(-code).name)
        return TerminalExitStatus(exit_code=code)

    async def terminal_output(self, session_id, terminal_id, **kwargs):
        self.terminal_requests.append({"method": "output", "terminalId": terminal_id})
        term = self.terminals[terminal_id]
        output, truncated = self._kept(term)
        return TerminalOutputResponse(output=output, truncated=truncated, exit_status=self._status(term["proc"].returncode))

    async def wait_for_terminal_exit(self, session_id, terminal_id, **kwargs):
        self.terminal_requests.append({"method": "wait_for_exit", "terminalId": terminal_id})
        term = self.terminals[terminal_id]
        await term["proc"].wait()
        await term["pump"]
        status = self._status(term["proc"].returncode)
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(self, session_id, terminal_id, **kwargs):
        self.terminal_requests.append({"method": "kill", "terminalId": terminal_id})
        proc = self.terminals[terminal_id]["proc"]
        if proc.returncode is None:
            proc.kill()
        return KillTerminalResponse()

    async def release_terminal(self, session_id, terminal_id, **kwargs):
        self.terminal_requests.append({"method": "release", "terminalId": terminal_id})
        term = self.terminals.pop(terminal_id)
        if term["proc"].returncode is None:
            term["proc"].kill()
        self.shown[terminal_id] = bytes(term["out"]).decode("utf-8", "replace")
        return ReleaseTerminalResponse()

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
    editor.offer_terminal = bool(plan.get("terminal"))
    offered = editor.buffers is not None
    report = {"prompts": []}
    async with acp.spawn_agent_process(editor, plan["tern"], "acp", cwd=plan["cwd"], env=dict(os.environ)) as (
        conn,
        process,
    ):
        init = await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=offered, write_text_file=offered),
                terminal=editor.offer_terminal,
            ),
        )
        report["initialize"] = init.model_dump(mode="json", by_alias=True, exclude_none=True)
        editor.conn = conn
        servers = []
        if plan.get("extraServer"):
            cmd = plan["extraServer"]
            servers.append(McpServerStdio(name="extra", command=cmd[0], args=cmd[1:], env=[EnvVariable(name="X", value="1")]))
        if plan.get("scenario") == "load":
            listed = await conn.list_sessions(cwd=plan["cwd"])
            report["list"] = listed.model_dump(mode="json", by_alias=True, exclude_none=True)
            loaded = await conn.load_session(cwd=plan["cwd"], session_id=plan["sessionId"], mcp_servers=servers)
            report["load"] = loaded.model_dump(mode="json", by_alias=True, exclude_none=True) if loaded else None
            session_id = plan["sessionId"]
        else:
            session = await conn.new_session(cwd=plan["cwd"], mcp_servers=servers)
            session_id = session.session_id
            report["modes"] = session.modes.model_dump(mode="json", by_alias=True, exclude_none=True) if session.modes else None
        report["sessionId"] = session_id
        if plan.get("malformed"):
            parse_errors = []

            def observe(event):
                m = event.message
                if event.direction.value == "incoming" and m.get("id") is None and "error" in m:
                    parse_errors.append(m["error"])

            conn._conn.add_observer(observe)
            process.stdin.write(b"{not json\n")
            await process.stdin.drain()
            for _ in range(100):
                if parse_errors:
                    break
                await asyncio.sleep(0.05)
            report["malformed"] = parse_errors
            try:
                await conn._conn.send_request("session/frobnicate", {"sessionId": session_id})
                report["unknownMethod"] = None
            except acp.RequestError as e:
                report["unknownMethod"] = {"code": e.code, "message": str(e)}
        for p in plan.get("prompts", []):
            if isinstance(p, str):
                p = {"text": p}
            if p.get("mode"):
                await conn.set_session_mode(session_id=session_id, mode_id=p["mode"])
            editor.cancel_on = p.get("cancelOnCommand")
            editor.cancel_sent = False
            t0 = asyncio.get_running_loop().time()
            try:
                r = await conn.prompt(session_id=session_id, prompt=[TextContentBlock(type="text", text=p["text"])])
                report["prompts"].append(
                    {"stopReason": r.stop_reason, "ms": int((asyncio.get_running_loop().time() - t0) * 1000),
                     "cancelSent": editor.cancel_sent}
                )
            except acp.RequestError as e:
                report["prompts"].append({"error": str(e), "code": e.code})
        # Let the last notifications arrive (and tern release its terminals) before closing.
        await asyncio.sleep(0.2)
        for _ in range(100):
            if not editor.terminals:
                break
            await asyncio.sleep(0.1)
        process.stdin.close()
        report["exit"] = await asyncio.wait_for(process.wait(), 20)
    report["updates"] = editor.updates
    report["permissions"] = editor.permissions
    report["fsRequests"] = editor.fs_requests
    report["terminalRequests"] = editor.terminal_requests
    report["terminalOutput"] = editor.shown
    report["buffers"] = editor.buffers
    print(json.dumps(report))


asyncio.run(main())
