// The official SDK 2.x client (@modelcontextprotocol/client 2.4) against a running
// assentd, in each of its three version-negotiation modes and over both transports:
//   legacy           2025 `initialize` (the client's default)
//   auto             `server/discover` first, the modern era when the server offers it
//   pin 2026-07-28   the modern era exactly, no fallback (ERA_NEGOTIATION_FAILED otherwise)
//   stdio: `assentd --stdio` (the bridge), the agent measured by its uid
//   http:  Streamable HTTP with an agent key (Authorization: Bearer)
// For each: connect (and the era it negotiated), tools/list, an approval with its token,
// a rejection, an answer to an input request, a timeout; a reviewer decides through the
// real `assent` CLI. One TAP line per flow x mode x transport, and three task flows a
// reviewer approves after 90 s (see legacyTaskFlow). Each approval's token is written to
// STATE/sdk2-TRANSPORT-MODE.token for the shell test to verify offline.
// Usage: node sdk2_flows.mjs STATE BUILD URL KEY OTHER_KEY (another agent's, for the tasks it must not see)
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";

const [state, build, url, key, otherKey] = process.argv.slice(2);
let n = 0, failed = 0;
const ok = (cond, desc) => { n++; if (!cond) failed++; console.log(`${cond ? "ok" : "not ok"} ${n} - ${desc}`); };
const assent = (...args) => execFileSync(`${build}/assent`, ["--state", state, ...args], { encoding: "utf8" });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const short = (e) => String(e?.code ?? "") + " " + String(e?.message ?? e).replace(/\s+/g, " ").slice(0, 200);

async function pendingId(message) {
  for (let i = 0; i < 200; i++) {
    const hit = JSON.parse(assent("pending", "--json")).find((r) => r.message === message);
    if (hit) return hit.session_id;
    await sleep(50);
  }
  throw new Error(`request "${message}" never showed up in assent pending`);
}

const MODES = [
  { name: "legacy", negotiation: { mode: "legacy" }, era: "legacy" },
  { name: "auto", negotiation: { mode: "auto" }, era: "modern", version: "2026-07-28" },
  { name: "pin-2026-07-28", negotiation: { mode: { pin: "2026-07-28" } }, era: "modern", version: "2026-07-28" },
];

function transportFor(kind) {
  if (kind === "stdio")
    return new StdioClientTransport({
      command: `${build}/assentd`,
      args: ["--stdio", "--state", state],
      env: { ...process.env, ASSENT_SINGLE_USER: "1" },
      stderr: "inherit",
    });
  return new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
}

// The flows one connection runs; each returns [passed, detail].
function flows(client, tag, tokenFile) {
  const call = (args) => client.callTool({ name: "request_feedback", arguments: args }, { timeout: 60000 });
  return [
    ["tools/list names request_feedback", async () => {
      const names = (await client.listTools()).tools.map((t) => t.name);
      return [names.includes("request_feedback"), `tools: ${names.join(",")}`];
    }],
    ["an approval comes back approved, with a token", async () => {
      const msg = `${tag}: apply?`;
      const p = call({ type: "approval", message: msg });
      assent("approve", await pendingId(msg), "-m", "go");
      const sc = (await p).structuredContent;
      const good = sc?.approved === true && sc.status === "approved" &&
        typeof sc.approval_token === "string" && sc.approval_token.split(".").length === 3;
      if (good) writeFileSync(tokenFile, sc.approval_token);
      return [good, `got ${JSON.stringify(sc)?.slice(0, 160)}`];
    }],
    ["a rejection comes back rejected with its reason, no token", async () => {
      const msg = `${tag}: drop?`;
      const p = call({ type: "approval", message: msg });
      assent("reject", await pendingId(msg), "-m", "not today");
      const sc = (await p).structuredContent;
      return [sc?.approved === false && sc.status === "rejected" && sc.response === "not today" && !sc.approval_token,
        `got ${JSON.stringify(sc)?.slice(0, 160)}`];
    }],
    ["an input request gets the reviewer's answer", async () => {
      const msg = `${tag}: which branch?`;
      const p = call({ type: "input", message: msg, default: "main" });
      assent("answer", await pendingId(msg), "release-2.4");
      const sc = (await p).structuredContent;
      return [sc?.status === "answered" && sc.response === "release-2.4", `got ${JSON.stringify(sc)?.slice(0, 160)}`];
    }],
    ["nobody answers: a timeout, approved false", async () => {
      const sc = (await call({ type: "approval", message: `${tag}: nobody answers`, timeout_override: 1 })).structuredContent;
      return [sc?.status === "timeout" && sc.error === "timeout" && sc.approved === false,
        `got ${JSON.stringify(sc)?.slice(0, 160)}`];
    }],
  ];
}

