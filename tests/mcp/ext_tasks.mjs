// The MCP Tasks extension's own client package (@modelcontextprotocol/ext-tasks 0.2.2) over the
// official SDK 2.4 client, against a running assentd over Streamable HTTP (issue 29): a
// `request_feedback` and a held gated call (an upstream's echo behind the gate) are each called
// as tasks, in the 2026-07-28 era (the package's V2 path, which needs a raw request path and the
// request framing) and in the 2025-11-25 one (params.task), and a reviewer approves each after
// 70 s, past the SDK's 60 s default request timeout; the package must settle every one with the
// tool's result. The four run at once, so the script takes about 75 s.
// Prints TAP. Usage: node ext_tasks.mjs STATE BUILD URL AGENT_KEY GATED_TOOL
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createTaskSessionFromClient, resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";
import { execFileSync } from "node:child_process";
import { tap } from "./tap.mjs";

const [state, build, url, key, gated] = process.argv.slice(2);
const T = tap(0), { ok } = T;
const APPROVE_AFTER = 70000;
const assent = (...args) => execFileSync(`${build}/assent`, ["--state", state, ...args], { encoding: "utf8" });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const short = (e) => (String(e?.code ?? "") + " " + String(e?.message ?? e) + (e?.cause ? ` (cause: ${e.cause?.message ?? JSON.stringify(e.cause)})` : "")).replace(/\s+/g, " ").slice(0, 400);

// The held request whose view holds marker, once it waits (a call's view has the arguments).
async function pendingId(marker) {
  for (let i = 0; i < 600; i++) {
    for (const r of JSON.parse(assent("pending", "--json"))) {
      if (r.message === marker) return r.session_id;
      if (r.type === "call" && assent("show", r.session_id, "--json").includes(marker)) return r.session_id;
    }
    await sleep(100);
  }
  throw new Error(`"${marker}" never showed up in assent pending`);
}

// The raw request path the package's V2 (2026-07-28) session needs: one JSON-RPC request
// POSTed as the revision has it (routing headers beside the body), its response back.
// The package hands over {method, params}: the coordinator numbers it.
let rawId = 1;
async function rawDispatch(req) {
  const request = { jsonrpc: "2.0", id: `raw-${rawId++}`, ...req };
  const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": request.method, Authorization: `Bearer ${key}` };
  const p = request.params ?? {};
  if (request.method === "tools/call") headers["Mcp-Name"] = p.name;
  else if (typeof p.taskId === "string") headers["Mcp-Name"] = p.taskId;
  const r = await fetch(url, { method: "POST", headers, body: JSON.stringify(request) });
  const text = await r.text();
  const msgs = (r.headers.get("content-type") ?? "").startsWith("text/event-stream")
    ? text.split(/\r?\n\r?\n/).map((ev) => ev.split(/\r?\n/).filter((l) => l.startsWith("data:"))
      .map((l) => l.slice(5).trimStart()).join("\n")).filter(Boolean).map((d) => JSON.parse(d))
    : [JSON.parse(text)];
  const m = msgs.find((x) => x?.id === request.id);
  if (!m) throw new Error(`HTTP ${r.status}: no response to ${request.method}: ${text.slice(0, 200)}`);
  return m;
}

async function connect(era) {
  const negotiation = era === "2026-07-28" ? { mode: { pin: "2026-07-28" } } : { mode: "legacy" };
  const client = new Client({ name: `ext-tasks-${era}`, version: "2.4.0" }, { versionNegotiation: negotiation });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return client;
}

// One tool called as a task by the package; approved after APPROVE_AFTER; its settled result.
async function flow(era, tool, args, marker, check) {
  const client = await connect(era);
  const opts = { endpointId: `assent-${era}` };
  if (era === "2026-07-28")
    Object.assign(opts, { rawDispatch, v2RequestFraming: { protocolVersion: "2026-07-28",
      clientInfo: { name: `ext-tasks-${era}`, version: "2.4.0" }, clientCapabilities: {} } });
  const session = createTaskSessionFromClient(client, opts);
  try {
    const t0 = Date.now();
    // A 2025-11-25 tool whose taskSupport is "optional" is a task when the caller prefers one;
    // in 2026-07-28 the server decides (callTool resolves once the call is a task or done).
    const execution = await session.callTool(tool, args, { task: { preference: "prefer" } });
    const kind = execution.kind;
    const sid = await pendingId(marker);
    await sleep(Math.max(0, t0 + APPROVE_AFTER - Date.now()));
    assent("approve", sid, "-m", `after ${APPROVE_AFTER / 1000} s`);
    const { outcome } = await execution.settle();
    const result = resultFromTaskOutcome(outcome);
    const waited = Math.round((Date.now() - t0) / 1000);
    return [kind === "task" && check(result), `${kind}, settled after ${waited} s: ${JSON.stringify(result)?.slice(0, 200)}`];
  } catch (e) {
    return [false, `threw: ${short(e)}`];
  } finally {
    await session.close().catch(() => {});
    await client.close().catch(() => {});
  }
}

const feedback = (r) => r?.structuredContent?.approved === true && typeof r.structuredContent.approval_token === "string";
const runs = [];
for (const era of ["2026-07-28", "2025-11-25"]) {
  const msg = `ext-tasks ${era}: request_feedback approved after 70 s`;
  runs.push(flow(era, "request_feedback", { type: "approval", message: msg }, msg, feedback)
    .then((r) => [`ext-tasks ${era}: request_feedback as a task, approved after 70 s, settles with the approval`, ...r]));
  const text = `ext-tasks ${era} gated echo`;
  runs.push(flow(era, gated, { text }, text, (r) => !r?.isError && JSON.stringify(r?.content ?? []).includes(text))
    .then((r) => [`ext-tasks ${era}: a held gated call as a task, approved after 70 s, settles with the upstream's result`, ...r]));
}
for (const [desc, good, detail] of await Promise.all(runs)) ok(good, `${desc} (${detail})`);
T.end();
