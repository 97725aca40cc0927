"""An MCP server (official Python SDK, 2026-07-28 era) that serves the tasks extension
(SEP-2663, `io.modelcontextprotocol/tasks`) through the SDK's own extension API.

The Python SDK ships the extension mechanism (`Extension`: new request methods and a
`tools/call` interceptor) but not the tasks extension itself, so this file writes it the way
the SDK means extensions to be written. The wire shapes follow SEP-2663 as the official
conformance suite checks them: a flat `CreateTaskResult` (`resultType: "task"`, `taskId`,
`status`, `ttlMs`, `pollIntervalMs`, timestamps), `tasks/get` answering a `DetailedTask`
(`inputRequests` while `input_required`, the inlined `result` once `completed`, `error` once
`failed`), `tasks/update` and `tasks/cancel` answering an empty `{resultType: "complete"}` ack,
-32602 for an unknown task, -32021 when the request did not declare the extension.

Tool `survey {steps}` always becomes a task: `steps` steps of 200 ms (status message `step i of
n`), then it asks the client for a `name` (an `elicitation/create` input request), then it
answers `survey done: <answer JSON>`. With `--audit FILE`, a cancelled task appends
`{"cancelled": "survey"}` to FILE.
"""

import asyncio
import datetime
import json
import sys
import uuid
from typing import Any

from mcp.server import MCPServer
from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError
from mcp_types import RequestParams

TASKS = "io.modelcontextprotocol/tasks"
CLIENT_CAPS = "io.modelcontextprotocol/clientCapabilities"
POLL_MS = 120
AUDIT = sys.argv[sys.argv.index("--audit") + 1] if "--audit" in sys.argv else None


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


class TaskIdParams(RequestParams):
    task_id: str


class UpdateParams(RequestParams):
    task_id: str
    input_responses: dict[str, Any]


def declared(meta: Any) -> bool:
    """Whether the request's `_meta` client capabilities name the tasks extension."""
    if meta is None:
        return False
    if not isinstance(meta, dict):
        meta = dict(meta)
    caps = meta.get(CLIENT_CAPS) or {}
    return TASKS in (caps.get("extensions") or {})


class Task:
    def __init__(self) -> None:
        self.id = str(uuid.uuid4())
        self.created = now()
        self.updated = self.created
        self.status = "working"
        self.message: str | None = None
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.pending: dict[str, dict[str, Any]] = {}
        self.answers: dict[str, asyncio.Future[Any]] = {}
        self.job: asyncio.Task[None] | None = None

    def touch(self, status: str | None = None, message: str | None = None) -> None:
        if status is not None:
            self.status = status
        if message is not None:
            self.message = message
        self.updated = now()

    def base(self) -> dict[str, Any]:
        out: dict[str, Any] = {"taskId": self.id, "status": self.status, "createdAt": self.created,
                               "lastUpdatedAt": self.updated, "ttlMs": 300000, "pollIntervalMs": POLL_MS}
        if self.message is not None:
            out["statusMessage"] = self.message
        return out

    def detailed(self) -> dict[str, Any]:
        out = self.base()
        if self.status == "input_required":
            out["inputRequests"] = dict(self.pending)
        elif self.status == "completed":
            out["result"] = self.result
        elif self.status == "failed":
            out["error"] = self.error
        return out


class TasksExtension(Extension):
    identifier = TASKS

    def __init__(self) -> None:
        self.tasks: dict[str, Task] = {}

    def task(self, params: Any) -> Task:
        task = self.tasks.get(params.task_id)
        if task is None:
            raise MCPError(-32602, f"unknown task {params.task_id!r}")
        return task

    def gate(self, params: Any) -> None:
        if not declared(params.meta):
            raise MCPError(-32021, "Missing required client capability",
                           {"requiredCapabilities": {"extensions": {TASKS: {}}}})

    async def get(self, ctx: Any, params: TaskIdParams) -> dict[str, Any]:
        self.gate(params)
        return self.task(params).detailed()

    async def update(self, ctx: Any, params: UpdateParams) -> dict[str, Any]:
        self.gate(params)
        task = self.task(params)
        for key, value in params.input_responses.items():
            future = task.answers.get(key)
            if future is not None and not future.done():
                future.set_result(value)
        return {"resultType": "complete"}

    async def cancel(self, ctx: Any, params: TaskIdParams) -> dict[str, Any]:
        self.gate(params)
        task = self.task(params)
        if task.status not in ("completed", "failed", "cancelled"):
            if task.job is not None:
                task.job.cancel()
            task.pending.clear()
            task.touch("cancelled")
            if AUDIT:
                with open(AUDIT, "a") as f:
                    f.write(json.dumps({"cancelled": "survey"}) + "\n")
        return {"resultType": "complete"}

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding("tasks/get", TaskIdParams, self.get),
            MethodBinding("tasks/update", UpdateParams, self.update),
            MethodBinding("tasks/cancel", TaskIdParams, self.cancel),
        ]

    async def ask(self, task: Task, key: str, request: dict[str, Any]) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        task.answers[key] = future
        task.pending[key] = request
        task.touch("input_required")
        answer = await future
        task.pending.pop(key, None)
        task.touch("working")
        return answer

    async def run(self, task: Task, steps: int) -> None:
        try:
            for i in range(1, steps + 1):
                await asyncio.sleep(0.2)
                task.touch(message=f"step {i} of {steps}")
            answer = await self.ask(task, "name", {"method": "elicitation/create", "params": {
                "mode": "form", "message": "Who is asking?",
                "requestedSchema": {"type": "object", "properties": {
                    "name": {"type": "string", "title": "Name"}}, "required": ["name"]}}})
            task.result = {"content": [{"type": "text",
                                        "text": f"survey done: {json.dumps(answer, sort_keys=True)}"}],
                           "isError": False}
            task.touch("completed")
        except asyncio.CancelledError:
            pass
        except Exception as e:  # a protocol-level failure of the job: `failed` with the error
            task.error = {"code": -32603, "message": str(e)}
            task.touch("failed")

    async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
        if params.name != "survey":
            return await call_next(ctx)
        if not declared(params.meta):
            raise MCPError(-32021, "Missing required client capability",
                           {"requiredCapabilities": {"extensions": {TASKS: {}}}})
        steps = int((params.arguments or {}).get("steps", 2))
        task = Task()
        task.message = f"step 0 of {steps}"
        self.tasks[task.id] = task
        task.job = asyncio.get_running_loop().create_task(self.run(task, steps))
        return {"resultType": "task", **task.base()}


server = MCPServer("py-tasks", extensions=[TasksExtension()])


@server.tool()
def survey(steps: int = 2) -> str:
    """A survey that runs as a task: some steps, then a question (SEP-2663)."""
    return "not reached: the tasks extension makes a task of every call"


if __name__ == "__main__":
    server.run("stdio")
