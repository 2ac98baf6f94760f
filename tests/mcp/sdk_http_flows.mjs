// The official MCP TypeScript SDK client over Streamable HTTP with an agent key,
// against a running assentd: the flows of sdk_flows.mjs, a long wait with progress
// on an SSE stream, a stdio agent and an HTTP agent in one queue, and the refusals.
// Prints TAP. Usage: node sdk_http_flows.mjs STATE BUILD URL KEY REMOVED_KEY
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";

const [state, build, url, key, removedKey] = process.argv.slice(2);
let n = 0, failed = 0;
const ok = (cond, desc) => { n++; if (!cond) failed++; console.log(`${cond ? "ok" : "not ok"} ${n} - ${desc}`); };
const assent = (...args) => execFileSync(`${build}/assent`, ["--state", state, ...args], { encoding: "utf8" });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function pendingId(message) {
  for (let i = 0; i < 100; i++) {
    const hit = JSON.parse(assent("pending", "--json")).find((r) => r.message === message);
    if (hit) return hit.session_id;
    await sleep(50);
  }
  throw new Error(`request "${message}" never showed up in assent pending`);
}

function httpClient(name, bearer) {
  const headers = bearer ? { Authorization: `Bearer ${bearer}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  return { client: new Client({ name, version: "1.0.0" }), transport };
}

const { client, transport } = httpClient("sdk-http-flows", key);
await client.connect(transport);
ok(client.getServerVersion()?.name === "assent" && typeof transport.sessionId === "string",
  `initialize over HTTP: the server says it is assent and issues a session (${transport.sessionId?.slice(0, 8)}...)`);
const tools = await client.listTools();
ok(tools.tools.length === 7, "tools/list over HTTP names the four tools and the three QA tools");

const call = (args, opts = {}) =>
  client.callTool({ name: "request_feedback", arguments: args }, undefined, { timeout: 60000, ...opts });

// approve, with a subject and an audience the key allows
const content = Buffer.from("http plan bytes\n").toString("base64");
writeFileSync(`${state}/http-plan.bin`, "http plan bytes\n");
let p = call({ type: "approval", message: "HTTP: apply plan?", audience: "tf-prod", subject: { name: "plan", content } });
let sid = await pendingId("HTTP: apply plan?");
const shown = JSON.parse(assent("show", sid, "--json"));
ok(shown.requester?.agent === "ci-agent", "the reviewer sees the requester as the agent its key names");
assent("approve", sid);
let sc = (await p).structuredContent;
ok(sc?.approved === true && sc.session_id === sid && sc.approval_token, "approve over HTTP: approved, with a token");
writeFileSync(`${state}/http-approve.token`, sc.approval_token);

// reject, input, selection
p = call({ type: "approval", message: "HTTP: drop it?" });
assent("reject", await pendingId("HTTP: drop it?"), "-m", "no");
sc = (await p).structuredContent;
ok(sc?.approved === false && sc.status === "rejected" && sc.response === "no", "reject over HTTP");
p = call({ type: "input", message: "HTTP: which branch?", default: "main" });
assent("answer", await pendingId("HTTP: which branch?"), "");
sc = (await p).structuredContent;
ok(sc?.status === "answered" && sc.response === "main", "input over HTTP: an empty answer takes the default");
p = call({ type: "selection", message: "HTTP: pick", options: ["a", "b"] });
assent("select", await pendingId("HTTP: pick"), "2");
sc = (await p).structuredContent;
ok(sc?.status === "selected" && sc.response === "b", "selection over HTTP");

// timeout
sc = (await call({ type: "approval", message: "HTTP: nobody answers", timeout_override: 1 })).structuredContent;
ok(sc?.status === "timeout" && sc.error === "timeout" && sc.approved === false, "timeout over HTTP");

// non-blocking, then get_feedback
sc = (await call({ type: "approval", message: "HTTP: later", wait: false })).structuredContent;
const later = sc?.session_id;
ok(sc?.status === "pending" && later, "wait=false over HTTP returns at once");
const mine = (await client.callTool({ name: "list_pending_feedback", arguments: {} })).structuredContent;
ok(mine?.requests?.some((r) => r.session_id === later), "list_pending_feedback over HTTP shows it");
assent("approve", later);
sc = (await client.callTool({ name: "get_feedback", arguments: { session_id: later, wait_seconds: 5 } })).structuredContent;
ok(sc?.approved === true && sc.approval_token, "get_feedback over HTTP collects the approval");

// cancel
const ac = new AbortController();
p = call({ type: "approval", message: "HTTP: cancel me" }, { signal: ac.signal });
sid = await pendingId("HTTP: cancel me");
ac.abort();
await p.catch(() => {});
let gone = false;
for (let i = 0; i < 60 && !gone; i++) {
  gone = !JSON.parse(assent("pending", "--json")).some((r) => r.session_id === sid);
  if (!gone) await sleep(50);
}
ok(gone, "cancel over HTTP: an aborted call leaves the queue");

// a long wait: progress notifications on the SSE stream, then the answer
const seen = [];
p = call({ type: "approval", message: "HTTP: slow reviewer" },
  { onprogress: (pr) => seen.push(pr), resetTimeoutOnProgress: true });
sid = await pendingId("HTTP: slow reviewer");
await sleep(11500);
assent("approve", sid);
sc = (await p).structuredContent;
ok(seen.length >= 1 && sc?.approved === true, `a long wait over SSE: ${seen.length} progress notifications, then the answer`);

// an audience the key does not allow
let res = await call({ type: "approval", message: "HTTP: prod db", audience: "db-prod" });
ok(res.isError === true && /audience/.test(res.content?.[0]?.text ?? ""), "an audience the key does not allow is refused");

// stdio and HTTP agents share one queue
const stdio = new Client({ name: "stdio-mix", version: "1" });
await stdio.connect(new StdioClientTransport({ command: `${build}/assentd`, args: ["--stdio", "--state", state],
  env: { ...process.env }, stderr: "inherit" }));
const ps = stdio.callTool({ name: "request_feedback", arguments: { type: "approval", message: "mix: stdio" } },
  undefined, { timeout: 60000 });
const ph = call({ type: "approval", message: "mix: http" });
const a = await pendingId("mix: stdio"), b = await pendingId("mix: http");
const both = JSON.parse(assent("pending", "--json"));
ok(both.some((r) => r.session_id === a && r.requester?.uid !== undefined) &&
   both.some((r) => r.session_id === b && r.requester?.agent === "ci-agent"),
   "a stdio agent and an HTTP agent wait in one queue");
assent("approve", a);
assent("reject", b, "-m", "not you");
const [rs, rh] = [(await ps).structuredContent, (await ph).structuredContent];
ok(rs?.approved === true && rs.session_id === a && rh?.approved === false && rh.session_id === b,
  "each gets its own answer");
await stdio.close();

// the session ends with DELETE
await transport.terminateSession();
const r = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json",
  Accept: "application/json, text/event-stream", Authorization: `Bearer ${key}`, "Mcp-Session-Id": transport.sessionId ?? "0".repeat(32) },
  body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }) });
ok(r.status === 404, `after DELETE the session is gone (${r.status})`);
await client.close();

// refusals
async function refusal(bearer) {
  const c = httpClient("refused", bearer);
  try { await c.client.connect(c.transport); await c.client.close(); return null; } catch (e) { return String(e); }
}
let e = await refusal(null);
ok(e && /401|API key/.test(e), `no bearer: refused (401) (${e})`);
e = await refusal("ak_not-a-real-key-000000000000000000000000000000");
ok(e && /401|invalid/.test(e), "a wrong bearer: refused (401)");
e = await refusal(removedKey);
ok(e && /401|invalid|revoked/.test(e), "a removed agent's key: refused (401)");
const fo = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json",
  Authorization: `Bearer ${key}`, Origin: "https://evil.example" },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) });
ok(fo.status === 403, `a foreign Origin: refused (${fo.status})`);
const nb = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json", Accept: "application/json" },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {} } }) });
ok(nb.status === 401 && /Bearer/.test(nb.headers.get("www-authenticate") ?? ""), "401 comes with WWW-Authenticate: Bearer");

console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
