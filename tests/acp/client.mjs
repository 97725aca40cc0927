// An editor driving `tern acp`, written with the official ACP TypeScript SDK
// (@agentclientprotocol/sdk, installed into .deps/acp by .ci/install-test-deps): every message
// tern sends is parsed and validated by the SDK, so a field tern spells wrong fails here.
//
// usage: node client.mjs PLAN_JSON
//   PLAN = {tern, cwd, scenario: "session" | "load", answers: [optionId…], extraServer: [cmd, …args],
//           mcpServers?: [ACP McpServer objects, e.g. {type: "http", name, url, headers}],
//           cancelOnPermission?: toolCallId (cancel the turn when asked about that call),
//           sessionId (load), prompts: [{text | blocks (ACP content blocks), cancelOnCommand?, mode?}],
//           buffers?: {absPath: text}, fsOffer?: {readTextFile, writeTextFile}}
//   With `buffers`, the client offers fs.readTextFile/writeTextFile over that in-memory map (a
//   path not in it is read from disk, like an editor without the file open) and reports every
//   request (`fsRequests`) and the buffers at the end.
//   With `terminal: true`, the client offers terminals and runs each `terminal/create` for real,
//   as an editor does (child_process.spawn of the command and args it is given, in its cwd, with
//   this process's environment plus the request's `env`; stdout and stderr captured and cut from
//   the front at `outputByteLimit`; `terminal/kill` sends SIGTERM, as Node's `kill()` does). `terminalRefuse: "why"` makes
//   `terminal/create` fail with that message. Every terminal request is reported
//   (`terminalRequests`), and each terminal's pid, exit and output (`terminals`). A prompt's
//   `cancelOnTerminal: true` cancels the turn once a tool_call_update embeds a terminal,
//   `cancelOnOutput: "text"` once a terminal has printed that text; `terminalKillSignal` replaces
//   SIGTERM for `terminal/kill`.
import { readFileSync } from "node:fs";
// Prints one JSON report on stdout: what tern answered and every update it sent.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
// The SDK lives in .deps/acp (git-ignored), not beside this script: imported by its path.
const acp = await import(
  new URL("../../.deps/acp/node_modules/@agentclientprotocol/sdk/dist/v1/stable/acp.js", import.meta.url)
);

const plan = JSON.parse(process.argv[2]);
const child = spawn(plan.tern, ["acp"], { cwd: plan.cwd, stdio: ["pipe", "pipe", "pipe"] });
let stderr = "";
child.stderr.on("data", (d) => (stderr += d));
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));

const report = { updates: [], permissions: [], prompts: [], errors: [] };
const answers = [...(plan.answers ?? [])];
const buffers = plan.buffers ? { ...plan.buffers } : null;
report.fsRequests = [];
let cancelOn = null; // a command string: cancel when its call is in progress
let cancelOnTerminal = false; // cancel once a tool call embeds a terminal
let cancelOnOutput = null; // cancel once a terminal's output contains this
report.terminalRequests = [];
report.terminals = {};
const terminals = new Map(); // id → {child, chunks, bytes, limit, exit: Promise}
let nextTerminal = 0;

// The output kept: the last `limit` bytes, cut at a UTF-8 character boundary (ACP terminals).
function kept(t) {
  const all = Buffer.concat(t.chunks);
  if (t.limit == null || all.length <= t.limit) return { output: all.toString("utf8"), truncated: false };
  let start = all.length - t.limit;
  while (start < all.length && (all[start] & 0xc0) === 0x80) start++;
  return { output: all.subarray(start).toString("utf8"), truncated: true };
}
function terminal(params) {
  const t = terminals.get(params.terminalId);
  if (!t) throw new Error(`no terminal ${params.terminalId}`);
  return t;
}
let sessionId = null;
const started = Date.now();