// Tasks: a reviewer decides after 90 s, and a client whose requests keep the SDK's default
// 60 s timeout still collects the decision. The 2.4 client has no tasks API: raw requests,
// results taken as they come (asIs). In the modern era it cannot take a task at all: its
// result decoder refuses `resultType: "task"` on tools/call (UNSUPPORTED_RESULT_TYPE, in
// @modelcontextprotocol/client's decodeResult), so with it the flow is the 2025-11-25 core
// one (legacy era: `params.task`, tasks/get, tasks/result), on both transports; the
// 2026-07-28 extension (io.modelcontextprotocol/tasks) is driven with raw JSON-RPC over HTTP
// (modernTaskFlow). Over HTTP, another agent's tasks/get on the task is "not found" (-32602).
const asIs = { "~standard": { version: 1, vendor: "assent-test", validate: (value) => ({ value }) } };
const TASKS = "io.modelcontextprotocol/tasks";
const TASK_WAIT = 90000, MID = 65000;

// Poll get() every interval until the task leaves `working`; returns the last answer.
async function untilDone(get, interval) {
  const every = Math.min(Math.max(Number(interval) || 1000, 100), 5000);
  for (let i = 0; i < 30000 / every; i++) {
    const t = await get();
    if (t?.status !== "working") return t;
    await sleep(every);
  }
  return { status: "still working 30 s after the approval" };
}

async function foreignGet(kind, taskId, request) {
  if (kind !== "http" || !otherKey) return null;
  try {
    const t = await request(taskId);
    return `another agent's tasks/get found it: ${JSON.stringify(t)?.slice(0, 160)}`;
  } catch (e) {
    return (e?.code === -32602 || /-32602/.test(String(e?.message))) ? null : `another agent's tasks/get: ${short(e)}`;
  }
}

async function legacyTaskFlow(kind) {
  const msg = `sdk2 ${kind} legacy task: approve after 90 s`;
  const client = new Client({ name: `sdk2-${kind}-task`, version: "2.4.0" });
  let other = null;
  try {
    await client.connect(transportFor(kind));
    const caps = client.getServerCapabilities();
    if (caps?.tasks?.requests?.tools?.call === undefined)
      return [false, `initialize: no capabilities.tasks.requests.tools.call (${JSON.stringify(caps)?.slice(0, 160)})`];
    const tool = (await client.listTools()).tools.find((t) => t.name === "request_feedback");
    if (!["optional", "required"].includes(tool?.execution?.taskSupport))
      return [false, `tools/list: request_feedback execution ${JSON.stringify(tool?.execution)}, no taskSupport`];
    const t0 = Date.now();
    const created = await client.request({ method: "tools/call", params: { name: "request_feedback",
      arguments: { type: "approval", message: msg }, task: { ttl: 600000 } } }, asIs);
    const task = created?.task;
    if (typeof task?.taskId !== "string" || task.status !== "working")
      return [false, `tools/call with params.task did not create a working task: ${JSON.stringify(created)?.slice(0, 200)}`];
    const get = () => client.request({ method: "tasks/get", params: { taskId: task.taskId } }, asIs);
    const sid = await pendingId(msg);
    if (kind === "http" && otherKey) {
      other = new Client({ name: "sdk2-other", version: "2.4.0" });
      await other.connect(new StreamableHTTPClientTransport(new URL(url),
        { requestInit: { headers: { Authorization: `Bearer ${otherKey}` } } }));
      const bad = await foreignGet(kind, task.taskId, (id) => other.request({ method: "tasks/get", params: { taskId: id } }, asIs));
      if (bad) return [false, bad];
    }
    await sleep(Math.max(0, t0 + MID - Date.now()));
    const mid = await get();
    if (mid?.status !== "working") return [false, `after 65 s tasks/get says ${JSON.stringify(mid)?.slice(0, 200)}`];
    await sleep(Math.max(0, t0 + TASK_WAIT - Date.now()));
    assent("approve", sid, "-m", "after 90 s");
    const done = await untilDone(get, task.pollInterval);
    if (done?.status !== "completed") return [false, `tasks/get after the approval: ${JSON.stringify(done)?.slice(0, 200)}`];
    const res = await client.request({ method: "tasks/result", params: { taskId: task.taskId } }, asIs);
    const sc = res?.structuredContent;
    const good = sc?.approved === true && typeof sc.approval_token === "string";
    if (good) writeFileSync(`${state}/sdk2-${kind}-task.token`, sc.approval_token);
    return [good, `tasks/result: ${JSON.stringify(res)?.slice(0, 200)}`];
  } catch (e) {
    return [false, `threw: ${short(e)}`];
  } finally {
    await client.close().catch(() => {});
    if (other) await other.close().catch(() => {});
  }
}

// One 2026-07-28 request over HTTP as the revision has it: _meta in the body, the routing
// headers, the answer as JSON or as an SSE stream. Throws {code, message} on a JSON-RPC error.
let rawId = 1000;
async function rawModern(bearer, method, params, name, caps) {
  const id = rawId++;
  const body = { jsonrpc: "2.0", id, method, params: { ...params, _meta: {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": caps,
    "io.modelcontextprotocol/clientInfo": { name: "sdk2-flows-raw", version: "1" } } } };
  const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method, Authorization: `Bearer ${bearer}` };
  if (name !== undefined) headers["Mcp-Name"] = name;
  const r = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
  const text = await r.text();
  const msgs = (r.headers.get("content-type") ?? "").startsWith("text/event-stream")
    ? text.split(/\r?\n\r?\n/).map((ev) => ev.split(/\r?\n/).filter((l) => l.startsWith("data:"))
      .map((l) => l.slice(5).trimStart()).join("\n")).filter(Boolean).map((d) => JSON.parse(d))
    : [JSON.parse(text)];
  const m = msgs.find((x) => x?.id === id);
  if (!m) throw { code: `HTTP ${r.status}`, message: text.slice(0, 200) };
  if (m.error) throw m.error;
  return m.result;
}

