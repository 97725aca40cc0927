// An editor driving `tern acp`, written with the official ACP TypeScript SDK
// (@agentclientprotocol/sdk, installed into .deps/acp by .ci/install-test-deps): every message
// tern sends is parsed and validated by the SDK, so a field tern spells wrong fails here.
//
// usage: node client.mjs PLAN_JSON
//   PLAN = {tern, cwd, scenario: "session" | "load", answers: [optionId…], extraServer: [cmd, …args],
//           sessionId (load), prompts: [{text | blocks (ACP content blocks), cancelOnCommand?, mode?}],
//           buffers?: {absPath: text}, fsOffer?: {readTextFile, writeTextFile}}
//   With `buffers`, the client offers fs.readTextFile/writeTextFile over that in-memory map (a
//   path not in it is read from disk, like an editor without the file open) and reports every
//   request (`fsRequests`) and the buffers at the end.
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
let sessionId = null;
const started = Date.now();

const app = acp
  .client({ name: "tern-e2e" })
  .onRequest("session/request_permission", ({ params }) => {
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
  .onNotification("session/update", ({ params, agent }) => {
    const u = params.update;
    report.updates.push({ ms: Date.now() - started, sessionId: params.sessionId, ...u });
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
        terminal: false,
      },
      clientInfo: { name: "tern-e2e", version: "1" },
    });
    report.firstResponseMs = Date.now() - started;
    const mcpServers = plan.extraServer
      ? [{ name: "extra", command: plan.extraServer[0], args: plan.extraServer.slice(1), env: [] }]
      : [];
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
      const t0 = Date.now();
      try {
        const prompt = p.blocks ?? [{ type: "text", text: p.text }];
        const r = await ctx.request("session/prompt", { sessionId, prompt });
        report.prompts.push({ stopReason: r.stopReason, ms: Date.now() - t0 });
      } catch (e) {
        report.prompts.push({ error: String(e?.message ?? e), code: e?.code });
      }
    }
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