const app = acp
  .client({ name: "tern-e2e" })
  .onRequest("session/request_permission", ({ params, agent }) => {
    // The user stops the turn instead of answering: ACP's order is session/cancel, then the
    // pending request answered `cancelled`.
    if (plan.cancelOnPermission && plan.cancelOnPermission === params.toolCall.toolCallId) {
      report.permissions.push({ toolCallId: params.toolCall.toolCallId, answered: "cancelled" });
      agent.notify("session/cancel", { sessionId: params.sessionId });
      return { outcome: { outcome: "cancelled" } };
    }
    const optionId = answers.shift() ?? "reject_once";
    report.permissions.push({
      toolCallId: params.toolCall.toolCallId,
      options: params.options.map((o) => `${o.optionId}:${o.kind}`),
      answered: optionId,
    });
    return { outcome: { outcome: "selected", optionId } };
  })
  .onRequest("fs/read_text_file", ({ params }) => {
    report.fsRequests.push({ method: "read", path: params.path, line: params.line, limit: params.limit });
    if (!buffers) throw new Error("fs/read_text_file was not offered");
    const text = params.path in buffers ? buffers[params.path] : readFileSync(params.path, "utf8");
    return { content: text };
  })
  .onRequest("fs/write_text_file", ({ params }) => {
    report.fsRequests.push({ method: "write", path: params.path, content: params.content });
    if (!buffers) throw new Error("fs/write_text_file was not offered");
    buffers[params.path] = params.content;
    return {};
  })
  .onRequest("terminal/create", ({ params, agent }) => {
    report.terminalRequests.push({ ms: Date.now() - started, method: "create", ...params });
    if (!plan.terminal) throw new Error("terminal/create was not offered");
    if (plan.terminalRefuse) throw new Error(plan.terminalRefuse);
    const id = `term-${++nextTerminal}`;
    const env = { ...process.env };
    for (const v of params.env ?? []) env[v.name] = v.value;
    const child = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? plan.cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    const t = { child, chunks: [], limit: params.outputByteLimit ?? null };
    const seen = (d) => {
      t.chunks.push(d);
      // The command is running (it printed the marker): the user cancels the turn now.
      if (cancelOnOutput && kept(t).output.includes(cancelOnOutput)) {
        cancelOnOutput = null;
        report.cancelSentMs = Date.now() - started;
        agent.notify("session/cancel", { sessionId: params.sessionId });
      }
    };
    child.stdout.on("data", seen);
    child.stderr.on("data", seen);
    t.exit = new Promise((resolve) =>
      child.on("close", (code, signal) => resolve({ exitCode: code, signal: signal ?? null })),
    );
    terminals.set(id, t);
    report.terminals[id] = { pid: child.pid, command: params.command, args: params.args };
    return { terminalId: id };
  })
  .onRequest("terminal/output", ({ params }) => {
    report.terminalRequests.push({ ms: Date.now() - started, method: "output", terminalId: params.terminalId });
    const t = terminal(params);
    const status = t.status ? { exitStatus: t.status } : {};
    return { ...kept(t), ...status };
  })
  .onRequest("terminal/wait_for_exit", async ({ params }) => {
    report.terminalRequests.push({ ms: Date.now() - started, method: "wait_for_exit", terminalId: params.terminalId });
    const t = terminal(params);
    t.status = await t.exit;
    report.terminals[params.terminalId].exit = t.status;
    report.terminals[params.terminalId].output = kept(t).output;
    return t.status;
  })
  .onRequest("terminal/kill", ({ params }) => {
    report.terminalRequests.push({ ms: Date.now() - started, method: "kill", terminalId: params.terminalId });
    const t = terminal(params);
    report.terminals[params.terminalId].runningAtKill = t.child.exitCode === null && t.child.signalCode === null;
    t.child.kill(plan.terminalKillSignal ?? "SIGTERM");
    return {};
  })
  .onRequest("terminal/release", ({ params }) => {
    report.terminalRequests.push({ ms: Date.now() - started, method: "release", terminalId: params.terminalId });
    const t = terminal(params);
    t.child.kill("SIGKILL");
    terminals.delete(params.terminalId);
    report.terminals[params.terminalId].released = true;
    return {};
  })
  .onNotification("session/update", ({ params, agent }) => {
    const u = params.update;
    report.updates.push({ ms: Date.now() - started, sessionId: params.sessionId, ...u });
    if (
      cancelOnTerminal &&
      u.sessionUpdate === "tool_call_update" &&
      (u.content ?? []).some((c) => c.type === "terminal")
    ) {
      cancelOnTerminal = false;
      report.cancelSentMs = Date.now() - started;
      agent.notify("session/cancel", { sessionId: params.sessionId });
    }
    if (
      cancelOn &&
      u.sessionUpdate === "tool_call_update" &&
      u.status === "in_progress" &&
      report.updates.some(
        (x) => x.sessionUpdate === "tool_call" && x.toolCallId === u.toolCallId && x.rawInput?.command === cancelOn,
      )
    ) {
      cancelOn = null;
      report.cancelSentMs = Date.now() - started;
      agent.notify("session/cancel", { sessionId: params.sessionId });
    }
  });

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
try {
  await app.connectWith(stream, async (ctx) => {
    report.initialize = await ctx.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {
        fs: plan.fsOffer ?? { readTextFile: !!buffers, writeTextFile: !!buffers },
        terminal: !!plan.terminal,
      },
      clientInfo: { name: "tern-e2e", version: "1" },
    });
    report.firstResponseMs = Date.now() - started;
    const mcpServers = plan.extraServer
      ? [{ name: "extra", command: plan.extraServer[0], args: plan.extraServer.slice(1), env: [] }]
      : [];
    // More servers as ACP `McpServer` objects, as given (e.g. `{type: "http", name, url, headers}`).
    mcpServers.push(...(plan.mcpServers ?? []));
    if (plan.scenario === "load") {
      report.list = await ctx.request("session/list", { cwd: plan.cwd });
      report.load = await ctx.request("session/load", { sessionId: plan.sessionId, cwd: plan.cwd, mcpServers });
      sessionId = plan.sessionId;
    } else {
      report.session = await ctx.request("session/new", { cwd: plan.cwd, mcpServers });
      sessionId = report.session.sessionId;
    }
    for (const p of plan.prompts ?? []) {
      if (p.mode) {
        report.setMode = await ctx.request("session/set_mode", { sessionId, modeId: p.mode });
      }
      cancelOn = p.cancelOnCommand ?? null;
      cancelOnTerminal = !!p.cancelOnTerminal;
      cancelOnOutput = p.cancelOnOutput ?? null;
      const t0 = Date.now();
      try {
        const prompt = p.blocks ?? [{ type: "text", text: p.text }];
        const r = await ctx.request("session/prompt", { sessionId, prompt });
        report.prompts.push({ stopReason: r.stopReason, ms: Date.now() - t0 });
      } catch (e) {
        report.prompts.push({ error: String(e?.message ?? e), code: e?.code });
      }
    }
    // tern releases a terminal once the call's last update has gone out: give it the time.
    for (let i = 0; i < 100 && terminals.size > 0; i++) await new Promise((r) => setTimeout(r, 100));
    try {
      await ctx.request("session/frobnicate", { sessionId });
    } catch (e) {
      report.unknownMethod = { code: e?.code, message: String(e?.message ?? e) };
    }
  });
} catch (e) {
  report.errors.push(String(e?.stack ?? e));
}
// The editor hangs up (the SDK leaves the pipe open): tern must exit on its own.
child.stdin.end();
const timer = setTimeout(() => child.kill("SIGKILL"), 20000);
report.exit = await exited;
clearTimeout(timer);
report.exitMs = Date.now() - started;
report.stderr = stderr;
report.buffers = buffers;
process.stdout.write(JSON.stringify(report) + "\n");