async function modernTaskFlow() {
  const msg = "raw http 2026-07-28 extension task: approve after 90 s";
  const caps = { extensions: { [TASKS]: {} } };
  try {
    const disc = await rawModern(key, "server/discover", {}, undefined, caps);
    if (!disc?.capabilities?.extensions?.[TASKS]) return [false, `server/discover offers no ${TASKS}: ${JSON.stringify(disc)?.slice(0, 200)}`];
    const t0 = Date.now();
    const created = await rawModern(key, "tools/call", { name: "request_feedback", arguments: { type: "approval", message: msg } },
      "request_feedback", caps);
    if (created?.resultType !== "task" || typeof created.taskId !== "string" || created.status !== "working" ||
        !Number.isInteger(created.ttlMs) || !Number.isInteger(created.pollIntervalMs ?? 0))
      return [false, `tools/call did not create a working task (resultType task, taskId, integer ttlMs): ${JSON.stringify(created)?.slice(0, 200)}`];
    const get = () => rawModern(key, "tasks/get", { taskId: created.taskId }, created.taskId, caps);
    const sid = await pendingId(msg);
    const bad = await foreignGet("http", created.taskId, (id) => rawModern(otherKey, "tasks/get", { taskId: id }, id, caps));
    if (bad) return [false, bad];
    await sleep(Math.max(0, t0 + MID - Date.now()));
    const mid = await get();
    if (mid?.status !== "working" || mid.resultType !== "complete") return [false, `after 65 s tasks/get says ${JSON.stringify(mid)?.slice(0, 200)}`];
    await sleep(Math.max(0, t0 + TASK_WAIT - Date.now()));
    assent("approve", sid, "-m", "after 90 s");
    const done = await untilDone(get, created.pollIntervalMs);
    const sc = done?.result?.structuredContent;
    const good = done?.status === "completed" && sc?.approved === true && typeof sc.approval_token === "string";
    if (good) writeFileSync(`${state}/sdk2-http-modern-task.token`, sc.approval_token);
    return [good, `tasks/get after the approval: ${JSON.stringify(done)?.slice(0, 200)}`];
  } catch (e) {
    return [false, `threw: ${short(e)}`];
  }
}

const taskRuns = [
  legacyTaskFlow("stdio").then((r) => ["sdk2 stdio legacy: with 2025-11-25 tasks (params.task)", ...r]),
  legacyTaskFlow("http").then((r) => ["sdk2 http legacy: with 2025-11-25 tasks (params.task), not found for another agent", ...r]),
  modernTaskFlow().then((r) => ["raw JSON-RPC http 2026-07-28: with the tasks extension, not found for another agent", ...r]),
];

for (const kind of ["stdio", "http"]) {
  for (const mode of MODES) {
    const tag = `sdk2 ${kind} ${mode.name}`;
    const client = new Client({ name: `sdk2-${kind}-${mode.name}`, version: "2.4.0" },
      { versionNegotiation: mode.negotiation });
    let connErr = null;
    try {
      await client.connect(transportFor(kind), { timeout: 30000 });
    } catch (e) {
      connErr = e;
    }
    const era = connErr ? undefined : client.getProtocolEra();
    const ver = connErr ? undefined : client.getNegotiatedProtocolVersion();
    const eraOk = !connErr && era === mode.era && (!mode.version || ver === mode.version) &&
      client.getServerVersion()?.name === "assent";
    ok(eraOk, `${tag}: connects in the ${mode.era} era${mode.version ? " at " + mode.version : ""} ` +
      `(${connErr ? "connect failed: " + short(connErr) : `era ${era}, version ${ver}, server ${client.getServerVersion()?.name}`})`);
    for (const [desc, run] of flows(client, tag, `${state}/sdk2-${kind}-${mode.name}.token`)) {
      if (connErr) {
        ok(false, `${tag}: ${desc} (not connected: ${short(connErr)})`);
        continue;
      }
      try {
        const [good, detail] = await run();
        ok(good, `${tag}: ${desc}${good ? "" : " (" + detail + ")"}`);
      } catch (e) {
        ok(false, `${tag}: ${desc} (threw: ${short(e)})`);
      }
    }
    await client.close().catch(() => {});
  }
}
for (const [what, good, detail] of await Promise.all(taskRuns))
  ok(good, `${what}: an approval after 90 s reaches a client at its default 60 s request timeout` +
    `${good ? "" : " (" + detail + ")"}`);
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
